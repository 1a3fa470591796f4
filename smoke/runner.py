"""Drive a blob through the ``AOTInductorModelContainer*`` C API with ctypes.

Tensors cross the boundary as shim handles made by the shim library that the blob
binds to (our prefixed reference shims, or libtorch's own for the control run):
the blob and its caller must agree on what an ``AtenTensorHandle`` points to.
"""

from __future__ import annotations

import ctypes
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aoti_shim.errors import AotiShimError

if TYPE_CHECKING:
    import torch

_handle = ctypes.c_void_p
_i64p = ctypes.POINTER(ctypes.c_int64)

# c10::ScalarType and c10::DeviceType numbers, the shim ABI's dtype and device codes.
DTYPE_CODES = {
    "uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5,
    "float32": 6, "float64": 7, "bool": 11, "bfloat16": 15,
}
DEVICE_CODES = {"cpu": 0, "cuda": 1}


class ShimCallError(AotiShimError):
    """A shim or container call returned non-zero."""


def _check(status: int, what: str) -> None:
    if status != 0:
        raise ShimCallError(f"{what} failed with status {status}")


class ShimApi:
    """The few shim entry points the runner itself needs, under a prefix."""

    def __init__(self, library: ctypes.CDLL, prefix: str) -> None:
        self.prefix = prefix

        def fn(name: str, *argtypes: Any) -> Any:
            try:
                f = getattr(library, f"{prefix}aoti_torch_{name}")
            except AttributeError:
                raise AotiShimError(f"the shim library lacks {prefix}aoti_torch_{name}") from None
            f.argtypes, f.restype = list(argtypes), ctypes.c_int32
            return f

        i32, i64 = ctypes.c_int32, ctypes.c_int64
        self._from_blob = fn(
            "create_tensor_from_blob_v2", ctypes.c_void_p, i64, _i64p, _i64p, i64, i32, i32, i32,
            ctypes.POINTER(_handle), i32, ctypes.c_void_p, i64,
        )
        self._delete = fn("delete_tensor_object", _handle)
        self._data_ptr = fn("get_data_ptr", _handle, ctypes.POINTER(ctypes.c_void_p))
        self._dim = fn("get_dim", _handle, ctypes.POINTER(i64))
        self._sizes = fn("get_sizes", _handle, ctypes.POINTER(_i64p))
        self._strides = fn("get_strides", _handle, ctypes.POINTER(_i64p))
        self._dtype = fn("get_dtype", _handle, ctypes.POINTER(i32))
        self._device_type = fn("get_device_type", _handle, ctypes.POINTER(i32))
        self._library = library

    def wrap(self, tensor: torch.Tensor) -> ctypes.c_void_p:
        """A new non-owning shim handle over a torch tensor's memory."""
        ndim = tensor.dim()
        sizes = (ctypes.c_int64 * max(ndim, 1))(*tensor.shape)
        strides = (ctypes.c_int64 * max(ndim, 1))(*tensor.stride())
        out = _handle()
        device = tensor.device
        _check(
            self._from_blob(
                ctypes.c_void_p(tensor.data_ptr()), ndim, sizes, strides, 0,
                DTYPE_CODES[str(tensor.dtype).removeprefix("torch.")], DEVICE_CODES[device.type],
                device.index or 0, ctypes.byref(out), 0, None, 0,
            ),
            f"{self.prefix}aoti_torch_create_tensor_from_blob_v2",
        )
        return out

    def delete(self, handle: ctypes.c_void_p) -> None:
        _check(self._delete(handle), f"{self.prefix}aoti_torch_delete_tensor_object")

    def device_type(self, handle: ctypes.c_void_p) -> str:
        """Where a shim tensor's memory lives, as the shim itself says: ``cpu`` or ``cuda``."""
        code = ctypes.c_int32()
        _check(self._device_type(handle, ctypes.byref(code)), f"{self.prefix}aoti_torch_get_device_type")
        for name, value in DEVICE_CODES.items():
            if value == code.value:
                return name
        raise ShimCallError(f"output is on device type {code.value}, which the smoke run cannot read")

    def to_torch(self, handle: ctypes.c_void_p) -> torch.Tensor:
        """A CPU torch copy of a shim tensor (which stays owned by the caller).

        Host or device memory is decided per tensor, by asking the shim: a CUDA run can
        return a CPU tensor (a shape or a scalar computed on the host).
        """
        import torch

        dim, code = ctypes.c_int64(), ctypes.c_int32()
        sizes_p, strides_p, data = _i64p(), _i64p(), ctypes.c_void_p()
        _check(self._dim(handle, ctypes.byref(dim)), "get_dim")
        _check(self._sizes(handle, ctypes.byref(sizes_p)), "get_sizes")
        _check(self._strides(handle, ctypes.byref(strides_p)), "get_strides")
        _check(self._dtype(handle, ctypes.byref(code)), "get_dtype")
        _check(self._data_ptr(handle, ctypes.byref(data)), "get_data_ptr")
        sizes = [sizes_p[i] for i in range(dim.value)]
        strides = [strides_p[i] for i in range(dim.value)]
        names = {v: k for k, v in DTYPE_CODES.items()}
        if code.value not in names:
            raise ShimCallError(f"output has unknown dtype code {code.value}")
        dtype = getattr(torch, names[code.value])
        if any(s == 0 for s in sizes):
            return torch.empty(sizes, dtype=dtype)
        span = 1 + sum((n - 1) * s for n, s in zip(sizes, strides))
        nbytes = span * torch.empty((), dtype=dtype).element_size()
        if self.device_type(handle) == "cpu":
            raw = (ctypes.c_char * nbytes).from_address(data.value)
            return torch.frombuffer(raw, dtype=dtype, count=span).as_strided(sizes, strides).clone()
        # Device memory: let torch copy it out, viewing the span as a flat tensor.
        assert data.value is not None, "a non-empty tensor with a NULL data pointer"
        return _cuda_view(data.value, span, dtype).as_strided(sizes, strides).cpu()


def _cuda_view(pointer: int, count: int, dtype: torch.dtype) -> torch.Tensor:
    """A torch view of device memory owned by someone else (through DLPack-free
    __cuda_array_interface__)."""
    import torch

    typestr = {torch.float32: "<f4", torch.float16: "<f2", torch.float64: "<f8", torch.int64: "<i8",
               torch.int32: "<i4", torch.int16: "<i2", torch.int8: "|i1", torch.uint8: "|u1", torch.bool: "|b1"}
    if dtype == torch.bfloat16:
        return _cuda_view(pointer, count, torch.int16).view(torch.bfloat16)

    class _Interface:
        __cuda_array_interface__ = {
            "shape": (count,), "typestr": typestr[dtype], "data": (pointer, False), "version": 2, "strides": None,
        }

    return torch.as_tensor(_Interface(), device="cuda")


class Container:
    """One ``AOTInductorModelContainer`` of a loaded blob."""

    def __init__(self, blob: ctypes.CDLL, device: str, kernel_dir: str | None) -> None:
        self._blob = blob

        def fn(name: str, *argtypes: Any) -> Any:
            try:
                f = getattr(blob, name)
            except AttributeError:
                raise AotiShimError(f"the blob does not export {name}: not an AOTInductor model?") from None
            f.argtypes, f.restype = list(argtypes), ctypes.c_int32
            return f

        create = fn(
            "AOTInductorModelContainerCreateWithDevice",
            ctypes.POINTER(_handle), ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p,
        )
        self._run = fn(
            "AOTInductorModelContainerRun", _handle, ctypes.POINTER(_handle), ctypes.c_size_t,
            ctypes.POINTER(_handle), ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p,
        )
        self._delete = fn("AOTInductorModelContainerDelete", _handle)
        num_inputs = fn("AOTInductorModelContainerGetNumInputs", _handle, ctypes.POINTER(ctypes.c_size_t))
        num_outputs = fn("AOTInductorModelContainerGetNumOutputs", _handle, ctypes.POINTER(ctypes.c_size_t))
        self.handle = _handle()
        _check(
            create(ctypes.byref(self.handle), 1, device.encode(), kernel_dir.encode() if kernel_dir else None),
            "AOTInductorModelContainerCreateWithDevice",
        )
        n = ctypes.c_size_t()
        _check(num_inputs(self.handle, ctypes.byref(n)), "AOTInductorModelContainerGetNumInputs")
        self.num_inputs = n.value
        _check(num_outputs(self.handle, ctypes.byref(n)), "AOTInductorModelContainerGetNumOutputs")
        self.num_outputs = n.value

    def run(self, inputs: list[ctypes.c_void_p], stream: int | None) -> list[ctypes.c_void_p]:
        """Run once; the container steals the input handles, the caller owns the outputs."""
        if len(inputs) != self.num_inputs:
            raise AotiShimError(f"the blob wants {self.num_inputs} inputs, got {len(inputs)}")
        ins = (_handle * max(len(inputs), 1))(*inputs)
        outs = (_handle * max(self.num_outputs, 1))()
        _check(
            self._run(self.handle, ins, len(inputs), outs, self.num_outputs, stream, None),
            "AOTInductorModelContainerRun",
        )
        return [_handle(outs[i]) for i in range(self.num_outputs)]

    def close(self) -> None:
        if self.handle:
            _check(self._delete(self.handle), "AOTInductorModelContainerDelete")
            self.handle = _handle()


@dataclass(frozen=True)
class RunSettings:
    device: str = "cpu"
    warmup: int = 3
    iterations: int = 30
    # Stop timing early once this many seconds were spent (big user models).
    time_budget_s: float = 2.0
    # "new": torch's current stream (the run child made a stream of its own current);
    # "default": the legacy default stream, a null pointer; "none": a CPU run.
    stream: str = "none"


@dataclass(frozen=True)
class RunOutcome:
    outputs: list[Any]
    latencies_us: list[float]

    @property
    def median_us(self) -> float:
        return statistics.median(self.latencies_us) if self.latencies_us else float("nan")


def run_container(
    api: ShimApi, container: Container, inputs: list[torch.Tensor], settings: RunSettings
) -> RunOutcome:
    """Run the blob; the first run's outputs are returned, later runs are timed."""
    import torch

    stream = torch.cuda.current_stream().cuda_stream if settings.device == "cuda" and settings.stream == "new" else None

    def once() -> tuple[list[ctypes.c_void_p], float]:
        handles = [api.wrap(t) for t in inputs]
        start = time.perf_counter()
        outs = container.run(handles, stream)
        if settings.device == "cuda":
            torch.cuda.synchronize()
        return outs, (time.perf_counter() - start) * 1e6

    outs, _ = once()
    try:
        results = [api.to_torch(h) for h in outs]
    finally:
        for h in outs:
            api.delete(h)
    latencies: list[float] = []
    began = time.perf_counter()
    for i in range(settings.warmup + settings.iterations):
        outs, elapsed = once()
        for h in outs:
            api.delete(h)
        if i >= settings.warmup:
            latencies.append(elapsed)
            if time.perf_counter() - began > settings.time_budget_s and len(latencies) >= 5:
                break
    return RunOutcome(outputs=results, latencies_us=latencies)
