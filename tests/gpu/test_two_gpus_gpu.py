"""Two GPUs (issue 16): a blob on cuda:1, copies between devices ordered against a busy
source stream (both ways), two blobs on two GPUs from two threads, and pinned host
memory used from both GPUs. Skips unless torch (not the library under test) sees two
CUDA devices.

The ordering proofs hold a stream behind ``torch.cuda._sleep`` on a side stream of the
same device (an event it waits on): work queued behind the hold cannot start before it
ends, so a copy that reads a value written behind the hold can only see the new value
if it was ordered after that write.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_support import PREFIX, coalesced_host, compile_cache, needs_gpu, prefixed_model, spin_cycles
from shims_support import reference_library

pytestmark = needs_gpu(2)

import torch  # noqa: E402 - after the module's GPU skip

from aoti_shim.smoke.compare import compare  # noqa: E402 - after the module's GPU skip
from aoti_shim.smoke.loader import load_private_copy  # noqa: E402 - after the module's GPU skip
from aoti_shim.smoke.models import bundled  # noqa: E402 - after the module's GPU skip
from aoti_shim.smoke.runner import Container  # noqa: E402 - after the module's GPU skip

HOLD_S = 1.5
CHILD = Path(__file__).resolve().parent / "two_gpus_child.py"


class Shims:
    """The few prefixed shim calls these tests make beyond the runner's."""

    def __init__(self, library: ctypes.CDLL) -> None:
        vp, i32 = ctypes.c_void_p, ctypes.c_int32

        def fn(name: str, *argtypes: Any) -> Any:
            f = getattr(library, PREFIX + name)
            f.argtypes, f.restype = list(argtypes), i32
            return f

        self.copy_ = fn("aoti_torch_copy_", vp, vp, i32)
        self.device_index = fn("aoti_torch_get_device_index", vp, ctypes.POINTER(i32))
        self.current_device = fn("aoti_torch_get_current_device_index", ctypes.POINTER(i32))
        self.guard = fn("aoti_torch_create_cuda_stream_guard", vp, i32, ctypes.POINTER(vp))
        self.unguard = fn("aoti_torch_delete_cuda_stream_guard", vp)
        self.empty_pinned = fn(
            "aoti_torch_empty_strided_pinned", ctypes.c_int64, ctypes.POINTER(ctypes.c_int64),
            ctypes.POINTER(ctypes.c_int64), i32, i32, i32, ctypes.POINTER(vp),
        )
        self.data_ptr = fn("aoti_torch_get_data_ptr", vp, ctypes.POINTER(vp))
        self.is_pinned = fn("aoti_shim_is_pinned", vp, ctypes.POINTER(ctypes.c_bool))
        self.last_error = getattr(library, PREFIX + "aoti_shim_last_error")
        self.last_error.restype = ctypes.c_char_p

    def ok(self, status: int, what: str) -> None:
        assert status == 0, f"{what} returned {status}: {self.last_error().decode()}"

    def current(self) -> int:
        out = ctypes.c_int32()
        self.ok(self.current_device(ctypes.byref(out)), "get_current_device_index")
        return out.value

    def device_of(self, handle: Any) -> int:
        out = ctypes.c_int32()
        self.ok(self.device_index(handle, ctypes.byref(out)), "get_device_index")
        return out.value


@pytest.fixture(scope="module")
def shims() -> Shims:
    return Shims(coalesced_host().shims)


class StreamGuards:
    """The shims' current stream per device, as a blob's stream guards set it (the
    caller-stream selection is one stream for every device: not what these tests want)."""

    def __init__(self, shims: Shims, streams: dict[int, torch.cuda.Stream]) -> None:
        self.shims, self.streams, self.guards = shims, streams, []

    def __enter__(self) -> StreamGuards:
        for device, stream in self.streams.items():
            guard = ctypes.c_void_p()
            self.shims.ok(self.shims.guard(stream.cuda_stream, device, ctypes.byref(guard)), "create_cuda_stream_guard")
            self.guards.append(guard)
        return self

    def __exit__(self, *exc: object) -> None:
        for guard in reversed(self.guards):
            self.shims.ok(self.shims.unguard(guard), "delete_cuda_stream_guard")


def hold(stream: torch.cuda.Stream, seconds: float = HOLD_S) -> torch.cuda.Event:
    """Holds ``stream`` behind a spin kernel on a side stream of its device."""
    with torch.cuda.device(stream.device):
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            torch.cuda._sleep(spin_cycles(seconds))
        done = torch.cuda.Event()
        done.record(side)
        stream.wait_event(done)
    return done


def sync_all() -> None:
    for d in range(2):
        torch.cuda.synchronize(d)


@pytest.fixture
def pair() -> Iterator[tuple[torch.cuda.Stream, torch.cuda.Stream]]:
    sync_all()
    yield torch.cuda.Stream(device=0), torch.cuda.Stream(device=1)
    sync_all()


# ---- a blob on cuda:1


def test_blob_runs_on_cuda1_with_its_guards_and_stream(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, shims: Shims
) -> None:
    host = coalesced_host()
    built = prefixed_model("mlp", compile_cache(tmp_path_factory), tmp_path)
    io = torch.load(built.io_file)
    module, _ = bundled(("mlp",))[0].build("cuda:1")
    x0 = io["inputs"][0].to("cuda:1").contiguous()
    x1 = (torch.randn(x0.shape, generator=torch.Generator().manual_seed(5)) * 2.0).to("cuda:1").contiguous()
    with torch.no_grad():
        y1 = module(x1).cpu()
    torch.cuda.set_device(0)
    stream = torch.cuda.Stream(device=1)
    with load_private_copy(built.blob) as blob:
        container = Container(blob.library, "cuda:1", built.kernel_dir)
        try:
            with torch.no_grad():
                warm = container.run([host.api.wrap(x0)], stream.cuda_stream)
                stream.synchronize()
                for h in warm:
                    host.api.delete(h)
                buffer = x0.clone()
                sync_all()
                # Making the container switches to its device (torch's AOTI runtime does
                # cudaSetDevice): the run itself must leave the caller's device alone.
                torch.cuda.set_device(0)
                assert shims.current() == 0
                done = hold(stream)
                outs = container.run([host.api.wrap(buffer)], stream.cuda_stream)
                assert not done.query(), "the hold ended before the run returned: the proof needs a longer hold"
                # The run's guards put the current device back, in the shims and in torch.
                assert shims.current() == 0 and torch.cuda.current_device() == 0
                assert [shims.device_of(h) for h in outs] == [1], "outputs are not on cuda:1"
                swap = torch.cuda.Stream(device=1)
                with torch.cuda.device(1), torch.cuda.stream(swap):
                    buffer.copy_(x1)  # independent of the held stream
                swap.synchronize()
                assert not done.query(), "the hold ended before the input was swapped: the proof needs a longer hold"
                stream.synchronize()
                with torch.cuda.device(1):  # the runner views device memory on the current device
                    got = [host.api.to_torch(h) for h in outs]
                for h in outs:
                    host.api.delete(h)
        finally:
            sync_all()
            container.close()
    result = compare(got, [y1])
    assert result.within_tolerance, (
        f"not the model of the swapped input ({result.detail}): the run was not on cuda:1's held stream"
    )


# ---- copy_ between devices against a busy source stream


def _filled(device: int, value: float, n: int = 1 << 20) -> torch.Tensor:
    return torch.full((n,), value, device=f"cuda:{device}")


def test_copy_from_a_busy_source_waits_for_its_pending_writes(
    shims: Shims, pair: tuple[torch.cuda.Stream, torch.cuda.Stream]
) -> None:
    """cuda:1 -> cuda:0 while cuda:1's stream still has a write to the source queued
    behind a hold: the copy must see the written value."""
    s0, s1 = pair
    host = coalesced_host()
    src, dst = _filled(1, 1.0), _filled(0, 0.0)
    sync_all()
    done = hold(s1)
    with torch.cuda.stream(s1):
        src.fill_(2.0)  # pending behind the hold
    hs, hd = host.api.wrap(src), host.api.wrap(dst)
    try:
        with StreamGuards(shims, {1: s1, 0: s0}):
            shims.ok(shims.copy_(hd, hs, 0), "copy_")
        assert not done.query(), "the hold ended before the copy was queued: the proof needs a longer hold"
        sync_all()
    finally:
        host.api.delete(hs)
        host.api.delete(hd)
    assert torch.equal(dst.cpu(), torch.full_like(dst.cpu(), 2.0)), "the copy read the source before its pending write"


def test_source_stream_waits_for_the_copy_before_writing_again(
    shims: Shims, pair: tuple[torch.cuda.Stream, torch.cuda.Stream]
) -> None:
    """cuda:1 -> cuda:0 with the destination's stream held, so the copy is still pending;
    then cuda:1's stream overwrites the source: that write must wait for the copy."""
    s0, s1 = pair
    host = coalesced_host()
    src, dst = _filled(1, 1.0), _filled(0, 0.0)
    sync_all()
    done = hold(s0)
    hs, hd = host.api.wrap(src), host.api.wrap(dst)
    try:
        with StreamGuards(shims, {1: s1, 0: s0}):
            shims.ok(shims.copy_(hd, hs, 0), "copy_")
        with torch.cuda.stream(s1):
            src.fill_(3.0)  # after the copy in program order: must not overtake it
        assert not done.query(), "the hold ended before the overwrite was queued: the proof needs a longer hold"
        sync_all()
    finally:
        host.api.delete(hs)
        host.api.delete(hd)
    assert torch.equal(dst.cpu(), torch.full_like(dst.cpu(), 1.0)), "the source was overwritten before the copy read it"
    assert torch.equal(src.cpu(), torch.full_like(src.cpu(), 3.0))


def test_copy_to_the_other_device_and_back(shims: Shims, pair: tuple[torch.cuda.Stream, torch.cuda.Stream]) -> None:
    """cuda:0 -> cuda:1 -> cuda:0 through the shims, each source written behind a hold."""
    s0, s1 = pair
    host = coalesced_host()
    a, b, c = _filled(0, 1.0), _filled(1, 0.0), _filled(0, 0.0)
    sync_all()
    done = hold(s0)
    with torch.cuda.stream(s0):
        a.fill_(4.0)
    ha, hb, hc = host.api.wrap(a), host.api.wrap(b), host.api.wrap(c)
    try:
        with StreamGuards(shims, {0: s0, 1: s1}):
            shims.ok(shims.copy_(hb, ha, 0), "copy_ 0->1")
            shims.ok(shims.copy_(hc, hb, 0), "copy_ 1->0")
        assert not done.query()
        sync_all()
    finally:
        for h in (ha, hb, hc):
            host.api.delete(h)
    assert torch.equal(c.cpu(), torch.full_like(c.cpu(), 4.0))


# ---- pinned host memory from both GPUs


def test_pinned_host_memory_serves_both_gpus(shims: Shims, pair: tuple[torch.cuda.Stream, torch.cuda.Stream]) -> None:
    """Pinned memory made by the shims (current device 0) is page-locked for cuda:1 too:
    a non-blocking copy from it into cuda:1 is queued behind a held stream without the
    host waiting (pageable memory makes the host wait for the stream), and both GPUs
    read the right values."""
    s0, s1 = pair
    host = coalesced_host()
    n = 1 << 20
    sizes, strides = (ctypes.c_int64 * 1)(n), (ctypes.c_int64 * 1)(1)
    pinned = ctypes.c_void_p()
    torch.cuda.set_device(0)
    shims.ok(shims.empty_pinned(1, sizes, strides, 6, 0, 0, ctypes.byref(pinned)), "empty_strided_pinned")
    try:
        data = ctypes.c_void_p()
        shims.ok(shims.data_ptr(pinned, ctypes.byref(data)), "get_data_ptr")
        view = torch.frombuffer((ctypes.c_float * n).from_address(data.value), dtype=torch.float32)
        view.copy_(torch.arange(n, dtype=torch.float32))
        for device in (1, 0):
            with torch.cuda.device(device):
                flag = ctypes.c_bool()
                shims.ok(shims.is_pinned(data, ctypes.byref(flag)), "is_pinned")
                assert flag.value, f"pinned memory is not pinned seen from cuda:{device}"
        targets = {d: _filled(d, -1.0, n) for d in (0, 1)}
        sync_all()
        for device, stream in ((1, s1), (0, s0)):
            done = hold(stream)
            handle = host.api.wrap(targets[device])
            try:
                with StreamGuards(shims, {device: stream}):
                    began = time.perf_counter()
                    shims.ok(shims.copy_(handle, pinned, 1), f"copy_ pinned -> cuda:{device}")
                    waited = time.perf_counter() - began
            finally:
                host.api.delete(handle)
            assert not done.query(), (
                f"cuda:{device}: the host waited for the held stream ({waited:.2f} s): not pinned for it"
            )
            assert waited < HOLD_S / 3
            stream.synchronize()
        sync_all()
        for device, t in targets.items():
            assert torch.equal(t.cpu(), torch.arange(n, dtype=torch.float32)), f"cuda:{device} got wrong values"
    finally:
        host.api.delete(pinned)


# ---- two blobs on two GPUs at once


def test_two_blobs_on_two_gpus_from_two_threads(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    built = prefixed_model("mlp", compile_cache(tmp_path_factory), tmp_path)
    proc = subprocess.run(
        [sys.executable, str(CHILD), str(built.blob), str(built.io_file), built.kernel_dir or "",
         str(reference_library()), PREFIX, "3", "40"],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, f"the child died ({proc.returncode}):\n{proc.stderr[-4000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not [e for e in report if "error" in e], report
    assert sorted({e["device"] for e in report}) == [0, 1]
    assert all(e["runs"] == 40 and e["failures"] == 0 for e in report), report
    assert all(e["output_devices"] == [e["device"]] for e in report), report
    assert all(e["overlapped"] for e in report), f"the two GPUs never ran at once: {report}"
