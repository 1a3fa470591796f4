"""The reference shims' CUDA GEMM fallbacks (cuBLAS loaded at run time) against torch,
in every dtype they take and with transposed, strided and broadcast operands."""

from __future__ import annotations

import ctypes
import os

import pytest

from gpu_support import needs_gpu

pytestmark = needs_gpu()

import torch  # noqa: E402 - after the module's GPU skip

from shims_support import reference_library, reference_prefix  # noqa: E402 - after the module's GPU skip

P, I64, I32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
CODES = {torch.float32: 6, torch.float64: 7, torch.float16: 5, torch.bfloat16: 15}
# Against torch's own cuBLAS call: the same library, other algorithms may sum in another order.
TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-12, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


@pytest.fixture(scope="module")
def lib() -> tuple[ctypes.CDLL, str]:
    torch.backends.cuda.matmul.allow_tf32 = False  # the shims' float32 default: no TF32
    return ctypes.CDLL(str(reference_library()), mode=os.RTLD_GLOBAL), reference_prefix()


def fn(lib: tuple[ctypes.CDLL, str], name: str, *argtypes: object):
    f = getattr(lib[0], lib[1] + name)
    f.restype, f.argtypes = I32, list(argtypes)
    return f


def check(lib: tuple[ctypes.CDLL, str], code: int) -> None:
    if code != 0:
        last = getattr(lib[0], lib[1] + "aoti_shim_last_error")
        last.restype = ctypes.c_char_p
        raise AssertionError(f"shim error {code}: {last().decode()}")


def handle(lib: tuple[ctypes.CDLL, str], t: torch.Tensor) -> P:
    out = P()
    sizes, strides = (I64 * t.dim())(*t.shape), (I64 * t.dim())(*t.stride())
    base = t.data_ptr() - t.storage_offset() * t.element_size()
    f = fn(lib, "aoti_torch_create_tensor_from_blob", P, I64, P, P, I64, I32, I32, I32, P)
    check(
        lib,
        f(base, t.dim(), sizes, strides, t.storage_offset(), CODES[t.dtype], 1, t.device.index or 0, ctypes.byref(out)),
    )
    return out


def close(got: torch.Tensor, want: torch.Tensor) -> None:
    scale = float(want.abs().max().double()) or 1.0
    err = float((got.double() - want.double()).abs().max())
    assert err <= TOLERANCE[want.dtype] * scale, (err, scale)


def run(lib, name: str, *tensors: torch.Tensor, scalars: tuple[float, ...] = ()) -> None:
    handles = [handle(lib, t) for t in tensors]
    f = fn(lib, name, *([P] * len(handles)), *([ctypes.c_double] * len(scalars)))
    check(lib, f(*handles, *scalars))
    torch.cuda.synchronize()
    delete = fn(lib, "aoti_torch_delete_tensor_object", P)
    for h in handles:
        check(lib, delete(h))


@pytest.mark.parametrize("dtype", list(CODES))
@pytest.mark.parametrize("layout", ["plain", "transposed", "strided"])
def test_mm_and_addmm(lib, dtype: torch.dtype, layout: str) -> None:
    torch.manual_seed(0)
    a = torch.randn(37, 65, device="cuda", dtype=dtype)
    b = torch.randn(65, 29, device="cuda", dtype=dtype)
    if layout == "transposed":
        a, b = a.t().contiguous().t(), b.t().contiguous().t()
    elif layout == "strided":
        a = torch.randn(37, 130, device="cuda", dtype=dtype)[:, ::2]
    out = torch.empty(37, 29, device="cuda", dtype=dtype)
    run(lib, "aoti_torch_cuda_mm_out", out, a, b)
    close(out, a @ b)
    bias = torch.randn(29, device="cuda", dtype=dtype)
    out_t = torch.empty(29, 37, device="cuda", dtype=dtype).t()  # a transposed output
    run(lib, "aoti_torch_cuda_addmm_out", out_t, bias, a, b, scalars=(0.5, 2.0))
    close(out_t, torch.addmm(bias, a, b, beta=0.5, alpha=2.0))


@pytest.mark.parametrize("dtype", list(CODES))
def test_bmm_and_baddbmm(lib, dtype: torch.dtype) -> None:
    torch.manual_seed(1)
    a = torch.randn(4, 17, 33, device="cuda", dtype=dtype)
    b = torch.randn(4, 21, 33, device="cuda", dtype=dtype).transpose(1, 2)  # k-major, as attention's K^T
    out = torch.empty(4, 17, 21, device="cuda", dtype=dtype)
    run(lib, "aoti_torch_cuda_bmm_out", out, a, b)
    close(out, torch.bmm(a, b))
    bias = torch.randn(1, 17, 21, device="cuda", dtype=dtype)
    run(lib, "aoti_torch_cuda_baddbmm_out", out, bias, a, b, scalars=(1.0, 0.125))
    close(out, torch.baddbmm(bias, a, b, beta=1.0, alpha=0.125))


def test_wrong_dtype_and_device_are_errors(lib) -> None:
    out, a = torch.empty(4, 4, device="cuda"), torch.ones(4, 4, device="cuda")
    f = fn(lib, "aoti_torch_cuda_mm_out", P, P, P)
    handles = [handle(lib, out), handle(lib, a), None]
    cpu = torch.ones(4, 4)
    cpu_h = P()
    g = fn(lib, "aoti_torch_create_tensor_from_blob", P, I64, P, P, I64, I32, I32, I32, P)
    check(lib, g(cpu.data_ptr(), 2, (I64 * 2)(4, 4), (I64 * 2)(4, 1), 0, 6, 0, 0, ctypes.byref(cpu_h)))
    handles[2] = cpu_h
    assert f(*handles) != 0  # a CPU operand
    handles[2] = handle(lib, torch.ones(4, 4, device="cuda", dtype=torch.float64))
    assert f(*handles) != 0  # mixed dtypes
