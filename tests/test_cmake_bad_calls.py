"""Wrong calls into the AotiShim package stop the configure with the function's FATAL_ERROR."""

from __future__ import annotations

from pathlib import Path

import pytest

from cmake_support import PACKAGES, log
from cmake_support import one_line as _one_line

SOURCE = PACKAGES / "cmake_bad_calls"

# case -> what the error must say (it always starts with the function's name).
CASES = {
    "prefix_unknown_target": "aoti_shim_prefix: 'no_such_target' is not a target",
    "prefix_empty": "aoti_shim_prefix: empty PREFIX for 'shared_lib'",
    "prefix_not_identifier": "aoti_shim_prefix: prefix '9lives-' for 'shared_lib' is not a C identifier prefix",
    "prefix_unknown_argument": "aoti_shim_prefix: unknown arguments: PUBLICLY",
    "prefix_libtorch_own": "aoti_shim_prefix: prefix 'aoti_torch_mine_' for 'shared_lib' starts with 'aoti_torch_'",
    "prefix_newline": "aoti_shim_prefix: prefix 'myrt_ ' for 'shared_lib' is not a C identifier prefix",
    "prefix_missing": "aoti_shim_prefix: no prefix for 'shared_lib'",
    "prefix_conflict": "aoti_shim_prefix: 'shared_lib' already has prefix 'myrt_', not 'other_'",
    "link_whole_not_static": "aoti_shim_link_whole: 'shared_lib' is a SHARED_LIBRARY, not a static library",
    "link_whole_unknown_target": "aoti_shim_link_whole: 'no_such_target' is not a target",
    "link_whole_extra_argument": "aoti_shim_link_whole: expected (<target> <static-lib>)",
    "add_model_no_package": "aoti_shim_add_model: PACKAGE <dir> is required for 'blob'",
    "add_model_missing_package": "aoti_shim_add_model: package",
    "add_model_not_a_package": "aoti_shim_add_model: no *.wrapper.cpp under",
    "add_model_unknown_argument": "aoti_shim_add_model: unknown arguments: SOURCES",
    "add_model_empty_prefix": "aoti_shim_add_model: empty PREFIX for 'blob'",
    "check_unknown_target": "aoti_shim_check: 'no_such_target' is not a target",
    "check_not_shared": "aoti_shim_check: 'static_lib' is a STATIC_LIBRARY",
    "check_bad_against": "aoti_shim_check: AGAINST '/no/such/libtorch.so' is neither 'torch', an existing path, nor a "
        "shipped snapshot",
    "check_unknown_snapshot": "aoti_shim_check: AGAINST 'torch-2.14.1' is neither 'torch', an existing path, nor a "
        "shipped "
    "snapshot (shipped: torch-2.11.0+cu130, torch-2.13.0+cpu, torch-2.14.1+cu130)",
    "check_unknown_argument": "aoti_shim_check: unknown arguments: AGAINTS",
    "check_model_not_target": "aoti_shim_check: MODELS 'no_such_blob' is not a target (yet): define it first",
    "check_prefix_mismatch": "aoti_shim_check: model 'blob' is built with prefix 'other_', 'shared_lib' with 'myrt_'",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_call_gives_the_functions_fatal_error(cmake_project, case: str, tmp_path: Path) -> None:
    project = cmake_project(SOURCE, {"FIXTURE_CASE": case})
    configured = project.configure()
    assert configured.returncode != 0, log(configured)
    assert "CMake Error" in configured.stderr
    assert CASES[case] in _one_line(configured.stderr), configured.stderr


def test_a_good_configure_of_the_same_project_passes_the_calls(cmake_project, tmp_path: Path) -> None:
    """The fixture itself is sound: with no bad call, only generation (no languages) is left to fail."""
    project = cmake_project(SOURCE, {"FIXTURE_CASE": "none"})
    configured = project.configure()
    assert "-- Configuring done" in configured.stdout, log(configured)
    assert "aoti_shim_" not in configured.stderr


def test_against_takes_the_shipped_snapshots_by_name(cmake_project, tmp_path: Path) -> None:
    # As `check --against torch-2.14.1+cu130` and the backend's against take them.
    project = cmake_project(SOURCE, {"FIXTURE_CASE": "check_snapshot_names"})
    configured = project.configure()
    assert "-- Configuring done" in configured.stdout, log(configured)
    assert "aoti_shim_check" not in configured.stderr, configured.stderr


def test_a_prefix_without_its_underscore_is_warned_of(cmake_project, tmp_path: Path) -> None:
    project = cmake_project(SOURCE, {"FIXTURE_CASE": "prefix_without_separator"})
    configured = project.configure()
    assert "-- Configuring done" in configured.stdout, log(configured)
    assert "CMake Warning" in configured.stderr
    assert (
        "aoti_shim_prefix: prefix 'myrt' for 'shared_lib' does not end in '_': shim names become myrtaoti_torch_x; "
        "did you mean 'myrt_'?"
    ) in _one_line(configured.stderr)


def test_a_newer_version_request_is_refused(cmake_project, tmp_path: Path) -> None:
    project = tmp_path / "src"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(v LANGUAGES NONE)\nfind_package(AotiShim 0.2 CONFIG REQUIRED)\n"
    )
    configured = cmake_project(project).configure()
    assert configured.returncode != 0
    assert "compatible with requested version" in _one_line(configured.stderr)


def test_the_version_file_matches_the_python_package() -> None:
    import re

    import aoti_shim
    from aoti_shim.paths import cmake_dir

    text = (cmake_dir() / "AotiShimConfigVersion.cmake").read_text()
    match = re.search(r'set\(PACKAGE_VERSION "([^"]+)"\)', text)
    assert match is not None
    assert match.group(1) == aoti_shim.__version__
