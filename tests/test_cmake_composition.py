"""The AotiShim package as small functions: inputs as arguments, one minimum CMake
version, the checker's prefix rule, and a package refused when its sources call a
shim function the rename header does not rename."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from cmake_support import REPO, CMakeProject, log
from cmake_support import one_line as _one_line

CONFIG = REPO / "cmake" / "AotiShimConfig.cmake"
MLP_CPU = REPO / "fixtures" / "aoti_packages" / "mlp_cpu"


def _functions(text: str) -> dict[str, list[str]]:
    """Each function's name and body lines."""
    found: dict[str, list[str]] = {}
    for match in re.finditer(r"^function\((\w+)[^)]*\)\n(.*?)^endfunction\(\)", text, re.M | re.S):
        found[match.group(1)] = match.group(2).splitlines()
    return found


def test_add_model_is_composed_of_small_functions() -> None:
    functions = _functions(CONFIG.read_text())
    assert len(functions["aoti_shim_add_model"]) <= 30, "aoti_shim_add_model should only call its steps"
    long = {name: len(body) for name, body in functions.items() if len(body) > 60}
    assert long == {}


def test_helpers_take_their_inputs_as_arguments() -> None:
    """A helper reads no ARG_* variable of its caller: cmake_parse_arguments' results are
    passed in (only the public functions, which parse, may read them)."""
    for name, body in _functions(CONFIG.read_text()).items():
        if name.startswith("_"):
            uses = [line for line in body if re.search(r"\$\{ARG_", line)]
            assert uses == [], (name, uses)


def test_one_minimum_cmake_version() -> None:
    minimum = re.search(r"if\(CMAKE_VERSION VERSION_LESS (\d+\.\d+)\)", CONFIG.read_text()).group(1)
    ours = [REPO / "CMakeLists.txt", REPO / "shims" / "CMakeLists.txt", REPO / "shims" / "tests" / "CMakeLists.txt"]
    for path in ours:
        required = re.search(r"cmake_minimum_required\(VERSION (\d+\.\d+)", path.read_text()).group(1)
        assert required == minimum, path
    from aoti_shim.smoke.source_route import _PROJECT

    assert f"cmake_minimum_required(VERSION {minimum})" in _PROJECT


def _project(cmake_project, tmp_path: Path, body: str) -> CMakeProject:
    source = tmp_path / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(p LANGUAGES CXX)\nfind_package(AotiShim CONFIG REQUIRED)\n"
        + body
    )
    return cmake_project(source, build=tmp_path / "build")


def test_cmake_refuses_a_prefix_that_starts_like_torchs_names(cmake_project, tmp_path: Path) -> None:
    configured = _project(
        cmake_project, tmp_path, "add_library(s SHARED s.cpp)\naoti_shim_prefix(s PREFIX aoti_torch_x_)\n"
    ).configure()
    assert configured.returncode != 0
    assert "aoti_shim_prefix: prefix 'aoti_torch_x_' for 's' starts with 'aoti_torch_'" in _one_line(configured.stderr)


def test_a_package_calling_a_name_the_header_lacks_is_refused(cmake_project, tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    shutil.copytree(MLP_CPU, package)
    (wrapper,) = package.rglob("*.wrapper.cpp")
    with wrapper.open("a") as f:  # as a newer torch's wrapper would call a shim that is new to it
        f.write(
            "\nstatic void newer_torch() { aoti_torch_from_a_newer_torch(nullptr); aoti_torch_cpu_zz_new_op (0); }\n"
        )
    configured = _project(
        cmake_project, tmp_path, f'aoti_shim_add_model(blob PACKAGE "{package.as_posix()}" PREFIX myrt_)\n'
    ).configure()
    assert configured.returncode != 0, log(configured)
    message = _one_line(configured.stderr)
    assert "aoti_shim_add_model: 'blob' calls 2 shim function(s) that" in message, message
    assert "aoti_torch_cpu_zz_new_op, aoti_torch_from_a_newer_torch" in message


def test_the_recorded_packages_call_only_renamed_names(cmake_project, tmp_path: Path) -> None:
    for package in sorted((REPO / "fixtures" / "aoti_packages").iterdir()):
        if not package.is_dir():
            continue
        build = tmp_path / package.name
        build.mkdir()
        configured = _project(
            cmake_project, build, f'aoti_shim_add_model(blob PACKAGE "{package.as_posix()}" PREFIX myrt_)\n'
        ).configure()
        if "CUDA toolkit" in configured.stderr:
            pytest.skip("the CUDA package needs a CUDA toolkit to configure")
        assert "does not rename" not in configured.stderr, log(configured)
