"""What the GPU tests share: the skip rule, a prefixed CUDA blob, the shims' stream
ABI through ctypes, CUDA streams and events through cuda-python, and a way to hold a
stream behind a long spin kernel so that work queued on it visibly waits."""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from aoti_shim.checks.abi.prefix import DEFAULT_PREFIX
from shims_support import reference_library

PREFIX = DEFAULT_PREFIX  # what the installed reference shims carry
# Tests reuse the smoke run's compiled models when this names its cache (the H200 script
# sets it: autotuned CUDA compiles take tens of seconds each).
CACHE_ENV = "AOTI_SHIM_SMOKE_CACHE"


def gpu_missing(devices: int = 1) -> str | None:
    """Why the GPU tests cannot run here (None: they can): torch must see ``devices`` CUDA
    GPUs, and cuda-python must be there."""
    import torch  # in the test extra: its absence fails, it does not skip

    if torch.cuda.device_count() < devices:
        return "needs a CUDA GPU" if devices == 1 else f"needs {devices} CUDA GPUs"
    try:
        import cuda.bindings.runtime  # noqa: F401 - imported to learn it is there
    except ImportError:
        return "needs cuda-python (cuda.bindings)"
    return None


def needs_gpu(devices: int = 1) -> pytest.MarkDecorator:
    """The ``pytestmark`` of a GPU test module: its tests skip without the GPUs, but the
    module is still imported and its tests collected on every machine, so CI sees a
    GPU test that no longer imports or names a moved file (a module-level skip hid that)."""
    reason = gpu_missing(devices)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def compile_cache(factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    path = factory.getbasetemp() / "smoke-compile-cache"
    path.mkdir(exist_ok=True)
    return path


@dataclass(frozen=True)
class PrefixedModel:
    name: str
    blob: Path  # imports PREFIX + aoti_torch_* only
    io_file: Path  # inputs and eager outputs recorded at compile time
    kernel_dir: str | None


def prefixed_model(model: str, cache: Path, out_dir: Path, device: str = "cuda") -> PrefixedModel:
    """A bundled smoke model compiled for ``device`` (cached), its imports renamed."""
    import json

    from aoti_shim.smoke.compile import CompileRequest, compile_cached
    from aoti_shim.smoke.rewrite import RewriteSettings, rewrite_imports

    art = compile_cached(CompileRequest(model=model, device=device, route="binary"), cache)
    blob = out_dir / f"{art.model_name}.{device}.prefixed.so"
    rewrite_imports(RewriteSettings(blob=art.blob, prefix=PREFIX, output=blob))
    kernel_dir = json.loads((art.directory / "result.json").read_text()).get("kernel_dir")
    return PrefixedModel(art.model_name, blob, art.io_file, str(art.directory / kernel_dir) if kernel_dir else None)


class StreamSelection(ctypes.Structure):
    """``AotiShimStreamSelection`` of shim.h."""

    _fields_ = [("selected", ctypes.c_int32), ("stream", ctypes.c_void_p)]


class StreamAbi:
    """The shims' caller-stream C ABI and stream guards, under their prefix."""

    def __init__(self, library: ctypes.CDLL, prefix: str) -> None:
        sel_p, vp = ctypes.POINTER(StreamSelection), ctypes.c_void_p

        def fn(name: str, *argtypes: Any) -> Any:
            f = getattr(library, prefix + name)
            f.argtypes, f.restype = list(argtypes), ctypes.c_int32
            return f

        self._select = fn("aoti_shim_caller_stream_select", vp, sel_p)
        self._restore = fn("aoti_shim_caller_stream_restore", sel_p)
        self._get = fn("aoti_shim_caller_stream_get", sel_p)
        self._current = fn("aoti_torch_get_current_cuda_stream", ctypes.c_int32, ctypes.POINTER(vp))
        self._guard = fn("aoti_torch_create_cuda_stream_guard", vp, ctypes.c_int32, ctypes.POINTER(vp))
        self._unguard = fn("aoti_torch_delete_cuda_stream_guard", vp)

    @staticmethod
    def _ok(status: int, what: str) -> None:
        assert status == 0, f"{what} returned {status}"

    def get(self) -> tuple[bool, int]:
        """(selected, stream) of the calling thread."""
        s = StreamSelection()
        self._ok(self._get(ctypes.byref(s)), "aoti_shim_caller_stream_get")
        return bool(s.selected), int(s.stream or 0)

    def current(self, device_index: int = 0) -> int:
        """The shims' current stream (what a runtime passes to the model run); 0 = default."""
        out = ctypes.c_void_p()
        self._ok(self._current(device_index, ctypes.byref(out)), "aoti_torch_get_current_cuda_stream")
        return int(out.value or 0)

    @contextlib.contextmanager
    def caller_stream(self, stream: int | None) -> Iterator[None]:
        """The caller-stream guard: select (None = the null stream), restore on exit."""
        previous = StreamSelection()
        self._ok(self._select(stream, ctypes.byref(previous)), "aoti_shim_caller_stream_select")
        try:
            yield
        finally:
            self._ok(self._restore(ctypes.byref(previous)), "aoti_shim_caller_stream_restore")

    @contextlib.contextmanager
    def stream_guard(self, stream: int, device_index: int = 0) -> Iterator[None]:
        """What the blob itself does around a run: make ``stream`` the shims' current one."""
        guard = ctypes.c_void_p()
        self._ok(self._guard(stream, device_index, ctypes.byref(guard)), "aoti_torch_create_cuda_stream_guard")
        try:
            yield
        finally:
            self._ok(self._unguard(guard), "aoti_torch_delete_cuda_stream_guard")


# ---- CUDA through cuda-python (the runtime API of the toolkit the process uses)


def cudart() -> Any:
    from cuda.bindings import runtime

    return runtime


def cuda_call(result: Any) -> Any:
    """Unwrap a cuda-python (err, *values) tuple; fail the test on an error."""
    rt = cudart()
    err, *values = result if isinstance(result, tuple) else (result,)
    assert err == rt.cudaError_t.cudaSuccess, f"CUDA error {err}"
    return values[0] if len(values) == 1 else values


def new_stream() -> int:
    rt = cudart()
    stream = cuda_call(rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking))
    return int(stream)


def destroy_stream(stream: int) -> None:
    cuda_call(cudart().cudaStreamDestroy(stream))


def stream_idle(stream: int) -> bool:
    """cudaStreamQuery: True when all work on it is done, False while some is pending."""
    rt = cudart()
    (err,) = rt.cudaStreamQuery(stream)
    if err == rt.cudaError_t.cudaErrorNotReady:
        return False
    assert err == rt.cudaError_t.cudaSuccess, f"cudaStreamQuery: {err}"
    return True


def stream_sync(stream: int) -> None:
    cuda_call(cudart().cudaStreamSynchronize(stream))


LEGACY_STREAM = 1  # cudaStreamLegacy: the legacy default stream, whatever the per-thread mode


class Hold:
    """Holds ``stream``: it waits on an event that a side stream records only after a
    spin kernel of about ``seconds``. Work queued on ``stream`` after this cannot start
    before ``released()`` turns true."""

    def __init__(self, stream: int, seconds: float = 2.0) -> None:
        import torch

        rt = cudart()
        self._side = torch.cuda.Stream()  # torch's pool streams are non-blocking
        cycles = spin_cycles(seconds)
        self.event = cuda_call(rt.cudaEventCreateWithFlags(rt.cudaEventDisableTiming))
        with torch.cuda.stream(self._side):
            torch.cuda._sleep(cycles)
        cuda_call(rt.cudaEventRecord(self.event, self._side.cuda_stream))
        cuda_call(rt.cudaStreamWaitEvent(stream, self.event, 0))

    def released(self) -> bool:
        rt = cudart()
        (err,) = rt.cudaEventQuery(self.event)
        if err == rt.cudaError_t.cudaErrorNotReady:
            return False
        assert err == rt.cudaError_t.cudaSuccess, f"cudaEventQuery: {err}"
        return True

    def wait(self) -> None:
        cuda_call(cudart().cudaEventSynchronize(self.event))

    def close(self) -> None:
        self.wait()
        cuda_call(cudart().cudaEventDestroy(self.event))


_cycles_per_second: list[float] = []


def spin_cycles(seconds: float) -> int:
    """torch.cuda._sleep cycles for about ``seconds`` (measured once, clocks warm)."""
    import torch

    if not _cycles_per_second:
        side = torch.cuda.Stream()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        probe = 20_000_000
        with torch.cuda.stream(side):
            torch.cuda._sleep(probe)  # warms the clocks
            start.record()
            torch.cuda._sleep(probe)
            end.record()
        side.synchronize()
        _cycles_per_second.append(probe / (start.elapsed_time(end) / 1000.0))
    return int(_cycles_per_second[0] * seconds)


# ---- the process set-up and the model run, as a runtime does them


@dataclass
class Host:
    """The coalesced process: libtorch global first, then the prefixed shims global."""

    api: Any  # aoti_shim.smoke.runner.ShimApi over our shims
    streams: StreamAbi
    shims: ctypes.CDLL


_host: list[Host] = []


def coalesced_host() -> Host:
    if not _host:
        from aoti_shim.smoke.run_child import promote_libtorch
        from aoti_shim.smoke.runner import ShimApi

        promote_libtorch("cuda")
        shims = ctypes.CDLL(str(reference_library()), mode=os.RTLD_GLOBAL | os.RTLD_NOW)
        _host.append(Host(ShimApi(shims, PREFIX), StreamAbi(shims, PREFIX), shims))
    return _host[0]


def run_on_current_stream(host: Host, container: Any, inputs: list[Any]) -> tuple[int, list[Any]]:
    """One model run the way the caller-stream contract asks a runtime to do it: on the
    shims' current stream (the caller's selection, else the shims' own). Returns that
    stream and the output handles; nothing waits for the device."""
    stream = host.streams.current(0)
    handles = [host.api.wrap(t) for t in inputs]
    return stream, container.run(handles, stream or None)


def read_outputs(host: Host, handles: list[Any]) -> list[Any]:
    """Copy the outputs to host tensors and release the handles (call after a sync)."""
    try:
        return [host.api.to_torch(h) for h in handles]
    finally:
        for h in handles:
            host.api.delete(h)
