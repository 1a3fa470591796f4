"""The reference shim library's C++ unit tests, built against the installed library.

shims/tests is configured with the installed ``libaoti_shim.so`` and headers, so the
binary under test is the one the wheel ships. Each group runs as its own process;
the harness prints ``summary: passed=P failed=F skipped=S`` last.
On a machine with a GPU, ``aoti_shim_tests cuda`` from the same build folder runs the CUDA group.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from cmake_support import clean_env, tool

REPO = Path(__file__).resolve().parents[1]
SHIM_TESTS = REPO / "shims" / "tests"
SUMMARY = re.compile(r"^summary: passed=(\d+) failed=(\d+) skipped=(\d+)$", re.MULTILINE)


@dataclass(frozen=True)
class GroupResult:
    returncode: int
    passed: int
    failed: int
    skipped: int
    output: str


@pytest.fixture(scope="module")
def shim_test_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from aoti_shim.paths import shim_library

    library = shim_library()
    include = library.parent.parent / "include"
    build = tmp_path_factory.mktemp("shim-tests")
    env = clean_env()
    configure = subprocess.run(
        [
            tool("cmake"),
            "-S",
            str(SHIM_TESTS),
            "-B",
            str(build),
            "-G",
            "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={tool('ninja')}",
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DAOTI_SHIM_LIBRARY={library}",
            f"-DAOTI_SHIM_INCLUDE_DIR={include}",
            f"-DPython_EXECUTABLE={sys.executable}",  # its nvidia wheels give the CUDA tests cudart
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert configure.returncode == 0, f"configure failed:\n{configure.stdout}\n{configure.stderr}"
    built = subprocess.run(
        [tool("cmake"), "--build", str(build), "-j2"], capture_output=True, text=True, env=env, check=False
    )
    assert built.returncode == 0, f"build failed:\n{built.stdout}\n{built.stderr}"
    return build / "aoti_shim_tests"


def run_group(binary: Path, group: str) -> GroupResult:
    done = subprocess.run([str(binary), group], capture_output=True, text=True, timeout=120, check=False)
    match = SUMMARY.search(done.stdout)
    assert match is not None, f"no summary line (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    passed, failed, skipped = (int(value) for value in match.groups())
    return GroupResult(done.returncode, passed, failed, skipped, done.stdout + done.stderr)


# The fewest tests each group must run: a test that stops registering fails here.
@pytest.mark.parametrize(("group", "expected"), [("core", 13), ("copy", 7), ("ops", 9), ("streams", 6)])
def test_cpu_group(shim_test_binary: Path, group: str, expected: int) -> None:
    result = run_group(shim_test_binary, group)
    assert result.returncode == 0 and result.failed == 0, result.output
    assert result.passed == expected, result.output
    assert result.skipped == 0, result.output


def test_cuda_group(shim_test_binary: Path) -> None:
    result = run_group(shim_test_binary, "cuda")
    assert result.failed == 0 and result.returncode == 0, result.output
    if result.passed == 0:
        assert result.skipped == 8, result.output
        pytest.skip("no CUDA device: the CUDA group runs on a machine with a GPU (docs/gpu/run_h200.sh)")
    assert result.passed == 8, result.output


def test_unknown_group_runs_nothing(shim_test_binary: Path) -> None:
    # The summary parser and group filter are what the tests above rely on.
    result = run_group(shim_test_binary, "no-such-group")
    assert (result.returncode, result.passed, result.failed, result.skipped) == (0, 0, 0, 0)
