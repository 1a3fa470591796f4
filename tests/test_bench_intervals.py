"""The latency bench (bench/shim_latency.py, loaded from the checkout): its ratio statistics
(geometric mean of per-round ratios and its bootstrap interval over rounds), and its
libtorch-linked twin (b'), compiled on CPU here since the GPU kit runs it only on the H200."""

from __future__ import annotations

import ctypes
import json
import math
import statistics
from pathlib import Path
from types import ModuleType

import pytest

from script_support import load_script
from shims_support import reference_shims

BENCH = Path(__file__).resolve().parents[1] / "bench" / "shim_latency.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script(BENCH, "shim_latency_under_test")


def test_constant_ratios_give_a_point_interval(bench: ModuleType) -> None:
    got = bench.Interval.of([0.9] * 12)
    assert got.rounds == 12
    assert got.estimate == pytest.approx(0.9) and got.low == pytest.approx(0.9) and got.high == pytest.approx(0.9)


def test_interval_is_the_geometric_mean_with_bounds_around_it(bench: ModuleType) -> None:
    ratios = [0.8, 0.9, 1.0, 0.85, 0.95, 0.92, 0.88, 0.91, 0.87, 0.93]
    got = bench.Interval.of(ratios)
    assert got.estimate == pytest.approx(math.exp(sum(map(math.log, ratios)) / len(ratios)))
    assert min(ratios) < got.low < got.estimate < got.high < max(ratios)
    # Reproducible: the resampling is seeded.
    assert bench.Interval.of(ratios) == got
    # A wider spread, a wider interval.
    wide = bench.Interval.of([r ** 3 for r in ratios])
    assert wide.high - wide.low > got.high - got.low


def test_unusable_rounds_are_left_out(bench: ModuleType) -> None:
    assert bench.Interval.of([]).rounds == 0
    assert math.isnan(bench.Interval.of([float("nan"), 0.0]).estimate)
    one = bench.Interval.of([0.9, float("nan")])
    assert one.rounds == 1 and one.estimate == pytest.approx(0.9) and math.isnan(one.low)
    assert one.render() == "0.900"


def test_round_ratios_pair_each_rounds_medians(bench: ModuleType) -> None:
    rounds = [{"a": 9.0, "b": 10.0}, {"a": 8.0, "b": 10.0, "c": 1.0}, {"a": 5.0}]
    assert bench.round_ratios(rounds, "a", "b") == [0.9, 0.8]
    assert bench.round_ratios(rounds, "a", "c") == [8.0]


@pytest.mark.slow
@pytest.mark.torch
def test_libtorch_linked_twin_compiles_and_links_libtorch(bench: ModuleType, tmp_path: Path) -> None:
    # The twin is the smoke's own compile with link_libtorch=True alone: a change to the smoke's
    # compile signature broke it on the H200 (run11) while every CPU test stayed green.
    pytest.importorskip("torch")
    from aoti_shim.checks.elf.image import ElfImage

    twin = bench.compile_libtorch_linked(tmp_path, "cpu", "mlp")
    options = json.loads((twin.directory / "result.json").read_text())["inductor_options"]
    assert options["aot_inductor.link_libtorch"] == "True"
    assert options["aot_inductor.package_constants_in_so"] == "True"  # the smoke's options, kept
    with ElfImage(str(twin.blob)) as blob:
        assert any(n.startswith(("libtorch", "libc10")) for n in blob.needed), blob.needed
    # Cached: the second call compiles nothing and answers the same folder.
    assert bench.compile_libtorch_linked(tmp_path, "cpu", "mlp").directory == twin.directory


def test_runs_pass_a_stream_of_their_own_on_cuda_unless_asked(bench: ModuleType) -> None:
    # As the smoke's --stream: what runtimes pass (ExecuTorch's shims refuse a null stream).
    assert bench.stream_of("cuda", None) == "new"
    assert bench.stream_of("cuda", "default") == "default"
    assert bench.stream_of("cpu", None) == "none" and bench.stream_of("cpu", "new") == "none"
    assert bench._parse(["--device", "cuda", "--stream", "default"]).stream == "default"
    with pytest.raises(SystemExit):
        bench._parse(["--stream", "null"])


def test_a_cpu_run_keeps_the_current_stream(bench: ModuleType, tmp_path: Path) -> None:
    settings = bench.BenchSettings(device="cpu", models=("mlp",), cache_dir=tmp_path, work_dir=tmp_path, prefix="p_",
                                   shim_library=tmp_path / "lib.so", stream="none")
    with bench.caller_stream(settings):
        pass  # no CUDA call: a CPU machine runs it


def test_the_profiles_own_cost_is_netted_per_scope_and_event(bench: ModuleType) -> None:
    # One inference: 3 outermost calls, 2 scopes nested in them (an inner step, a nested entry
    # point) and 4 counted events; each costs what the calibration says.
    cost = bench.ProfileCost(outermost_ns=100.0, nested_ns=50.0, count_ns=10.0, probe_calls=1)
    rows = [bench.ProfileRow(bench.TOTAL_ROW, 3, 5.0), bench.ProfileRow("aoti_torch_empty_strided", 2, 4.0),
            bench.ProfileRow("aoti_torch_new_tensor_handle", 2, 1.0), bench.ProfileRow("cuda: a step", 1, 0.5),
            bench.ProfileRow("alloc: counted", 4, 0.0)]
    assert cost.net_us(rows) == pytest.approx(5.0 - (300 + 100 + 40) / 1e3)
    assert math.isnan(cost.net_us(rows[1:]))  # no total row, no net


def test_an_empty_entry_point_nets_to_about_nothing(bench: ModuleType) -> None:
    # The real library's probe, calibrated in this process, then timed again with nested steps
    # and events in it: net of the profile's own cost, nothing is left but noise. (About 0.2 s.)
    library, prefix = reference_shims()
    shims = ctypes.CDLL(str(library))
    profile = bench.ProfileApi(shims, prefix)
    cost = profile.calibrate()
    assert cost is not None and cost.outermost_ns > 0 and cost.nested_ns > cost.count_ns >= 0
    probe = getattr(shims, f"{prefix}aoti_shim_profile_probe")
    probe.argtypes, probe.restype = [ctypes.c_int32, ctypes.c_int32], ctypes.c_int32
    calls, raw, net = 4000, [], []
    for _ in range(7):
        profile.reset()
        profile.enable(True)
        for _ in range(calls):
            probe(2, 3)
        profile.enable(False)
        rows = [bench.ProfileRow(name, n / calls, ns / 1e3 / calls) for name, n, ns in profile.read()]
        raw.append(next(r.us_per_inference for r in rows if r.name == bench.TOTAL_ROW))
        net.append(cost.net_us(rows))
    profile.reset()
    assert abs(statistics.median(net)) < 0.35 * statistics.median(raw), (raw, net, cost)


def test_sigterm_mid_run_is_one_line_and_leaves_no_work_folder(tmp_path: Path) -> None:
    # The GPU kit runs the bench under `timeout`, which sends SIGTERM: the run must stop as
    # Ctrl-C stops it (its work folder, where the sampler is built, removed), not die leaving it.
    import os
    import signal
    import subprocess
    import sys
    import time

    bench = subprocess.Popen(
        [sys.executable, str(BENCH), "--device", "cpu", "--model", "mlp", "--rounds", "2", "--iterations", "2",
         "--no-twin", "--cache-dir", str(tmp_path / "cache")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("aoti-shim-bench-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp_path.glob("aoti-shim-bench-*")), "the bench never made its work folder"
    time.sleep(2)  # into the compile
    bench.send_signal(signal.SIGTERM)
    _, err = bench.communicate(timeout=120)
    assert bench.returncode == 128 + signal.SIGTERM, err
    assert err.splitlines()[-1] == "shim_latency: terminated", err
    assert not list(tmp_path.glob("aoti-shim-bench-*"))
