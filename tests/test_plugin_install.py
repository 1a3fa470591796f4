"""`pip install` as the gate: real installs of fixture projects through aoti_shim.build.

Each test builds a tiny C shim project (fixtures/packages/plugin_*) with CMake, through
pip, from a local wheelhouse, into a fresh venv; about two seconds each.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
from pathlib import Path

import pytest

from plugin_support import TargetEnv, assemble_wheelhouse, make_target_env
from shims_support import exported_shim_names, imported_shim_names
from torch_support import torch_package


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return assemble_wheelhouse(tmp_path_factory.mktemp("wheelhouse"))


@pytest.fixture
def target(tmp_path: Path, wheelhouse: Path) -> TargetEnv:
    return make_target_env(tmp_path / "target", wheelhouse)


def _output(result) -> str:
    return result.stdout + result.stderr


def _installed_library(target: TargetEnv, package: str, library: str) -> Path:
    path = target.site / package / library
    assert path.is_file(), f"{path} is not installed"
    return path


def _call_shim(library: Path, name: str) -> int:
    lib = ctypes.CDLL(str(library), mode=os.RTLD_LOCAL)
    func = getattr(lib, name)
    func.restype = ctypes.c_int32
    return int(func())


def test_clean_project_installs_isolated_and_exports_only_prefixed_names(
    plugin_project, target: TargetEnv, tmp_path: Path
) -> None:
    project = plugin_project("plugin_clean")
    result = target.pip("install", "-v", str(project))
    out = _output(result)
    assert result.returncode == 0, out
    assert "aoti-shim: prefix: pclean_ (from [tool.aoti-shim] prefix)" in out
    # In an isolated build torch is not importable; the gate found the target env's.
    assert "against: torch at" in out and "found via the interpreter pip installs for" in out
    assert "OK: 0 blocking" in out
    # Without pip -v none of that shows: the verdict stays in the project's build folder.
    verdict = (project / "build" / "aoti-shim-report.txt").read_text().splitlines()[-1]
    assert re.fullmatch(
        r"plugin_clean-0\.1\.0-\S+\.whl: passed the check of 1 shim library and \d+ models? against torch \S+", verdict
    ), verdict
    assert target.installed("plugin-clean")
    lib = _installed_library(target, "plugin_clean", "libpclean_shims.so")
    names = exported_shim_names(lib)
    assert names == {
        "pclean_aoti_torch_device_type_cpu",
        "pclean_aoti_torch_dtype_float32",
        "pclean_aoti_torch_empty_strided",
    }
    assert _call_shim(lib, "pclean_aoti_torch_dtype_float32") == 6
    # The backend got the prefix as a usage requirement: it is checked as a consumer and
    # calls the prefixed shim (found through its $ORIGIN rpath).
    assert "models and other shim-ABI consumers: plugin_clean/libpclean_backend.so" in out
    backend = _installed_library(target, "plugin_clean", "libpclean_backend.so")
    assert imported_shim_names(backend) == {"pclean_aoti_torch_dtype_float32"}
    assert _call_shim(backend, "pclean_backend_float32_code") == 6


def test_forgotten_prefix_fails_names_the_symbol_and_installs_nothing(
    plugin_project, target: TargetEnv, tmp_path: Path
) -> None:
    project = plugin_project("plugin_forgot")
    result = target.pip("install", str(project))
    out = _output(result)
    assert result.returncode != 0
    assert "COLLISION" in out and "aoti_torch_empty_strided" in out and "libtorch_cpu.so" in out
    # One line for the library that missed the rename header, naming the header and the prefix.
    assert "UNPREFIXED_EXPORT" in out and "without the prefix 'pforgot_'" in out and "<aoti_shim_rename.h>" in out
    assert "plugin_forgot/libpforgot_extra.so" in out
    assert "aoti-shim: error: 2 blocking finding(s)" in out and "nothing is installed" in out
    assert "Traceback" not in out
    assert not target.installed("plugin-forgot")
    assert not (target.site / "plugin_forgot").exists()


def test_prefix_from_config_setting_reaches_the_library(plugin_project, target: TargetEnv, tmp_path: Path) -> None:
    project = plugin_project("plugin_clean")
    result = target.pip("install", "-v", "--no-build-isolation", "-C", "aoti-shim.prefix=viacs_", str(project))
    out = _output(result)
    assert result.returncode == 0, out
    assert "aoti-shim: prefix: viacs_ (from -C aoti-shim.prefix)" in out
    lib = _installed_library(target, "plugin_clean", "libpclean_shims.so")
    assert exported_shim_names(lib) == {
        "viacs_aoti_torch_device_type_cpu",
        "viacs_aoti_torch_dtype_float32",
        "viacs_aoti_torch_empty_strided",
    }


def test_prefix_from_environment_beats_config_setting(plugin_project, target: TargetEnv, tmp_path: Path) -> None:
    project = plugin_project("plugin_clean")
    result = target.pip(
        "install",
        "-v",
        "--no-build-isolation",
        "-C",
        "aoti-shim.prefix=viacs_",
        str(project),
        AOTI_SHIM_PREFIX="viaenv_",
    )
    out = _output(result)
    assert result.returncode == 0, out
    assert "aoti-shim: prefix: viaenv_ (from environment variable AOTI_SHIM_PREFIX)" in out
    lib = _installed_library(target, "plugin_clean", "libpclean_shims.so")
    names = exported_shim_names(lib)
    assert names and all(n.startswith("viaenv_aoti_torch_") for n in names), names


def test_cmake_args_override_is_reported_and_checked(plugin_project, target: TargetEnv, tmp_path: Path) -> None:
    project = plugin_project("plugin_clean")
    result = target.pip(
        "install",
        "-v",
        "--no-build-isolation",
        "-C",
        "aoti-shim.prefix=viacs_",
        str(project),
        CMAKE_ARGS="-DAOTI_SHIM_SYMBOL_PREFIX=viaargs_",
    )
    out = _output(result)
    assert result.returncode == 0, out
    assert "warning: CMAKE_ARGS sets AOTI_SHIM_SYMBOL_PREFIX=viaargs_, overriding aoti-shim.prefix=viacs_" in out
    assert "aoti-shim: prefix: viaargs_ (from CMAKE_ARGS)" in out
    names = exported_shim_names(_installed_library(target, "plugin_clean", "libpclean_shims.so"))
    assert names and all(n.startswith("viaargs_aoti_torch_") for n in names), names


def test_editable_redirect_checks_the_editable_wheel(plugin_project, target: TargetEnv, tmp_path: Path) -> None:
    clean = plugin_project("plugin_clean")
    result = target.pip("install", "-v", "--no-build-isolation", "-e", str(clean))
    out = _output(result)
    assert result.returncode == 0, out
    assert "checking plugin_clean-0.1.0-" in out and "shims: plugin_clean/libpclean_shims.so" in out
    assert "OK: 0 blocking" in out
    assert target.installed("plugin-clean")

    forgot = plugin_project("plugin_forgot")
    result = target.pip("install", "--no-build-isolation", "-e", str(forgot))
    out = _output(result)
    assert result.returncode != 0
    assert "aoti_torch_empty_strided" in out and "Traceback" not in out
    assert not target.installed("plugin-forgot")


def test_editable_inplace_is_left_to_cmake_and_says_so(plugin_project, target: TargetEnv, tmp_path: Path) -> None:
    project = plugin_project("plugin_clean")
    result = target.pip(
        "install",
        "-v",
        "--no-build-isolation",
        "-C",
        "editable.mode=inplace",
        "-C",
        "cmake.define.PCLEAN_CMAKE_CHECK=ON",
        "-e",
        str(project),
    )
    out = _output(result)
    assert result.returncode == 0, out
    assert "aoti-shim check: pclean_shims" in out and "OK: 0 blocking" in out  # CMake's POST_BUILD check
    assert "editable.mode = inplace" in out and "this build runs aoti_shim_check() in CMake" in out
    assert "checking plugin_clean" not in out  # the backend does not claim a check of its own
    assert target.installed("plugin-clean")

    # With aoti_shim_check() on, CMake's build fails on the forgotten prefix: nothing installs.
    forgot = plugin_project("plugin_forgot")
    result = target.pip(
        "install",
        "--no-build-isolation",
        "-C",
        "editable.mode=inplace",
        "-C",
        "cmake.define.PFORGOT_CMAKE_CHECK=ON",
        "-e",
        str(forgot),
    )
    out = _output(result)
    assert result.returncode != 0
    assert "aoti-shim check: pforgot_extra" in out and "CMake build failed" in out
    assert "COLLISION" in out and "aoti_torch_empty_strided" in out
    assert not target.installed("plugin-forgot")


def test_suppressed_export_installs_and_reports_the_suppression(
    plugin_project, target: TargetEnv, tmp_path: Path
) -> None:
    project = plugin_project("plugin_suppressed")
    result = target.pip("install", "-v", "--no-build-isolation", str(project))
    out = _output(result)
    assert result.returncode == 0, out
    assert "suppressed: COLLISION sdot_ in plugin_suppressed/libpsup_shims.so (reference BLAS sdot_" in out
    assert "OK: 0 blocking, 0 warning(s), 1 suppressed" in out
    lib = _installed_library(target, "plugin_suppressed", "libpsup_shims.so")
    assert exported_shim_names(lib) == {"psup_aoti_torch_device_type_cpu"}


def test_isolated_build_without_torch_names_the_fix(plugin_project, tmp_path: Path, wheelhouse: Path) -> None:
    base_site = Path(sys.base_prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    if (base_site / "torch").exists():
        pytest.skip("the base interpreter has torch; no torch-less target to make")
    import pip

    # A target env that has pip (for the isolated build) and no torch.
    pip_only = tmp_path / "pip-only"
    pip_only.mkdir()
    (pip_only / "pip").symlink_to(Path(pip.__file__).resolve().parent)
    target = make_target_env(tmp_path / "target", wheelhouse, sites=(str(pip_only),))
    project = plugin_project("plugin_clean")

    result = target.pip("install", str(project))
    out = _output(result)
    assert result.returncode != 0
    assert 'against = "torch" but no torch installation was found' in out
    assert "AOTI_SHIM_TORCH" in out and "torch-2.13.0+cpu" in out and "Traceback" not in out
    assert not target.installed("plugin-clean")

    # The fix the message names works.
    torch_site = torch_package().parent
    result = target.pip("install", "-v", str(project), AOTI_SHIM_TORCH=str(torch_site))
    out = _output(result)
    assert result.returncode == 0, out
    assert "found via $AOTI_SHIM_TORCH" in out
    assert target.installed("plugin-clean")
