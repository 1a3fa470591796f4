"""aoti_shim_prefix and aoti_shim_link_whole on a real shim library and its consumer.

The PUBLIC usage requirement lets a consumer of the shim header link and run; the
PRIVATE define reproduces upstream's bug (the consumer calls unprefixed names and
fails to link). Whole-archive linking keeps shims nothing in the library references.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cmake_support import FIXTURE_PREFIX, PACKAGES, CMakeProject, clean_env, log

SOURCE = PACKAGES / "cmake_prefix"
SHIM_NAMES = ("aoti_torch_dtype_float32", "aoti_torch_device_type_cpu")


def _project(tmp: Path, **defines: str) -> CMakeProject:
    return CMakeProject(SOURCE, tmp / "build", {"AOTI_SHIM_SYMBOL_PREFIX": FIXTURE_PREFIX, **defines})


Build = tuple[CMakeProject, subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def public_build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    project = _project(tmp_path_factory.mktemp("cmake-prefix-public"), FIXTURE_SCOPE="PUBLIC")
    configured = project.configure()
    assert configured.returncode == 0, log(configured)
    return project, configured, project.build_all()


def test_public_prefix_consumer_links_and_runs(public_build: Build) -> None:
    project, _, built = public_build
    assert built.returncode == 0, log(built)
    ran = subprocess.run([str(project.build / "consumer")], capture_output=True, text=True, check=False)
    assert ran.returncode == 0, log(ran)
    assert ran.stdout.strip() == "dtype_float32=6 device_type_cpu=0"


def test_configure_prints_the_effective_prefix_once(public_build: Build) -> None:
    _, configured, _ = public_build
    announcements = [line for line in configured.stdout.splitlines() if "AotiShim: symbol prefix" in line]
    assert announcements == [
        f"-- AotiShim: symbol prefix '{FIXTURE_PREFIX}' (aoti_torch_X -> {FIXTURE_PREFIX}aoti_torch_X)"
    ]


def test_shim_library_exports_only_prefixed_names(public_build: Build) -> None:
    from aoti_shim.checks import CheckSettings, render, run_check
    from aoti_shim.checks.elf.image import ElfImage

    project, _, built = public_build
    assert built.returncode == 0, log(built)
    library = project.build / "libfixture_shim.so"
    with ElfImage(library) as image:
        exports = set(image.exports())
    assert {f"{FIXTURE_PREFIX}{name}" for name in SHIM_NAMES} <= exports
    assert not [name for name in exports if name.startswith("aoti_torch_")]
    report = run_check(
        CheckSettings(shims=(str(library),), models=(), against=(), prefix=FIXTURE_PREFIX, suppressions=None)
    )
    assert report.exit_code(fail_on="blocking") == 0, render(report, "text")


def test_private_define_reproduces_the_upstream_link_failure(cmake_project) -> None:
    project = cmake_project(SOURCE, {"AOTI_SHIM_SYMBOL_PREFIX": FIXTURE_PREFIX, "FIXTURE_SCOPE": "PRIVATE"})
    built = project.configure_and_build()
    assert built.returncode != 0
    output = log(built)
    # The shim defines the prefixed names; the consumer, compiled without the define, asks for the plain ones.
    assert "undefined reference to `aoti_torch_dtype_float32'" in output
    assert "undefined reference to `aoti_torch_device_type_cpu'" in output
    assert (project.build / "libfixture_shim.so").exists()
    assert not (project.build / "consumer").exists()


def test_without_link_whole_the_unreferenced_shims_are_lost(cmake_project) -> None:
    from aoti_shim.checks.elf.image import ElfImage

    project = cmake_project(
        SOURCE, {"AOTI_SHIM_SYMBOL_PREFIX": FIXTURE_PREFIX, "FIXTURE_SCOPE": "PUBLIC", "FIXTURE_LINK_WHOLE": "OFF"}
    )
    built = project.configure_and_build()
    # The consumer cannot link either: the library it links has none of the shims.
    assert built.returncode != 0
    assert f"undefined reference to `{FIXTURE_PREFIX}aoti_torch_dtype_float32'" in log(built)
    with ElfImage(project.build / "libfixture_shim.so") as image:
        exports = set(image.exports())
    assert "fixture_shim_abi" in exports
    assert not [name for name in exports if "aoti_torch_" in name]


def test_cmake_dir_from_the_cli_finds_the_package(cmake_project, tmp_path: Path) -> None:
    """Plain CMake users: -DAotiShim_DIR=$(python -m aoti_shim --cmake-dir)."""
    asked = subprocess.run(
        [sys.executable, "-m", "aoti_shim", "--cmake-dir"],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=tmp_path,
        check=False,
    )
    assert asked.returncode == 0, log(asked)
    cmake_dir = Path(asked.stdout.strip())
    assert (cmake_dir / "AotiShimConfig.cmake").is_file()
    project = cmake_project(SOURCE, {"AOTI_SHIM_SYMBOL_PREFIX": FIXTURE_PREFIX}, aoti_shim_dir=cmake_dir)
    configured = project.configure()
    assert configured.returncode == 0, log(configured)
    # The build's one rename header, that package's header copied (no NAMES_FROM), is on the include path.
    assert f"-I{project.build}/aoti_shim_rename" in (project.build / "build.ninja").read_text()
    copied = project.build / "aoti_shim_rename" / "aoti_shim_rename.h"
    assert copied.read_bytes() == (cmake_dir / "include" / "aoti_shim_rename.h").read_bytes()
