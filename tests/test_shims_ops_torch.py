"""The reference shims' CPU fallback ops against torch's own kernels and meta functions.

Tensors cross as non-owning views (create_tensor_from_blob on torch's memory) and come
back as torch views of the shims' memory, so values, sizes and strides are compared
exactly as a blob would see them. Output layouts must match what torch reports under
FakeTensorMode on CPU, which is what AOTInductor compiles its indexing against.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import torch  # in the test extra: its absence fails collection, it does not skip

P = ctypes.c_void_p
I64 = ctypes.c_int64
# c10::ScalarType codes of the dtypes these tests hand the shims.
DTYPES = {
    torch.uint8: 0,
    torch.int8: 1,
    torch.int16: 2,
    torch.int32: 3,
    torch.int64: 4,
    torch.float16: 5,
    torch.float32: 6,
    torch.float64: 7,
    torch.bool: 11,
    torch.bfloat16: 15,
}


@dataclass(frozen=True)
class Shims:
    lib: ctypes.CDLL
    prefix: str

    def fn(self, name: str, *argtypes: object) -> ctypes._CFuncPtr:
        f = getattr(self.lib, self.prefix + name)
        f.restype = ctypes.c_int32
        f.argtypes = list(argtypes)
        return f

    def check(self, code: int) -> None:
        if code != 0:
            last = getattr(self.lib, self.prefix + "aoti_shim_last_error")
            last.restype = ctypes.c_char_p
            raise AssertionError(f"shim error {code}: {last().decode()}")


@pytest.fixture(scope="module")
def shims(torch_module) -> Iterator[Shims]:  # torch_module: marks every test here "torch"
    from shims_support import reference_library, reference_prefix

    yield Shims(ctypes.CDLL(str(reference_library())), reference_prefix())


def handle(shims: Shims, tensor: torch.Tensor) -> P:
    """A non-owning shim tensor over torch's memory, with torch's strides and offset."""
    out = P()
    sizes = (I64 * tensor.dim())(*tensor.shape)
    strides = (I64 * tensor.dim())(*tensor.stride())
    base = tensor.data_ptr() - tensor.storage_offset() * tensor.element_size()
    from_blob = shims.fn("aoti_torch_create_tensor_from_blob", P, I64, P, P, I64, ctypes.c_int32, ctypes.c_int32,
                         ctypes.c_int32, P)
    shims.check(from_blob(base, tensor.dim(), sizes, strides, tensor.storage_offset(), DTYPES[tensor.dtype], 0, 0,
                          ctypes.byref(out)))
    return out


def as_torch(shims: Shims, h: P, dtype: torch.dtype) -> torch.Tensor:
    """A torch copy of a shim tensor, taken through its sizes, strides and data pointer."""
    dim, span = I64(), I64()
    data = P()
    sizes_ptr = ctypes.POINTER(I64)()
    strides_ptr = ctypes.POINTER(I64)()
    shims.check(shims.fn("aoti_torch_get_dim", P, P)(h, ctypes.byref(dim)))
    shims.check(shims.fn("aoti_torch_get_sizes", P, P)(h, ctypes.byref(sizes_ptr)))
    shims.check(shims.fn("aoti_torch_get_strides", P, P)(h, ctypes.byref(strides_ptr)))
    shims.check(shims.fn("aoti_torch_get_data_ptr", P, P)(h, ctypes.byref(data)))
    shims.check(shims.fn("aoti_torch_get_storage_numel", P, P)(h, ctypes.byref(span)))
    sizes = [sizes_ptr[i] for i in range(dim.value)]
    strides = [strides_ptr[i] for i in range(dim.value)]
    item = torch.empty((), dtype=dtype).element_size()
    raw = (ctypes.c_char * (span.value * item)).from_address(data.value)
    flat = torch.frombuffer(bytearray(raw), dtype=dtype)
    return torch.as_strided(flat, sizes, strides)


def fake_strides(op: object, *args: object, **kwargs: object) -> list[tuple[int, ...]]:
    """The output strides torch reports while compiling: the op run on CPU FakeTensors."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fake = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        fake_kwargs = {k: mode.from_tensor(v) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
        out = op(*fake, **fake_kwargs)
    return [t.stride() for t in (out if isinstance(out, tuple) else (out,))]


def delete(shims: Shims, *handles: P) -> None:
    for h in handles:
        shims.check(shims.fn("aoti_torch_delete_tensor_object", P)(h))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("transposed_weight", [False, True])
def test_addmm_matches_torch(shims: Shims, dtype: torch.dtype, transposed_weight: bool) -> None:
    torch.manual_seed(1)
    x = torch.randn(19, 33, dtype=dtype)
    weight = torch.randn(41, 33, dtype=dtype)
    mat2 = weight.t() if transposed_weight else weight.t().contiguous()
    bias = torch.randn(41, dtype=dtype)
    out = torch.empty(19, 41, dtype=dtype)
    handles = [handle(shims, t) for t in (out, bias, x, mat2)]
    addmm = shims.fn("aoti_torch_cpu_addmm_out", P, P, P, P, ctypes.c_double, ctypes.c_double)
    shims.check(addmm(*handles, 0.75, 1.25))
    delete(shims, *handles)
    torch.testing.assert_close(out, torch.addmm(bias, x, mat2, beta=0.75, alpha=1.25))


CONVOLUTIONS = [
    # (input shape, weight shape, stride, padding, dilation, groups, channels-last input, channels-last weight)
    ((2, 3, 9, 9), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1, False, False),
    ((2, 3, 9, 9), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1, True, False),
    ((2, 3, 9, 9), (4, 3, 3, 3), (2, 2), (0, 0), (1, 1), 1, False, True),
    ((1, 4, 10, 7), (6, 2, 3, 2), (2, 1), (0, 1), (1, 2), 2, False, False),
    ((1, 8, 6, 6), (8, 1, 3, 3), (1, 1), (1, 1), (1, 1), 8, True, True),
    ((3, 2, 15), (5, 2, 4), (2,), (3,), (2,), 1, False, False),
    ((1, 2, 4, 5, 6), (3, 2, 2, 3, 2), (1, 2, 1), (1, 0, 1), (1, 1, 2), 1, False, False),
    ((1, 2, 4, 5, 6), (3, 2, 2, 3, 2), (1, 1, 1), (0, 0, 0), (1, 1, 1), 1, True, False),
    ((2, 3, 5, 6, 7), (4, 3, 3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), 1, True, False),
]


@pytest.mark.parametrize(
    ("shape", "wshape", "stride", "padding", "dilation", "groups", "input_cl", "weight_cl"), CONVOLUTIONS
)
def test_convolution_matches_torch(
    shims: Shims,
    shape: tuple[int, ...],
    wshape: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
    input_cl: bool,
    weight_cl: bool,
) -> None:
    torch.manual_seed(2)
    channels_last = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
    x = torch.randn(*shape)
    weight = torch.randn(*wshape)
    if input_cl:
        x = x.to(memory_format=channels_last)
    if weight_cl:
        weight = weight.to(memory_format=channels_last)
    bias = torch.randn(wshape[0])
    n = len(stride)
    arrays = [(I64 * n)(*values) for values in (stride, padding, dilation, (0,) * n)]
    hx, hw, hb = handle(shims, x), handle(shims, weight), handle(shims, bias)
    bias_ref = P(hb.value)
    result = P()
    conv = shims.fn("aoti_torch_cpu_convolution", P, P, P, P, I64, P, I64, P, I64, ctypes.c_int32, P, I64, I64, P)
    shims.check(conv(hx, hw, ctypes.byref(bias_ref), arrays[0], n, arrays[1], n, arrays[2], n, 0, arrays[3], n,
                     groups, ctypes.byref(result)))
    got = as_torch(shims, result, torch.float32)
    delete(shims, hx, hw, hb, result)
    args = (stride, padding, dilation, False, (0,) * n, groups)
    want = torch.ops.aten.convolution(x, weight, bias, *args)
    assert got.shape == want.shape
    assert [got.stride()] == fake_strides(torch.ops.aten.convolution.default, x, weight, bias, *args)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


ATTENTION = [
    # (B, H, L, S, E, causal, mask kind, scale, query stored as [B, L, H, E])
    (2, 3, 5, 5, 8, False, None, None, False),
    (2, 3, 5, 5, 8, True, None, None, True),
    (1, 2, 4, 7, 6, True, None, 0.3, False),
    (1, 2, 4, 7, 6, False, "blocked", None, False),
    (2, 1, 3, 3, 4, False, "float", 0.5, True),
]


@pytest.mark.parametrize(("b", "h", "lq", "lk", "e", "causal", "mask_kind", "scale", "blhe"), ATTENTION)
def test_attention_matches_torch(
    shims: Shims, b: int, h: int, lq: int, lk: int, e: int, causal: bool, mask_kind: str | None,
    scale: float | None, blhe: bool,
) -> None:
    torch.manual_seed(3)
    q = torch.randn(b, lq, h, e).transpose(1, 2) if blhe else torch.randn(b, h, lq, e)
    k = torch.randn(b, h, lk, e)
    v = torch.randn(b, h, lk, e)
    mask = None
    if mask_kind == "blocked":
        # This op takes additive float masks only (SDPA turns bool masks into these first).
        keep = torch.rand(lq, lk) > 0.3
        keep[:, 0] = True  # no fully masked row
        mask = torch.zeros(lq, lk).masked_fill(~keep, float("-inf"))
    elif mask_kind == "float":
        mask = torch.randn(b, 1, lq, lk)
    hq, hk, hv = handle(shims, q), handle(shims, k), handle(shims, v)
    hm = handle(shims, mask) if mask is not None else None
    mask_ref = P(hm.value) if hm is not None else None
    scale_ref = ctypes.c_double(scale) if scale is not None else None
    out, lse = P(), P()
    sdpa = shims.fn("aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu", P, P, P, ctypes.c_double,
                    ctypes.c_int32, P, P, P, P)
    shims.check(sdpa(hq, hk, hv, 0.0, int(causal), ctypes.byref(mask_ref) if mask_ref else None,
                     ctypes.byref(scale_ref) if scale_ref is not None else None, ctypes.byref(out), ctypes.byref(lse)))
    got, got_lse = as_torch(shims, out, torch.float32), as_torch(shims, lse, torch.float32)
    delete(shims, hq, hk, hv, out, lse, *([hm] if hm is not None else []))
    op = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    want, want_lse = op(q, k, v, 0.0, causal, attn_mask=mask, scale=scale)
    assert [got.stride(), got_lse.stride()] == fake_strides(
        op.default, q, k, v, 0.0, causal, attn_mask=mask, scale=scale
    )
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(got_lse, want_lse, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("src_dtype", list(DTYPES))
@pytest.mark.parametrize("dst_dtype", list(DTYPES))
def test_copy_converts_like_torch(shims: Shims, src_dtype: torch.dtype, dst_dtype: torch.dtype) -> None:
    torch.manual_seed(4)
    # Values every dtype holds (0..100, halves included), plus rounding-sensitive fractions.
    values = torch.cat([torch.arange(0, 100, 0.5), torch.rand(56) * 50])
    src = values.to(src_dtype).reshape(4, 8, 8).permute(2, 0, 1)[:, 1:, ::2]  # strided, offset
    dst = torch.full((4, 3, 8), 7, dtype=dst_dtype).transpose(0, 2)  # a transposed destination
    src_b = src[:1]  # broadcast over dim 0 below
    want = dst.clone().copy_(src)
    hd, hs = handle(shims, dst), handle(shims, src)
    shims.check(shims.fn("aoti_torch_copy_", P, P, ctypes.c_int32)(hd, hs, 0))
    assert torch.equal(dst, want)
    want_b = dst.clone().copy_(src_b)
    hb = handle(shims, src_b)
    shims.check(shims.fn("aoti_torch_copy_", P, P, ctypes.c_int32)(hd, hb, 0))
    delete(shims, hd, hs, hb)
    assert torch.equal(dst, want_b)


@pytest.mark.parametrize("src_dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_negative_floats_into_uint8_wrap_like_torch(shims: Shims, src_dtype: torch.dtype) -> None:
    # torch casts a floating value to uint8 through int64 (-1.0 -> 255); a direct C++ cast is
    # undefined there, and the GPU saturates it to 0 (seen on the H200).
    src = torch.tensor([-1.0, -2.5, -100.0, -128.0, 3.0, 255.0], dtype=src_dtype)
    dst = torch.zeros(6, dtype=torch.uint8)
    want = dst.clone().copy_(src)
    hd, hs = handle(shims, dst), handle(shims, src)
    shims.check(shims.fn("aoti_torch_copy_", P, P, ctypes.c_int32)(hd, hs, 0))
    delete(shims, hd, hs)
    assert want.tolist()[:4] == [255, 254, 156, 128]
    assert torch.equal(dst, want)
