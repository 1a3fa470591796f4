"""One answer to "where is torch?": the checker, the build backend, the rename header, the
smoke's source route, `aoti-shim --torch-include-dir` and CMake's aoti_shim_add_model find the
same torch, whether it is the installed one, one named by $AOTI_SHIM_TORCH, or one in a
search path; a bad $AOTI_SHIM_TORCH is one line and exit 1 everywhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aoti_shim.errors import InputError, UsageError
from aoti_shim.torch_location import SHIM_HEADER, TORCH_ENV_VAR, TorchLocation, locate
from cli_support import cli
from cmake_support import REPO, log
from torch_support import torch_lib

FAKE_VERSION = "9.9.9+fake"
FAKE_NAME = "aoti_torch_only_the_fake_torch_declares"
MLP_CPU = REPO / "fixtures" / "aoti_packages" / "mlp_cpu"


def _fake_site(root: Path, library: Path | None = None) -> Path:
    """``<root>/site/torch/{lib,include/...shim.h,version.py}``: a torch for every caller."""
    package = root / "site" / "torch"
    (package / "lib").mkdir(parents=True)
    if library is not None:  # a library with a dynamic symbol table, for the checker
        shutil.copy(library, package / "lib" / "libfake_torch.so")
    shim = package / "include" / SHIM_HEADER
    shim.parent.mkdir(parents=True)
    shim.write_text(f"AOTITorchError {FAKE_NAME}(int);\n")
    (package / "version.py").write_text(f"__version__ = '{FAKE_VERSION}'\n")
    return root / "site"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != TORCH_ENV_VAR and not k.startswith("AOTI_SHIM_TORCH")}
    return {**env, **extra}


def _cli(*args: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return cli(*args, cwd=cwd, env=_env(**extra), timeout=120)


def _rename_header_sees(tmp_path: Path, **extra: str) -> str:
    """What `aoti-shim rename-header` says it read torch's names from (it names the version)."""
    out = tmp_path / "rename" / "aoti_shim_rename.h"
    done = _cli("rename-header", "--output", str(out), cwd=tmp_path, **extra)
    assert done.returncode == 0, done.stderr
    return done.stderr + out.read_text()


def _source_route_include() -> str:
    from aoti_shim.smoke.source_route import configure_command

    defines = [
        a
        for a in configure_command("cmake", Path("src"), Path("build"))
        if a.startswith("-DAOTI_SHIM_TORCH_INCLUDE_DIR=")
    ]
    assert len(defines) == 1, defines
    return defines[0].split("=", 1)[1]


def test_every_caller_finds_the_installed_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aoti_shim.checks.references.reference import find_torch
    from aoti_shim.plugin import target_env

    monkeypatch.delenv(TORCH_ENV_VAR, raising=False)
    found = locate()
    assert found is not None and found.how == f"installed torch of {sys.executable}"
    # Judged independently: the test helper's own find_spec, and importlib.metadata.
    from importlib.metadata import version

    assert found.lib == torch_lib() and found.version == version("torch") == "2.13.0+cpu"
    assert (found.include / SHIM_HEADER).is_file()
    assert find_torch() == found
    assert target_env.find_torch({}).site.resolve() == found.site.resolve()  # the probed interpreter is this one
    assert f"torch {found.version}'s headers" in _rename_header_sees(tmp_path)
    assert _source_route_include() == str(found.include)
    asked = _cli("--torch-include-dir", cwd=tmp_path)
    assert asked.returncode == 0 and asked.stdout == f"{found.include}\n" and asked.stderr == ""


@pytest.mark.parametrize("form", ["site", "package", "lib"])
def test_every_caller_follows_aoti_shim_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checker_libs, form: str
) -> None:
    from aoti_shim.checks.check.run import CheckSettings, run_check
    from aoti_shim.checks.references.reference import find_torch
    from aoti_shim.plugin import target_env

    site = _fake_site(tmp_path, checker_libs["unprefixed_shim"])
    named = {"site": site, "package": site / "torch", "lib": site / "torch" / "lib"}[form]
    monkeypatch.setenv(TORCH_ENV_VAR, str(named))
    expected = TorchLocation(site, "$AOTI_SHIM_TORCH")
    assert locate() == expected and expected.version == FAKE_VERSION
    assert find_torch() == expected
    assert target_env.find_torch() == expected
    report = run_check(CheckSettings(shims=(str(checker_libs["clean_shim"]),), against=("torch",)))
    (source,) = report.against
    assert (source.path, source.found_by, source.torch_version) == (str(expected.lib), "$AOTI_SHIM_TORCH", FAKE_VERSION)
    seen = _rename_header_sees(tmp_path, **{TORCH_ENV_VAR: str(named)})
    assert f"torch {FAKE_VERSION}'s headers" in seen and FAKE_NAME in seen
    assert _source_route_include() == str(expected.include)
    asked = _cli("--torch-include-dir", cwd=tmp_path, **{TORCH_ENV_VAR: str(named)})
    assert asked.returncode == 0 and asked.stdout == f"{expected.include}\n", asked.stderr


def test_a_search_path_comes_after_aoti_shim_torch_and_before_the_installed_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checker_libs
) -> None:
    from aoti_shim.checks.check.run import CheckSettings, run_check
    from aoti_shim.checks.references.reference import find_torch

    site = _fake_site(tmp_path / "a", checker_libs["unprefixed_shim"])
    monkeypatch.delenv(TORCH_ENV_VAR, raising=False)
    expected = TorchLocation(site, "search path")
    assert locate([tmp_path / "nothing", site]) == expected
    assert find_torch([str(tmp_path / "nothing"), str(site)]) == expected
    report = run_check(
        CheckSettings(shims=(str(checker_libs["clean_shim"]),), against=("torch",), torch_search_paths=(str(site),))
    )
    assert [(s.path, s.found_by, s.torch_version) for s in report.against] == [
        (str(expected.lib), "search path", FAKE_VERSION)
    ]
    # $AOTI_SHIM_TORCH names one torch: a search path does not override it.
    other = _fake_site(tmp_path / "b")
    monkeypatch.setenv(TORCH_ENV_VAR, str(other))
    assert find_torch([str(site)]) == TorchLocation(other, "$AOTI_SHIM_TORCH")


def _bad_values(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("not a folder\n")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    return {
        "a folder with no torch": (tmp_path / "empty", "no torch/lib there;"),
        "a file": (tmp_path / "file", "no torch/lib there (a file, not a folder)"),
        "a dangling link": (
            tmp_path / "dangling",
            f"no torch/lib there (a dangling symbolic link to {tmp_path / 'gone'})",
        ),
        "nothing": (tmp_path / "gone", "no torch/lib there (no such folder)"),
    }


def test_a_bad_aoti_shim_torch_is_one_line_and_exit_1_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aoti_shim.checks.references.reference import find_torch
    from aoti_shim.plugin import target_env

    for what, (value, says) in _bad_values(tmp_path).items():
        asked = _cli("--torch-include-dir", cwd=tmp_path, **{TORCH_ENV_VAR: str(value)})
        assert asked.returncode == 1, what
        assert asked.stdout == "" and asked.stderr.count("\n") == 1, (what, asked.stderr)
        assert asked.stderr.startswith(f"aoti-shim: error: $AOTI_SHIM_TORCH={value}: {says}"), (what, asked.stderr)
        header = _cli(
            "rename-header", "--output", str(tmp_path / "h" / "x.h"), cwd=tmp_path, **{TORCH_ENV_VAR: str(value)}
        )
        assert header.returncode == 1 and says in header.stderr and "Traceback" not in header.stderr, what
        assert not (tmp_path / "h").exists()  # nothing half-written
        monkeypatch.setenv(TORCH_ENV_VAR, str(value))
        with pytest.raises(InputError, match="no torch/lib there"):
            find_torch()
        with pytest.raises(UsageError, match="no torch/lib there"):  # inside a build, a configuration error
            target_env.find_torch()


def test_torch_include_is_refused_when_torch_has_no_include_folder(tmp_path: Path) -> None:
    site = _fake_site(tmp_path)
    shutil.rmtree(site / "torch" / "include")
    asked = _cli("--torch-include-dir", cwd=tmp_path, **{TORCH_ENV_VAR: str(site)})
    assert asked.returncode == 1 and asked.stdout == ""
    assert (
        asked.stderr
        == f"aoti-shim: error: torch at {site / 'torch'} (found by $AOTI_SHIM_TORCH) has no include/ folder\n"
    )


def test_top_level_help_names_torch_include_dir(tmp_path: Path) -> None:
    shown = _cli("--help", cwd=tmp_path)
    assert shown.returncode == 0 and "--torch-include-dir" in shown.stdout and "--cmake-dir" in shown.stdout


# --- CMake asks the same implementation ---------------------------------------------------


def _model_project(cmake_project, tmp_path: Path, **env: str):
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(p LANGUAGES CXX)\nfind_package(AotiShim CONFIG REQUIRED)\n"
        f'aoti_shim_add_model(blob PACKAGE "{MLP_CPU.as_posix()}" PREFIX myrt_)\n'
    )
    build = tmp_path / "build"
    shutil.rmtree(build, ignore_errors=True)
    return cmake_project(source, build=build, env=env)


def _cached_include(build: Path) -> str:
    for line in (build / "CMakeCache.txt").read_text().splitlines():
        if line.startswith("AOTI_SHIM_TORCH_INCLUDE_DIR:"):
            return line.split("=", 1)[1]
    raise AssertionError("AOTI_SHIM_TORCH_INCLUDE_DIR is not in the cache")


def test_cmake_finds_the_include_python_finds(cmake_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TORCH_ENV_VAR, raising=False)
    installed = locate()
    assert installed is not None
    project = _model_project(cmake_project, tmp_path)
    configured = project.configure()
    assert configured.returncode == 0, log(configured)
    assert _cached_include(project.build) == str(installed.include)
    # A torch named by $AOTI_SHIM_TORCH (the backend sets it for an isolated build) is the one CMake compiles against.
    fake = _fake_site(tmp_path / "fake")
    project = _model_project(cmake_project, tmp_path, **{TORCH_ENV_VAR: str(fake / "torch")})
    configured = project.configure()
    assert configured.returncode == 0, log(configured)
    assert _cached_include(project.build) == str(fake / "torch" / "include")


def test_cmake_says_which_function_found_no_torch_and_the_override_wins(cmake_project, tmp_path: Path) -> None:
    bad = tmp_path / "no-torch"
    bad.mkdir()
    project = _model_project(cmake_project, tmp_path, **{TORCH_ENV_VAR: str(bad)})
    configured = project.configure()
    message = " ".join(configured.stderr.split())
    assert configured.returncode != 0
    assert "aoti_shim_add_model: torch's headers not found" in message, log(configured)
    assert f"$AOTI_SHIM_TORCH={bad}: no torch/lib there" in message and "-DAOTI_SHIM_TORCH_INCLUDE_DIR=" in message
    # AOTI_SHIM_TORCH_INCLUDE_DIR (the environment variable, as the cache entry) is taken as given: nothing is asked.
    fake = _fake_site(tmp_path / "fake")
    include = str(fake / "torch" / "include")
    project = _model_project(
        cmake_project, tmp_path, **{TORCH_ENV_VAR: str(bad), "AOTI_SHIM_TORCH_INCLUDE_DIR": include}
    )
    configured = project.configure()
    assert configured.returncode == 0, log(configured)
    assert _cached_include(project.build) == include
