"""The reference shim library's C++ unit tests, built against the installed library.

shims/tests is configured with the installed ``libaoti_shim.so`` and headers, so the
binary under test is the one the wheel ships. Each group runs as its own process;
the harness prints ``summary: passed=P failed=F skipped=S`` last.
On a machine with a GPU, ``aoti_shim_tests cuda`` from the same build folder runs the CUDA group.
"""

from __future__ import annotations

import os
import re
import shutil
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


def gpu_visible() -> bool:
    """Whether this machine has a GPU, asked of the driver's tools, not of the library under test."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and (visible == "" or visible.startswith("-")):
        return False
    smi = shutil.which("nvidia-smi")
    if smi is not None:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60, check=False)
        return listed.returncode == 0 and "GPU " in listed.stdout
    return any(re.fullmatch(r"nvidia[0-9]+", p.name) for p in Path("/dev").iterdir())


def run_group(binary: Path, group: str, expect_gpu: bool | None = None) -> GroupResult:
    # The harness fails any test whose skip decision (the library's device count) disagrees with this.
    expect = gpu_visible() if expect_gpu is None else expect_gpu
    env = {**os.environ, "AOTI_SHIM_TESTS_GPU": "1" if expect else "0"}
    done = subprocess.run([str(binary), group], capture_output=True, text=True, timeout=120, check=False, env=env)
    match = SUMMARY.search(done.stdout)
    assert match is not None, f"no summary line (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    passed, failed, skipped = (int(value) for value in match.groups())
    return GroupResult(done.returncode, passed, failed, skipped, done.stdout + done.stderr)


# The fewest tests each group must run: a test that stops registering fails here.
@pytest.mark.parametrize(("group", "expected"), [("core", 14), ("copy", 7), ("ops", 10), ("streams", 6)])
def test_cpu_group(shim_test_binary: Path, group: str, expected: int) -> None:
    result = run_group(shim_test_binary, group)
    assert result.returncode == 0 and result.failed == 0, result.output
    assert result.passed == expected, result.output
    assert result.skipped == 0, result.output


# The cuda group, counted from its sources: the tests for one GPU (test_cuda.cpp) and those that
# need two (test_two_gpus.cpp). A test the binary loses, or gains unbuilt, fails here.
def _cuda_tests_in(name: str) -> int:
    text = (Path(__file__).resolve().parents[1] / "shims" / "tests" / name).read_text(encoding="utf-8")
    return sum(line.startswith("TEST(cuda,") for line in text.splitlines())


TWO_GPU_TESTS = _cuda_tests_in("test_two_gpus.cpp")
CUDA_TESTS = _cuda_tests_in("test_cuda.cpp") + TWO_GPU_TESTS


def test_cuda_group(shim_test_binary: Path) -> None:
    result = run_group(shim_test_binary, "cuda")
    assert result.failed == 0 and result.returncode == 0, result.output
    if not gpu_visible():
        assert (result.passed, result.skipped) == (0, CUDA_TESTS), result.output
        pytest.skip("no CUDA device: the CUDA group runs on a machine with a GPU (docs/gpu/run_h200.sh)")
    # One GPU: the two-GPU tests skip; two: everything runs.
    assert result.passed + result.skipped == CUDA_TESTS, result.output
    assert result.skipped in (0, TWO_GPU_TESTS), result.output


def test_a_gpu_the_library_does_not_see_fails_the_cuda_group(shim_test_binary: Path) -> None:
    # Told that a GPU is there when the library finds none (or the reverse), every CUDA test fails
    # rather than skips: a broken device count cannot hide the CUDA tests on a GPU machine.
    result = run_group(shim_test_binary, "cuda", expect_gpu=not gpu_visible())
    assert result.returncode != 0 and (result.passed, result.failed, result.skipped) == (0, CUDA_TESTS, 0), (
        result.output
    )
    assert "aoti_shim_cuda_device_count says" in result.output


def test_unknown_group_runs_nothing(shim_test_binary: Path) -> None:
    # The summary parser and group filter are what the tests above rely on.
    result = run_group(shim_test_binary, "no-such-group")
    assert (result.returncode, result.passed, result.failed, result.skipped) == (0, 0, 0, 0)
