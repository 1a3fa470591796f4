"""The host sampler (bench/host_sampler.py, loaded from the checkout) against a known split of
time: a thread that runs about 30% of the time in one library and the rest in another, both
built here from fixtures/bench/busy.c, most of it below their frames (in the vDSO's
clock_gettime). The split is timed first, without the sampler, from the same calls."""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from aoti_shim.errors import AotiShimError
from compile_support import compile_shared, compiler
from script_support import load_script

REPO = Path(__file__).resolve().parents[1]
BUSY = REPO / "fixtures" / "bench" / "busy.c"
TARGET_READS, OTHER_READS = 12_000, 28_000  # about 0.3 and 0.7 ms


@pytest.fixture(scope="module")
def sampler_module() -> ModuleType:
    return load_script(REPO / "bench" / "host_sampler.py", "host_sampler_under_test")


def _library(tmp_path: Path, name: str) -> ctypes.CDLL:
    out = tmp_path / name
    compile_shared(BUSY, out)
    lib = ctypes.CDLL(str(out))
    lib.spin.argtypes, lib.spin.restype = [ctypes.c_long], ctypes.c_long
    return lib


def _fastest(call: Callable[[int], object], reads: int) -> float:
    """The least of 20 timings of one call: its running time with the fewest interruptions."""
    best = float("inf")
    for _ in range(20):
        start = time.perf_counter()
        call(reads)
        best = min(best, time.perf_counter() - start)
    return best


def test_the_share_is_the_time_spent_in_the_library_and_below_it(sampler_module: ModuleType, tmp_path: Path) -> None:
    target, other = _library(tmp_path, "libtarget.so"), _library(tmp_path, "libother.so")
    in_target, in_other = _fastest(target.spin, TARGET_READS), _fastest(other.spin, OTHER_READS)
    truth = in_target / (in_target + in_other)
    sampler = sampler_module.HostSampler(tmp_path, compiler("c"))
    sampler.start(tmp_path / "libtarget.so", 50.0)
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            sampler.window(1)
            target.spin(TARGET_READS)
            other.spin(OTHER_READS)
            sampler.window(0)
            other.spin(OTHER_READS // 2)  # outside the window: not counted
    finally:
        got = sampler.stop()
    low, high = got.interval()
    assert got.samples > 2000, got
    # The interval and the Python between the calls allow 3 points either way.
    assert abs(got.share - truth) < 0.03 and low < got.share < high, (got, truth)


def test_a_library_not_loaded_is_one_error(sampler_module: ModuleType, tmp_path: Path) -> None:
    sampler = sampler_module.HostSampler(tmp_path, compiler("c"))
    with pytest.raises(AotiShimError, match="not loaded in this process"):
        sampler.start(tmp_path / "libnowhere.so", 100.0)


def test_the_interval_is_wilsons_and_a_share_of_nothing_is_undefined(sampler_module: ModuleType) -> None:
    # 30 of 1000: Wilson's 95% interval is [2.11%, 4.25%] (a normal one would be [1.94%, 4.06%]).
    low, high = sampler_module.SampledShare(30, 1000).interval()
    assert (round(low, 4), round(high, 4)) == (0.0211, 0.0425)
    # None of 1000: the interval still has width, it does not collapse onto 0.
    low, high = sampler_module.SampledShare(0, 1000).interval()
    assert low < 1e-12 and 0.0037 < high < 0.0039
    empty = sampler_module.SampledShare(0, 0)
    assert empty.share != empty.share and all(x != x for x in empty.interval())  # NaN


def test_a_second_start_and_a_too_short_interval_are_refused(sampler_module: ModuleType, tmp_path: Path) -> None:
    _library(tmp_path, "libtarget.so")
    sampler = sampler_module.HostSampler(tmp_path, compiler("c"))
    sampler.stop()  # never started: nothing to stop, and no timer of someone else's deleted
    with pytest.raises(AotiShimError, match="under 10 us"):
        sampler.start(tmp_path / "libtarget.so", 3.0)
    sampler.start(tmp_path / "libtarget.so", 100.0)
    try:
        with pytest.raises(AotiShimError, match="sampling already"):
            sampler.start(tmp_path / "libtarget.so", 100.0)
    finally:
        sampler.stop()
    sampler.start(tmp_path / "libtarget.so", 100.0)  # stopped, it starts again
    assert sampler.stop().samples == 0  # no window was opened
