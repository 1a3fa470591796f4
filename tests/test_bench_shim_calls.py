"""The shim-call bench (bench/shim_calls.py, loaded from the checkout): its summary of
per-round samples, and one short real run (the system C compiler, the installed reference
shims, the installed torch's libtorch_cpu.so; about two seconds) whose table it checks."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from script_support import load_script

BENCH = Path(__file__).resolve().parents[1] / "bench" / "shim_calls.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script(BENCH, "shim_calls_under_test")


def test_summary_is_medians_and_the_median_of_per_round_ratios(bench: ModuleType) -> None:
    samples = []
    for r, (ours, torch) in enumerate([(10.0, 20.0), (30.0, 20.0), (12.0, 40.0)]):
        for call in bench.CALLS:
            samples += [bench.Sample(r, call, "ours", ours), bench.Sample(r, call, bench.ANCHOR, torch)]
    rows = bench.summarize(samples, ["ours", bench.ANCHOR])
    assert [row.call for row in rows] == list(bench.CALLS)
    for row in rows:
        assert row.ns == {"ours": 12.0, bench.ANCHOR: 20.0}
        # Per round 0.5, 1.5, 0.3: the median is 0.5, not the ratio of the medians (0.6).
        assert row.ratio == {"ours": pytest.approx(0.5)}


def test_a_short_run_prints_one_line_per_call(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--iterations", "2000", "--rounds", "3"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("# shim calls:") and "median of 3 rounds of 2000 iterations" in lines[0]
    assert "libtorch_cpu.so" in done.stdout
    header = next(line for line in lines if line.startswith("call"))
    assert header.split()[1:] == ["ours", "ns", "libtorch", "ns", "ours", "x", "torch"]
    rows = lines[lines.index(header) + 1:]
    assert [re.split(r"\s{2,}", row)[0] for row in rows] == [
        "empty_strided + delete_tensor_object", "_reinterpret_tensor + delete_tensor_object", "get_data_ptr",
    ]
    for row in rows:
        ours, torch, ratio = (float(cell) for cell in row.split()[-3:])
        assert ours > 0 and torch > 0 and ratio > 0


def test_a_missing_anchor_is_a_one_line_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--prefix", "myrt_", "--torch-lib", str(tmp_path / "missing.so")],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("shim_calls: error:"), done.stderr
    assert "missing.so: no such library" in done.stderr


def test_cuda_loops_need_the_anchors_cuda_stream_guard(tmp_path: Path) -> None:
    # libtorch's stream guard lives in libtorch_cuda.so: a CPU library as the CUDA anchor is
    # refused by name, in one line, before any loop runs (on any machine, GPU or not).
    from aoti_shim.torch_location import locate

    where = locate()
    assert where is not None
    done = subprocess.run(
        [sys.executable, str(BENCH), "--device", "cuda", "--torch-lib", str(where.lib / "libtorch_cpu.so")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("shim_calls: error: the driver failed:")
    assert "aoti_torch_create_cuda_stream_guard" in done.stderr


def test_sigterm_mid_run_stops_the_driver_and_leaves_no_folder(tmp_path: Path) -> None:
    # A run cut short (a GPU call's `timeout`, say) must not leave its driver looping on, nor
    # its temp folder behind: SIGTERM unwinds as Ctrl-C does.
    import os
    import signal
    import time

    bench = subprocess.Popen(
        [sys.executable, str(BENCH), "--iterations", "50000000", "--rounds", "50"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("aoti-shim-calls-*/shim_calls_driver")) and time.monotonic() < deadline:
        time.sleep(0.05)
    driver = next(iter(tmp_path.glob("aoti-shim-calls-*/shim_calls_driver")), None)
    assert driver is not None, "the driver was never built"

    def driver_running() -> bool:
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if cmdline.read_bytes().startswith(os.fsencode(str(driver))):
                    return True
            except OSError:
                continue
        return False

    while not driver_running() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert driver_running(), "the driver never started"
    bench.send_signal(signal.SIGTERM)
    _, err = bench.communicate(timeout=60)
    assert bench.returncode == 128 + signal.SIGTERM, err
    assert err == "shim_calls: terminated\n"
    assert not driver_running()
    assert not list(tmp_path.glob("aoti-shim-calls-*"))
