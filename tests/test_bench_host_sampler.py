"""The host sampler (bench/host_sampler.py, loaded from the checkout) against a known split of
time: a thread that spends 30% of its time in one library and 70% in another, both built here
from fixtures/bench/busy.c, most of it below their frames (in the vDSO's clock_gettime)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import time
from pathlib import Path
from types import ModuleType

import pytest

from aoti_shim.errors import AotiShimError
from script_support import load_script

REPO = Path(__file__).resolve().parents[1]
BUSY = REPO / "fixtures" / "bench" / "busy.c"


@pytest.fixture(scope="module")
def sampler_module() -> ModuleType:
    return load_script(REPO / "bench" / "host_sampler.py", "host_sampler_under_test")


def _library(tmp_path: Path, name: str) -> ctypes.CDLL:
    out = tmp_path / name
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", str(out), str(BUSY)], check=True)
    lib = ctypes.CDLL(str(out))
    lib.busy.argtypes, lib.busy.restype = [ctypes.c_long], None
    return lib


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_the_share_is_the_time_spent_in_the_library_and_below_it(sampler_module: ModuleType, tmp_path: Path) -> None:
    target, other = _library(tmp_path, "libtarget.so"), _library(tmp_path, "libother.so")
    sampler = sampler_module.HostSampler(tmp_path, "cc")
    sampler.start(tmp_path / "libtarget.so", 50.0)
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            sampler.window(1)
            target.busy(300_000)
            other.busy(700_000)
            sampler.window(0)
            other.busy(500_000)  # outside the window: not counted
    finally:
        got = sampler.stop()
    low, high = got.interval()
    assert got.samples > 5000, got
    # 30% of the windows' time; Python between the calls and the interval allow +-3 points.
    assert 0.27 < got.share < 0.33 and low < got.share < high, got


def test_a_library_not_loaded_is_one_error(sampler_module: ModuleType, tmp_path: Path) -> None:
    sampler = sampler_module.HostSampler(tmp_path, "cc")
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
