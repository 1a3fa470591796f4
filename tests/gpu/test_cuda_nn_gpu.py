"""The reference shims' CUDA convolution (cuDNN, loaded at run time) and attention
fallbacks (cuBLAS GEMMs and a softmax kernel) against torch on the same tensors: values,
and every output's sizes, strides, dtype and device as torch's own CUDA kernels return
them (what a compiled blob indexes). The zoo's convolution shapes, then random ones
(hypothesis, derandomized). With -s, each group prints its worst errors and a speed
comparison against torch's own kernels."""

from __future__ import annotations

import ctypes
import math
import os
import time

import pytest

from gpu_support import needs_gpu

pytestmark = needs_gpu()

import torch  # noqa: E402 - after the module's GPU skip
import torch.nn.functional as F  # noqa: E402 - after the module's GPU skip
from hypothesis import HealthCheck, given, settings  # noqa: E402 - after the module's GPU skip
from hypothesis import strategies as st  # noqa: E402 - after the module's GPU skip

from shims_support import reference_library, reference_prefix  # noqa: E402 - after the module's GPU skip

P, I64, I32, F64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, ctypes.c_double
CODES = {torch.float32: 6, torch.float64: 7, torch.float16: 5, torch.bfloat16: 15, torch.bool: 11, torch.int64: 4,
         torch.uint64: 29, torch.uint8: 0}
DTYPES = {v: k for k, v in CODES.items()}
# |ours - torch| <= factor * max|torch|: another algorithm (cuDNN) or summation order (attention).
CONV_TOL = {torch.float32: 2e-5, torch.float64: 1e-12, torch.float16: 4e-3, torch.bfloat16: 3e-2}
ATTN_TOL = {torch.float32: 2e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}
WORST: dict[str, float] = {}


class Shims:
    def __init__(self) -> None:
        torch.backends.cuda.matmul.allow_tf32 = False  # the shims' float32 default: no TF32
        torch.backends.cudnn.allow_tf32 = False
        self.lib = ctypes.CDLL(str(reference_library()), mode=os.RTLD_GLOBAL)
        self.prefix = reference_prefix()

    def fn(self, name: str, *argtypes: object):
        f = getattr(self.lib, self.prefix + name)
        f.restype, f.argtypes = I32, list(argtypes)
        return f

    def error(self) -> str:
        last = getattr(self.lib, self.prefix + "aoti_shim_last_error")
        last.restype = ctypes.c_char_p
        return last().decode()

    def check(self, code: int) -> None:
        if code != 0:
            raise AssertionError(f"shim error {code}: {self.error()}")

    def handle(self, t: torch.Tensor) -> P:
        out = P()
        sizes, strides = (I64 * t.dim())(*t.shape), (I64 * t.dim())(*t.stride())
        base = t.data_ptr() - t.storage_offset() * t.element_size()
        f = self.fn("aoti_torch_create_tensor_from_blob", P, I64, P, P, I64, I32, I32, I32, P)
        device = (1, t.device.index or 0) if t.is_cuda else (0, 0)
        self.check(f(base, t.dim(), sizes, strides, t.storage_offset(), CODES[t.dtype], *device, ctypes.byref(out)))
        return out

    def torch_view(self, h: P) -> torch.Tensor:
        """A torch copy of a shim tensor, read through its sizes, strides, dtype and device."""
        dim, dtype, dev = I64(), I32(), I32()
        data, sizes, strides = P(), ctypes.POINTER(I64)(), ctypes.POINTER(I64)()
        self.check(self.fn("aoti_torch_get_dim", P, P)(h, ctypes.byref(dim)))
        self.check(self.fn("aoti_torch_get_sizes", P, P)(h, ctypes.byref(sizes)))
        self.check(self.fn("aoti_torch_get_strides", P, P)(h, ctypes.byref(strides)))
        self.check(self.fn("aoti_torch_get_dtype", P, P)(h, ctypes.byref(dtype)))
        self.check(self.fn("aoti_torch_get_device_type", P, P)(h, ctypes.byref(dev)))
        self.check(self.fn("aoti_torch_get_data_ptr", P, P)(h, ctypes.byref(data)))
        shape = [sizes[i] for i in range(dim.value)]
        stride = [strides[i] for i in range(dim.value)]
        dt = DTYPES[dtype.value]
        device = "cuda" if dev.value == 1 else "cpu"
        span = 1 + sum((n - 1) * step for n, step in zip(shape, stride)) if all(shape) else 0
        if span == 0:
            return torch.empty_strided(shape, stride, dtype=dt, device=device)
        nbytes = span * torch.empty((), dtype=dt).element_size()
        if device == "cuda":
            # The bytes through __cuda_array_interface__, cloned while the handle lives (the
            # shims and torch both run on the legacy default stream here: ordered).
            buf = torch.as_tensor(_DeviceBytes(data.value, nbytes), device="cuda").clone()
        else:
            buf = torch.frombuffer(bytearray(ctypes.string_at(data.value, nbytes)), dtype=torch.uint8)
        return buf.view(dt).as_strided(shape, stride)

    def delete(self, *handles: P) -> None:
        d = self.fn("aoti_torch_delete_tensor_object", P)
        for h in handles:
            if h:
                self.check(d(h))


class _DeviceBytes:
    def __init__(self, ptr: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 3}


@pytest.fixture(scope="module")
def shims() -> Shims:
    return Shims()


def ints(values: list[int]) -> tuple[ctypes.Array, int]:
    return (I64 * len(values))(*values), len(values)


def conv_shim(shims: Shims, x, w, b, stride, padding, dilation, transposed, output_padding, groups) -> tuple[int, P]:
    f = shims.fn("aoti_torch_cuda_convolution", P, P, P, P, I64, P, I64, P, I64, I32, P, I64, I64, P)
    hx, hw = shims.handle(x), shims.handle(w)
    hb = shims.handle(b) if b is not None else None
    out = P()
    code = f(hx, hw, ctypes.byref(hb) if hb is not None else None, *ints(stride), *ints(padding), *ints(dilation),
             int(transposed), *ints(output_padding), groups, ctypes.byref(out))
    shims.delete(hx, hw, hb)
    return code, out


def close(name: str, got: torch.Tensor, want: torch.Tensor, tol: dict) -> None:
    scale = float(want.double().abs().max()) or 1.0
    err = float((got.double() - want.double()).abs().max()) if want.numel() else 0.0
    WORST[name] = max(WORST.get(name, 0.0), err / scale)
    assert err <= tol[want.dtype] * scale, (name, err, scale)


def run_conv(shims: Shims, x, w, b, stride, padding, dilation, transposed, output_padding, groups, tag: str) -> None:
    spatial = x.dim() - 2
    fns = {1: (F.conv1d, F.conv_transpose1d), 2: (F.conv2d, F.conv_transpose2d), 3: (F.conv3d, F.conv_transpose3d)}
    if transposed:
        want = fns[spatial][1](x, w, b, stride, padding, output_padding, groups, dilation)
    else:
        want = fns[spatial][0](x, w, b, stride, padding, dilation, groups)
    code, out = conv_shim(shims, x, w, b, stride, padding, dilation, transposed, output_padding, groups)
    shims.check(code)
    got = shims.torch_view(out)
    shims.delete(out)
    assert got.shape == want.shape and got.stride() == want.stride(), (tag, got.shape, got.stride(), want.stride())
    assert got.dtype == want.dtype and got.is_cuda
    close(f"conv {x.dtype}", got, want, CONV_TOL)


# The zoo's convolutions (torchvision resnet18 and mobilenet_v3_small, timm's ViT patch
# embedding, at the zoo's 64x64 inputs): (N, C, H, W, O, k, stride, padding, groups, bias).
ZOO_CONVS = [
    (2, 3, 64, 64, 64, 7, 2, 3, 1, False),    # resnet18 stem
    (2, 64, 16, 16, 64, 3, 1, 1, 1, False),   # resnet18 basic block
    (2, 64, 16, 16, 128, 1, 2, 0, 1, False),  # resnet18 downsample
    (2, 3, 64, 64, 16, 3, 2, 1, 1, False),    # mobilenet stem
    (2, 16, 32, 32, 16, 3, 2, 1, 16, False),  # mobilenet depthwise
    (2, 72, 8, 8, 72, 5, 2, 2, 72, False),    # mobilenet depthwise 5x5
    (2, 576, 2, 2, 576, 5, 1, 2, 576, True),  # mobilenet's last 5x5 depthwise (2.3 ms in cuDNN, bf16)
    (2, 16, 1, 1, 8, 1, 1, 0, 1, True),       # squeeze-excite 1x1 with bias
    (2, 3, 64, 64, 192, 16, 16, 0, 1, True),  # ViT patch embedding
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
def test_conv_zoo_shapes(shims: Shims, dtype: torch.dtype, layout: str) -> None:
    torch.manual_seed(0)
    for n, c, h, wd, o, k, s, p, g, bias in ZOO_CONVS:
        x = torch.randn(n, c, h, wd, device="cuda", dtype=dtype)
        w = torch.randn(o, c // g, k, k, device="cuda", dtype=dtype) / math.sqrt(c // g * k * k)
        if layout == "channels_last":
            x, w = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)
        b = torch.randn(o, device="cuda", dtype=dtype) if bias else None
        run_conv(shims, x, w, b, [s, s], [p, p], [1, 1], False, [0, 0], g, f"zoo {n, c, h, wd, o, k, s, p, g}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_conv_depthwise_direct_and_cudnn(shims: Shims, dtype: torch.dtype) -> None:
    """Small depthwise convolutions run on the shims' direct kernel, big ones on cuDNN: both
    against torch, with dilation, bias, a strided (sliced) input and both layouts."""
    torch.manual_seed(2)
    d = "cuda"
    for c, size, k, stride, pad, dil in ((576, 2, 5, 1, 2, 1), (24, 9, 3, 2, 2, 2), (64, 128, 3, 1, 1, 1)):
        w = torch.randn(c, 1, k, k, device=d, dtype=dtype) / k
        b = torch.randn(c, device=d, dtype=dtype)
        x = torch.randn(2, c, size, size, device=d, dtype=dtype)
        sliced = torch.randn(2, c, 2 * size, size + 1, device=d, dtype=dtype)[:, :, ::2, 1:]
        cases = [(x, w), (sliced, w)]
        if dtype != torch.float64:  # float64 stays contiguous (test_conv_every_argument)
            cases.append((x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)))
        for i, (xi, wi) in enumerate(cases):
            run_conv(shims, xi, wi, b, [stride] * 2, [pad] * 2, [dil] * 2, False, [0, 0], c, f"dw {c} {size} {i}")


# Dense convolutions for the direct kernel (conv_direct.cu): ResNet-18's at the zoo's size, and
# the edges: channels off the warp (40, 1000) and at its minimum (16), output channels off the
# tile of 4 and under it (3), pixels off the tile of 8 and under it (mobilenet's squeeze-excite
# 1x1 at 1x1), rectangular kernels, unequal stride and dilation per dim with padding, padding
# past the kernel. (N, C, H, W, O, kernel, stride, padding, dilation)
DIRECT_CONVS = [
    (2, 64, 16, 16, 64, (3, 3), (1, 1), (1, 1), (1, 1)),
    (2, 128, 8, 8, 256, (3, 3), (2, 2), (1, 1), (1, 1)),
    (2, 512, 2, 2, 512, (3, 3), (1, 1), (1, 1), (1, 1)),
    (2, 256, 4, 4, 512, (1, 1), (2, 2), (0, 0), (1, 1)),
    (2, 72, 1, 1, 24, (1, 1), (1, 1), (0, 0), (1, 1)),
    (1, 32, 6, 6, 3, (3, 3), (1, 1), (1, 1), (1, 1)),
    (1, 40, 5, 7, 6, (3, 1), (1, 1), (2, 0), (1, 1)),
    (3, 16, 9, 9, 5, (2, 3), (2, 1), (1, 2), (2, 1)),
    (1, 1000, 3, 3, 7, (3, 3), (1, 1), (3, 3), (1, 1)),
]


def direct_by_default(x: torch.Tensor, out: torch.Tensor) -> bool:
    """Whether the default route gives a float32 call to the direct kernel (small_for_direct in
    ops_cuda_conv.cpp): up to 2^16 output elements from a channels-adjacent input, else up to
    8192 of them or up to 128 output pixels."""
    if x.stride(1) == 1:
        return out.numel() <= 1 << 16
    return out.numel() <= 8192 or out.shape[0] * out.shape[2] * out.shape[3] <= 128


def profiled_calls(shims: Shims, row: str) -> int:
    """How many times the shims' profile has counted ``row`` (0 before the first)."""
    read = shims.fn("aoti_shim_profile_read", ctypes.c_char_p, ctypes.c_size_t, P)
    needed = ctypes.c_size_t()
    shims.check(read(None, 0, ctypes.byref(needed)))
    buf = ctypes.create_string_buffer(needed.value + 1024)
    shims.check(read(buf, len(buf), ctypes.byref(needed)))
    rows = dict(line.rsplit("\t", 2)[:2] for line in buf.value.decode().splitlines())
    return int(rows.get(row, 0))


def direct_cases(n, c, h, wd, o, k, dtype):
    """(input, weight, bias) of one shape in the layouts a blob may pass: packed, a sliced input
    with a strided bias, both channels-last, an input expanded over the batch (stride 0) with
    an expanded bias, a sliced (unpacked) weight, and a channels-last weight under a contiguous
    input."""
    d = "cuda"
    w = torch.randn(o, c, *k, device=d, dtype=dtype) / math.sqrt(c * k[0] * k[1])
    wide_bias = torch.randn(o, 2, device=d, dtype=dtype)
    x = torch.randn(n, c, h, wd, device=d, dtype=dtype)
    sliced = torch.randn(n, c, 2 * h, wd + 1, device=d, dtype=dtype)[:, :, ::2, 1:]
    expanded = torch.randn(1, c, h, wd, device=d, dtype=dtype).expand(n, c, h, wd)
    w_sliced = (torch.randn(o, 2 * c, *k, device=d, dtype=dtype) / math.sqrt(c * k[0] * k[1]))[:, ::2]
    return [
        (x, w, None),
        (sliced, w, wide_bias[:, 1]),
        (x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last), wide_bias[:, 0]),
        (expanded, w, torch.randn(1, device=d, dtype=dtype).expand(o)),
        (x, w_sliced, None),
        (x, w.to(memory_format=torch.channels_last), None),
    ]


@pytest.mark.parametrize("route", ["any", "direct", "cudnn"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_conv_direct_kernel(shims: Shims, dtype: torch.dtype, route: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dense 2-D convolutions on each route (AOTI_SHIM_CONV_ROUTE: "any" gives the small
    float32 ones to the direct kernel, "direct" every one it can take, "cudnn" none), against
    float64 math, in the layouts of direct_cases (taken as they are: no copy). The profile
    counts which route ran each call. The direct kernel sums in a fixed order: a second call
    is bitwise equal."""
    if route == "any":
        monkeypatch.delenv("AOTI_SHIM_CONV_ROUTE", raising=False)
    else:
        monkeypatch.setenv("AOTI_SHIM_CONV_ROUTE", route)
    tol = {torch.float32: 1e-5, torch.float64: 1e-13, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    torch.manual_seed(4)
    enable = shims.fn("aoti_shim_profile_enable", I32, P)
    was = I32()
    shims.check(enable(1, ctypes.byref(was)))
    try:
        for n, c, h, wd, o, k, stride, pad, dil in DIRECT_CONVS:
            geometry = (list(stride), list(pad), list(dil))
            for i, (xi, wi, bi) in enumerate(direct_cases(n, c, h, wd, o, k, dtype)):
                tag = f"direct {route} {dtype} {n, c, h, wd, o, k} case {i}"
                want = F.conv2d(xi.double(), wi.double(), bi.double() if bi is not None else None, *geometry)
                like = F.conv2d(xi, wi, bi, *geometry)
                small = dtype == torch.float32 and direct_by_default(xi, like)
                direct = route == "direct" or (route == "any" and small)
                before = profiled_calls(shims, "conv: direct kernel")
                runs = []
                for _ in range(2):
                    code, out = conv_shim(shims, xi, wi, bi, *geometry, False, [0, 0], 1)
                    shims.check(code)
                    runs.append(shims.torch_view(out))
                    shims.delete(out)
                assert profiled_calls(shims, "conv: direct kernel") - before == (2 if direct else 0), tag
                got = runs[0]
                assert got.shape == like.shape and got.stride() == like.stride(), (tag, got.stride(), like.stride())
                scale = float(want.abs().max()) or 1.0
                err = float((got.double() - want).abs().max())
                WORST[f"conv direct {dtype}"] = max(WORST.get(f"conv direct {dtype}", 0.0), err / scale)
                assert err <= tol * scale, (tag, err, scale)
                if direct:
                    assert torch.equal(runs[0], runs[1]), tag
    finally:
        shims.check(enable(was.value, None))


def test_conv_every_argument(shims: Shims) -> None:
    torch.manual_seed(1)
    d = "cuda"
    # 1-D (also from a transposed [N, L, C] input: the output stays contiguous), dilation, bias.
    run_conv(shims, torch.randn(2, 6, 19, device=d), torch.randn(4, 6, 3, device=d), torch.randn(4, device=d),
             [2], [1], [2], False, [0], 1, "1d")
    run_conv(shims, torch.randn(2, 19, 6, device=d).transpose(1, 2), torch.randn(4, 6, 3, device=d), None,
             [1], [0], [1], False, [0], 1, "1d transposed input")
    # 3-D, contiguous and channels-last-3d, groups.
    x3, w3 = torch.randn(1, 4, 6, 7, 8, device=d), torch.randn(8, 2, 3, 3, 3, device=d)
    run_conv(shims, x3, w3, torch.randn(8, device=d), [1, 2, 1], [1, 0, 1], [1, 1, 2], False, [0, 0, 0], 2, "3d")
    run_conv(shims, x3.to(memory_format=torch.channels_last_3d), w3, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], False,
             [0, 0, 0], 2, "3d cl")
    # Transposed, with output padding and groups, 1-D to 3-D; channels-last weight only.
    run_conv(shims, torch.randn(2, 4, 9, device=d), torch.randn(4, 3, 4, device=d), torch.randn(3, device=d),
             [3], [1], [1], True, [2], 1, "convT 1d")
    x2 = torch.randn(2, 8, 7, 5, device=d)
    run_conv(shims, x2, torch.randn(8, 3, 3, 3, device=d).to(memory_format=torch.channels_last),
             torch.randn(6, device=d), [2, 2], [1, 0], [1, 2], True, [1, 1], 2, "convT 2d")
    run_conv(shims, torch.randn(1, 4, 3, 4, 5, device=d), torch.randn(4, 2, 2, 3, 2, device=d), None,
             [2, 1, 2], [0, 1, 0], [1, 1, 1], True, [1, 0, 1], 1, "convT 3d")
    # float64 stays contiguous even from channels-last operands.
    x64 = torch.randn(2, 4, 9, 9, device=d, dtype=torch.float64).to(memory_format=torch.channels_last)
    run_conv(shims, x64, torch.randn(4, 4, 3, 3, device=d, dtype=torch.float64), None, [1, 1], [1, 1], [1, 1], False,
             [0, 0], 1, "f64")
    # A strided (sliced) input is copied to a packed layout first.
    xs = torch.randn(2, 4, 20, 20, device=d)[:, :, ::2, 1::2]
    run_conv(shims, xs, torch.randn(5, 4, 3, 3, device=d), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, "strided")


@settings(max_examples=60, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    spatial=st.integers(1, 3),
    transposed=st.booleans(),
    groups=st.sampled_from([1, 2, 3]),
    cin_per=st.integers(1, 4),
    cout_per=st.integers(1, 4),
    kernel=st.integers(1, 3),
    stride=st.integers(1, 3),
    padding=st.integers(0, 2),
    dilation=st.integers(1, 2),
    bias=st.booleans(),
    channels_last=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.float16, torch.bfloat16]),
    batch=st.integers(1, 3),
)
def test_conv_random(shims: Shims, spatial, transposed, groups, cin_per, cout_per, kernel, stride, padding, dilation,
                     bias, channels_last, dtype, batch) -> None:
    cin, cout = cin_per * groups, cout_per * groups
    size = [5 + 2 * i for i in range(spatial)]
    x = torch.randn(batch, cin, *size, device="cuda", dtype=dtype)
    wshape = (cin, cout_per, *[kernel] * spatial) if transposed else (cout, cin_per, *[kernel] * spatial)
    w = torch.randn(*wshape, device="cuda", dtype=dtype)
    if channels_last and spatial > 1:
        fmt = torch.channels_last if spatial == 2 else torch.channels_last_3d
        x = x.to(memory_format=fmt)
    extent = dilation * (kernel - 1) + 1
    if not transposed and any(s + 2 * padding < extent for s in size):
        return
    if transposed and padding * 2 >= (min(size) - 1) * stride + extent:
        return
    out_pad = [min(stride, dilation) - 1 if transposed else 0] * spatial
    b = torch.randn(cout, device="cuda", dtype=dtype) if bias else None
    run_conv(shims, x, w, b, [stride] * spatial, [padding] * spatial, [dilation] * spatial, transposed, out_pad, groups,
             "random")


def test_conv_errors(shims: Shims) -> None:
    x, w = torch.randn(2, 4, 8, 8, device="cuda"), torch.randn(4, 4, 3, 3, device="cuda")
    code, _ = conv_shim(
        shims, x, torch.randn(4, 3, 3, 3, device="cuda"), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1
    )
    assert code == 9 and "does not fit 4 input channels" in shims.error()
    code, _ = conv_shim(shims, x, w.double(), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    assert code == 11
    code, _ = conv_shim(shims, x, w.cpu(), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    assert code == 15 and "one CUDA device" in shims.error()


def sdpa_shim(shims: Shims, kind: str, q, k, v, mask, causal: bool, scale, want_lse: bool, dropout: float = 0.0,
              skip: frozenset[int] = frozenset()):
    """One attention shim call; ``skip``: the output indexes passed as nullptr, as a blob does."""
    hq, hk, hv = shims.handle(q), shims.handle(k), shims.handle(v)
    hm = shims.handle(mask) if mask is not None else None
    s = ctypes.byref(F64(scale)) if scale is not None else None
    if kind == "efficient":
        f = shims.fn(
            "aoti_torch_cuda__scaled_dot_product_efficient_attention", P, P, P, P, I32, F64, I32, P, P, P, P, P
        )
        rets = [P() for _ in range(4)]
        refs = [None if i in skip else ctypes.byref(r) for i, r in enumerate(rets)]
        code = f(hq, hk, hv, ctypes.byref(hm) if hm else None, int(want_lse), dropout, int(causal), s, *refs)
        ints_out: list[int] = []
    else:
        rets = [P() for _ in range(9)]
        i4, i5 = I64(), I64()
        refs = (
            [ctypes.byref(r) for r in rets[:4]]
            + [ctypes.byref(i4), ctypes.byref(i5)]
            + [ctypes.byref(r) for r in rets[6:]]
        )
        refs = [None if i in skip else r for i, r in enumerate(refs)]
        if kind == "cudnn":
            f = shims.fn("aoti_torch_cuda__scaled_dot_product_cudnn_attention", P, P, P, P, I32, F64, I32, I32, P,
                         *([P] * 9))
            code = f(hq, hk, hv, ctypes.byref(hm) if hm else None, int(want_lse), dropout, int(causal), 0, s, *refs)
        else:
            f = shims.fn("aoti_torch_cuda__scaled_dot_product_flash_attention", P, P, P, F64, I32, I32, P, *([P] * 9))
            code = f(hq, hk, hv, dropout, int(causal), 0, s, *refs)
        ints_out = [i4.value, i5.value]
    shims.delete(hq, hk, hv, hm)
    return code, rets, ints_out


def torch_op(kind: str, q, k, v, mask, causal, scale, want_lse):
    aten = torch.ops.aten
    if kind == "efficient":
        return aten._scaled_dot_product_efficient_attention(q, k, v, mask, want_lse, 0.0, causal, scale=scale)
    if kind == "cudnn":
        return aten._scaled_dot_product_cudnn_attention(q, k, v, mask, want_lse, 0.0, causal, False, scale=scale)
    return aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False, scale=scale)


def run_sdpa(shims: Shims, kind: str, q, k, v, mask=None, causal=False, scale=None, want_lse=True, tag="") -> None:
    code, rets, ints_out = sdpa_shim(shims, kind, q, k, v, mask, causal, scale, want_lse)
    shims.check(code)
    got = [shims.torch_view(r) if r else None for r in rets]
    shims.delete(*rets)
    # The reference values: torch's math on float64 copies (GQA by repeating key/value heads).
    group = q.shape[1] // k.shape[1]
    k64, v64 = k.double().repeat_interleave(group, 1), v.double().repeat_interleave(group, 1)
    m64 = mask if mask is None or mask.dtype == torch.bool else mask.double()
    if m64 is not None and causal:
        # torch's math refuses a mask with is_causal: the causal cut goes into the mask (top-left).
        cut = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool, device="cuda").tril()
        m64 = m64 & cut if m64.dtype == torch.bool else m64.masked_fill(~cut, float("-inf"))
    want = F.scaled_dot_product_attention(q.double(), k64, v64, m64, is_causal=causal and m64 is None, scale=scale)
    close(f"sdpa {kind} {q.dtype}", got[0], want.to(q.dtype), ATTN_TOL)
    # Layouts, dtypes and devices of every output as torch's own kernel gives them, where
    # torch's kernel takes these arguments (it may refuse some, e.g. GQA or a mask).
    try:
        ref = torch_op(kind, q, k, v, mask, causal, scale, want_lse)
    except RuntimeError:
        ref = None
    if ref is not None:
        ref = list(ref)
        ours = got[:4] + ints_out + got[6:] if kind != "efficient" else got
        assert len(ours) == len(ref)
        for i, (a, r) in enumerate(zip(ours, ref)):
            if isinstance(r, torch.Tensor):
                assert a is not None, (tag, i)
                assert (a.shape, a.stride(), a.dtype, a.device.type) == (r.shape, r.stride(), r.dtype, r.device.type), (
                    tag, kind, i, (a.shape, a.stride(), a.dtype, a.device), (r.shape, r.stride(), r.dtype, r.device))
            elif isinstance(r, int):
                assert a == r, (tag, i)
            else:
                assert a is None, (tag, i)
    # The logsumexp, where the kernel returns one, against float64 from the same inputs
    # (efficient pads its rows to 32; torch's own kernels' values are not the judge: its
    # float32 cuDNN kernel gives NaN there).
    if got[1] is not None and got[1].numel():
        lq = q.shape[2]
        scale64 = scale if scale is not None else 1 / math.sqrt(q.shape[-1])
        scores = (q.double() @ k64.transpose(-1, -2)) * scale64
        if mask is not None:
            scores = scores + (torch.zeros_like(scores).masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool
                               else mask.double())
        if causal:
            scores = scores.masked_fill(
                torch.ones(lq, k.shape[2], dtype=torch.bool, device="cuda").triu(1), float("-inf")
            )
        ref_lse = torch.logsumexp(scores, -1).float()
        ours_lse = got[1].reshape(got[1].shape[0], got[1].shape[1], -1)[..., :lq]
        close(f"lse {kind} {q.dtype}", ours_lse, ref_lse, {torch.float32: 1e-5})


def qkv(b, hq, hk, lq, lk, e, ev, dtype, layout):
    def make(h, n, d):
        if layout == "bhle":
            return torch.randn(b, h, n, d, device="cuda", dtype=dtype)
        return torch.randn(b, n, h, d, device="cuda", dtype=dtype).transpose(1, 2)

    return make(hq, lq, e), make(hk, lk, e), make(hk, lk, ev)


@pytest.mark.parametrize("kind,dtype", [("efficient", torch.float32), ("efficient", torch.bfloat16),
                                        ("cudnn", torch.bfloat16), ("cudnn", torch.float16), ("cudnn", torch.float32),
                                        ("flash", torch.bfloat16), ("flash", torch.float16)])
@pytest.mark.parametrize("layout", ["bhle", "blhe"])
def test_sdpa_against_torch(shims: Shims, kind: str, dtype: torch.dtype, layout: str) -> None:
    torch.manual_seed(2)
    # The zoo's shapes (GPT-2 and the Llama: 4 heads of 32 over 16 tokens) and larger ones.
    for b, h, lq, lk, e in [(2, 4, 16, 16, 32), (1, 8, 77, 77, 64), (3, 2, 33, 65, 64)]:
        q, k, v = qkv(b, h, h, lq, lk, e, e, dtype, layout)
        for causal in (False, True):
            run_sdpa(shims, kind, q, k, v, causal=causal, tag=f"{b, h, lq, lk, e} causal={causal}")
        run_sdpa(shims, kind, q, k, v, scale=0.3, want_lse=False, tag="scale")
        if kind != "flash":
            bias = torch.randn(b, 1, lq, lk, device="cuda", dtype=dtype).expand(b, h, lq, lk)
            run_sdpa(shims, kind, q, k, v, mask=bias, tag="additive mask")
            keep = torch.rand(lq, lk, device="cuda") > 0.3
            keep[:, 0] = True
            run_sdpa(shims, kind, q, k, v, mask=keep, causal=False, tag="bool mask")


@pytest.mark.parametrize("kind", ["efficient", "cudnn", "flash"])
def test_sdpa_grouped_query_heads(shims: Shims, kind: str) -> None:
    torch.manual_seed(3)
    dtype = torch.float32 if kind == "efficient" else torch.bfloat16
    for hq, hk, layout in [(8, 2, "bhle"), (6, 3, "blhe"), (4, 1, "bhle")]:
        q, k, v = qkv(2, hq, hk, 20, 24, 64, 32, dtype, layout)
        run_sdpa(shims, kind, q, k, v, causal=True, tag=f"gqa {hq}/{hk}")


@pytest.mark.parametrize("kind", ["efficient", "cudnn", "flash"])
def test_sdpa_outputs_a_blob_does_not_read(shims: Shims, kind: str) -> None:
    # A blob passes nullptr for the outputs it never reads (a bfloat16 default compile's cuDNN
    # attention: ret2, ret3 and ret8; run12 in docs/gpu/results-2026-12-02), as torchgen's
    # ret_pointer_can_be_null allows: the op still runs and fills the outputs it was given.
    torch.manual_seed(4)
    dtype = torch.float32 if kind == "efficient" else torch.bfloat16
    q, k, v = qkv(2, 4, 4, 16, 16, 32, 32, dtype, "bhle")
    count = 4 if kind == "efficient" else 9
    want = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True).to(dtype)
    for skipped in (frozenset({2, 3, 8} & set(range(count))), frozenset(range(1, count))):
        code, rets, _ = sdpa_shim(shims, kind, q, k, v, None, True, None, True, skip=skipped)
        shims.check(code)
        assert all(not rets[i] for i in skipped)
        close(f"sdpa {kind} without outputs {sorted(skipped)}", shims.torch_view(rets[0]), want, ATTN_TOL)
        shims.delete(*rets)


@pytest.mark.parametrize("route", ["fused", "gemm", "empty"])
@pytest.mark.parametrize("kind", ["efficient", "cudnn", "flash"])
def test_sdpa_seed_and_offset_are_zeros(shims: Shims, kind: str, route: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The philox seed and offset share one block, zeroed by the fused kernel, by a memset on
    # the GEMM route or on a call with no rows: zeros even from a dirty block of the
    # allocator's idle cache (the small blocks freed here, filled with 0xff, come first).
    torch.manual_seed(9)
    dtype = torch.float32 if kind == "efficient" else torch.bfloat16
    if route == "gemm":
        monkeypatch.setenv("AOTI_SHIM_ATTENTION_ROUTE", "gemm")
    empty = shims.fn("aoti_torch_empty_strided", I64, P, P, I32, I32, I32, P)
    data = shims.fn("aoti_torch_get_data_ptr", P, P)
    dirty = []
    for _ in range(8):
        h, ptr = P(), P()
        shims.check(empty(1, (I64 * 1)(64), (I64 * 1)(1), CODES[torch.uint8], 1, 0, ctypes.byref(h)))
        shims.check(data(h, ctypes.byref(ptr)))
        torch.as_tensor(_DeviceBytes(ptr.value, 64), device="cuda").fill_(0xFF)
        dirty.append(h)
    torch.cuda.synchronize()
    shims.delete(*dirty)
    q, k, v = qkv(2, 4, 4, 0 if route == "empty" else 16, 16, 32, 32, dtype, "bhle")
    code, rets, _ = sdpa_shim(shims, kind, q, k, v, None, True, None, True)
    shims.check(code)
    for i in (2, 3) if kind == "efficient" else (6, 7):
        got = shims.torch_view(rets[i]).view(torch.int64)  # flash's are uint64: few ops take those
        assert got.numel() and bool((got == 0).all()), (kind, route, i, got)
    shims.delete(*rets)


# Issue 38: the fused kernel (shims/src/attention_fused.cu) takes float32, float16 and
# bfloat16 at head dims 32, 64, 96 and 128 with equal query and value head dims and
# 16-byte aligned layouts; the cases below are all of that kind (the ones above with a value
# head dim of 32 under 64 query dims, and the scalar-strided ones, go down the GEMM route).
FUSED_KINDS = [("efficient", torch.float32), ("efficient", torch.bfloat16), ("cudnn", torch.bfloat16),
               ("cudnn", torch.float16), ("cudnn", torch.float32), ("flash", torch.bfloat16),
               ("flash", torch.float16)]


@pytest.mark.parametrize("kind,dtype", FUSED_KINDS)
def test_sdpa_fused_shapes(shims: Shims, kind: str, dtype: torch.dtype) -> None:
    """Every head dim the kernel has, sequence lengths that are not multiples of its 64-row
    tiles, more queries than keys and fewer, both layouts; causal or not, with the logsumexp."""
    torch.manual_seed(5)
    for b, h, lq, lk, e, layout in [(1, 2, 1, 1, 32, "bhle"), (2, 3, 65, 65, 64, "blhe"), (1, 2, 100, 37, 96, "bhle"),
                                    (2, 2, 37, 130, 128, "blhe"), (1, 4, 191, 191, 128, "bhle"),
                                    (2, 2, 64, 128, 32, "blhe"), (1, 1, 257, 300, 64, "bhle")]:
        q, k, v = qkv(b, h, h, lq, lk, e, e, dtype, layout)
        for causal in (False, True):
            run_sdpa(shims, kind, q, k, v, causal=causal, tag=f"fused {b, h, lq, lk, e, layout} causal={causal}")
        run_sdpa(shims, kind, q, k, v, scale=0.05, want_lse=kind == "flash", tag="fused scale")


@pytest.mark.parametrize("kind,dtype", [k for k in FUSED_KINDS if k[0] != "flash"])
def test_sdpa_fused_masks(shims: Shims, kind: str, dtype: torch.dtype) -> None:
    """Additive masks (broadcast over batch or heads, full, a [L, S] one) and bool masks, with
    and without the causal cut, on lengths off the tile size and L != S."""
    torch.manual_seed(6)
    for b, h, lq, lk, e in [(2, 4, 16, 16, 32), (1, 2, 70, 90, 64), (2, 2, 129, 77, 128)]:
        q, k, v = qkv(b, h, h, lq, lk, e, e, dtype, "blhe")
        bias = torch.randn(b, 1, lq, lk, device="cuda", dtype=dtype).expand(b, h, lq, lk)
        run_sdpa(shims, kind, q, k, v, mask=bias, tag="fused additive [B,1,L,S]")
        run_sdpa(shims, kind, q, k, v, mask=bias, causal=True, tag="fused additive causal")
        full = torch.randn(b, h, lq, lk, device="cuda", dtype=dtype) * 3
        run_sdpa(shims, kind, q, k, v, mask=full, tag="fused additive [B,H,L,S]")
        row = torch.randn(lq, lk, device="cuda", dtype=dtype)
        run_sdpa(shims, kind, q, k, v, mask=row, tag="fused additive [L,S]")
        keep = torch.rand(b, 1, lq, lk, device="cuda") > 0.4
        keep[..., 0] = True
        run_sdpa(shims, kind, q, k, v, mask=keep, tag="fused bool [B,1,L,S]")
        run_sdpa(shims, kind, q, k, v, mask=keep, causal=True, tag="fused bool causal")


@pytest.mark.parametrize("kind,dtype", FUSED_KINDS)
def test_sdpa_fused_grouped_query_heads(shims: Shims, kind: str, dtype: torch.dtype) -> None:
    torch.manual_seed(7)
    for hq, hk, lq, lk, e, layout in [
        (8, 2, 20, 24, 64, "bhle"),
        (6, 3, 77, 77, 32, "blhe"),
        (4, 1, 130, 70, 128, "bhle"),
        (32, 8, 65, 65, 96, "blhe"),
    ]:
        q, k, v = qkv(2, hq, hk, lq, lk, e, e, dtype, layout)
        run_sdpa(shims, kind, q, k, v, causal=True, tag=f"fused gqa {hq}/{hk}")
        run_sdpa(shims, kind, q, k, v, causal=False, tag=f"fused gqa {hq}/{hk}")
        if kind != "flash":
            bias = torch.randn(lq, lk, device="cuda", dtype=dtype)
            run_sdpa(shims, kind, q, k, v, mask=bias, tag=f"fused gqa {hq}/{hk} mask")


@pytest.mark.parametrize("route", ["any", "mma", "pipelined"])
@pytest.mark.parametrize("kind,dtype", FUSED_KINDS)
def test_sdpa_fused_long_sequence_tiles(
    shims: Shims, kind: str, dtype: torch.dtype, route: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long sequences without a mask: route "any" takes the Hopper kernels on an H100/H200 for
    16-bit calls (head dims 64 and 128 from 256 query rows: the warp-specialised kernel) and
    the mma.sync kernel's long-sequence tiles for float32; route "pipelined" gives those 16-bit
    calls to the pipelined Hopper kernel (the fallback where the driver refuses a tensor map);
    route "mma" keeps every call on the mma.sync kernel and its tiles. Values and logsumexp
    against float64 math, causal and not, grouped-query heads, a query length off the tile and
    a key length unlike it (shorter and longer), key and value heads broadcast by a zero stride
    (the warp-specialised kernel describes them as one head), and a negative scale (which the
    Hopper kernels leave to the mma.sync kernel)."""
    if route != "any":
        monkeypatch.setenv("AOTI_SHIM_ATTENTION_ROUTE", route)
    torch.manual_seed(9)
    for b, hq, hk, lq, lk, e, layout in [
        (1, 4, 2, 1100, 1100, 128, "blhe"),
        (1, 2, 2, 1024, 1300, 128, "bhle"),
        (2, 2, 1, 520, 520, 64, "blhe"),
        (1, 2, 2, 777, 600, 64, "bhle"),
        (2, 4, 1, 300, 260, 64, "blhe"),
        (1, 2, 2, 256, 700, 128, "bhle"),
    ]:
        q, k, v = qkv(b, hq, hk, lq, lk, e, e, dtype, layout)
        run_sdpa(shims, kind, q, k, v, causal=True, tag=f"long {lq}x{lk} e={e} causal")
        run_sdpa(shims, kind, q, k, v, causal=False, tag=f"long {lq}x{lk} e={e}")
    q, k, v = qkv(1, 4, 1, 400, 400, 128, 128, dtype, "bhle")
    k, v = k.expand(1, 4, 400, 128), v.expand(1, 4, 400, 128)
    run_sdpa(shims, kind, q, k, v, causal=True, tag="key and value heads broadcast")
    run_sdpa(shims, kind, q, k, v, causal=True, scale=-0.05, tag="negative scale")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_sdpa_gemm_route_still_right(shims: Shims, dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch) -> None:
    """The GEMM route (the fallback for what the fused kernel does not take), forced by
    AOTI_SHIM_ATTENTION_ROUTE=gemm on shapes the kernel would take, and reached on its own by
    a head dim the kernel lacks (80) and by a query sliced off its 16-byte alignment."""
    torch.manual_seed(8)
    kind = "efficient" if dtype == torch.float32 else "cudnn"
    q, k, v = qkv(2, 4, 2, 33, 47, 64, 64, dtype, "blhe")
    monkeypatch.setenv("AOTI_SHIM_ATTENTION_ROUTE", "gemm")
    run_sdpa(shims, kind, q, k, v, causal=True, tag="gemm forced")
    monkeypatch.delenv("AOTI_SHIM_ATTENTION_ROUTE")
    q, k, v = qkv(1, 2, 2, 40, 40, 80, 80, dtype, "bhle")
    run_sdpa(shims, kind, q, k, v, causal=True, tag="gemm head dim 80")
    wide = torch.randn(1, 2, 40, 65, device="cuda", dtype=dtype)
    q = wide[..., 1:]  # base and row stride off 16 bytes: not the kernel's
    k, v = torch.randn(1, 2, 40, 64, device="cuda", dtype=dtype), torch.randn(1, 2, 40, 64, device="cuda", dtype=dtype)
    run_sdpa(shims, kind, q, k, v, causal=False, tag="gemm unaligned")


def test_sdpa_errors(shims: Shims) -> None:
    q, k, v = qkv(1, 2, 2, 8, 8, 16, 16, torch.float32, "bhle")
    code, _, _ = sdpa_shim(shims, "efficient", q, k, v, None, False, None, False, dropout=0.1)
    assert code == 19 and "inference only" in shims.error()
    code, _, _ = sdpa_shim(shims, "efficient", q, k.cpu(), v, None, False, None, False)
    assert code == 15


def bench_ms(fn, iters: int = 50) -> float:
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters * 1e3


def blob_call(shims: Shims, kind: str, q, k, v):
    """One causal attention call as a blob makes it: the input handles made once (a blob has
    them already), the op called with them, its outputs deleted; ctypes' function objects
    made once. Returns the call and the handles to delete afterwards."""
    hq, hk, hv = shims.handle(q), shims.handle(k), shims.handle(v)
    delete = shims.fn("aoti_torch_delete_tensor_object", P)
    if kind == "efficient":
        f = shims.fn(
            "aoti_torch_cuda__scaled_dot_product_efficient_attention", P, P, P, P, I32, F64, I32, P, P, P, P, P
        )
        rets = [P() for _ in range(4)]
        refs = [ctypes.byref(r) for r in rets]
        args = (hq, hk, hv, None, 0, 0.0, 1, None, *refs)
    else:
        rets = [P() for _ in range(9)]
        i4, i5 = I64(), I64()
        refs = (
            [ctypes.byref(r) for r in rets[:4]]
            + [ctypes.byref(i4), ctypes.byref(i5)]
            + [ctypes.byref(r) for r in rets[6:]]
        )
        if kind == "cudnn":
            f = shims.fn("aoti_torch_cuda__scaled_dot_product_cudnn_attention", P, P, P, P, I32, F64, I32, I32, P,
                         *([P] * 9))
            args = (hq, hk, hv, None, 0, 0.0, 1, 0, None, *refs)
        else:
            f = shims.fn("aoti_torch_cuda__scaled_dot_product_flash_attention", P, P, P, F64, I32, I32, P, *([P] * 9))
            args = (hq, hk, hv, 0.0, 1, 0, None, *refs)
    outs = [r for i, r in enumerate(rets) if kind == "efficient" or i not in (4, 5)]

    def call() -> None:
        assert f(*args) == 0
        for r in outs:
            if r:
                delete(r)
                r.value = None

    return call, (hq, hk, hv)


def test_speed_against_torch(shims: Shims, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a pass/fail check: prints ours against torch's own kernels (median of 3 x 50 runs),
    for attention each route: fused (the Hopper kernel where it takes the call), the mma.sync
    kernel (AOTI_SHIM_ATTENTION_ROUTE=mma) and the GEMM route (=gemm)."""
    rows = []
    attention = []
    for shape in [(2, 4, 16, 32), (4, 16, 512, 64), (1, 32, 2048, 128)]:  # the zoo's, then two larger
        for kind, dtype in [("efficient", torch.float32), ("cudnn", torch.bfloat16), ("cudnn", torch.float16),
                            ("flash", torch.bfloat16), ("flash", torch.float16)]:
            b, h, n, e = shape
            q, k, v = qkv(b, h, h, n, n, e, e, dtype, "blhe")

            ours, handles = blob_call(shims, kind, q, k, v)

            def theirs() -> None:
                torch_op(kind, q, k, v, None, True, None, False)  # noqa: B023 - timed within this iteration

            times = {}
            for label in ("fused", "mma", "gemm"):
                if label != "fused":
                    monkeypatch.setenv("AOTI_SHIM_ATTENTION_ROUTE", label)
                times[label] = sorted(bench_ms(ours) for _ in range(3))[1]
            monkeypatch.delenv("AOTI_SHIM_ATTENTION_ROUTE")
            shims.delete(*handles)
            t_theirs = sorted(bench_ms(theirs) for _ in range(3))[1]
            attention.append((f"sdpa {kind} {str(dtype)[6:]} causal B,H,L,E={shape}", times, t_theirs))
    print("\n# attention speed, ms per call (ours through ctypes, called as a blob calls it)")
    for name, t, theirs in attention:
        print(f"{name:52s} fused {t['fused']:7.3f}  mma {t['mma']:7.3f}  gemm {t['gemm']:7.3f}  "
              f"torch {theirs:7.3f}  fused/torch {t['fused'] / theirs:5.2f}  mma/torch {t['mma'] / theirs:5.2f}  "
              f"gemm/torch {t['gemm'] / theirs:5.2f}")
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(32, 64, 56, 56, device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
        w = torch.randn(64, 64, 3, 3, device="cuda", dtype=dtype).to(memory_format=torch.channels_last)

        def conv_ours() -> None:
            code, out = conv_shim(shims, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)  # noqa: B023 - timed within this iteration
            assert code == 0
            shims.delete(out)

        def conv_theirs() -> None:
            F.conv2d(x, w, None, 1, 1)  # noqa: B023 - timed within this iteration

        rows.append(
            (
                f"conv2d {str(dtype)[6:]} 32x64x56x56 3x3 channels-last",
                sorted(bench_ms(conv_ours) for _ in range(3))[1],
                sorted(bench_ms(conv_theirs) for _ in range(3))[1],
            )
        )
    print("\n# speed: ours (shim call through ctypes) against torch's own op, ms per call")
    for name, a, b in rows:
        print(f"{name:60s} ours {a:8.3f}  torch {b:8.3f}  ours/torch {a / b:6.2f}")
    print("# worst error / max|reference| per group:", {k: f"{v:.2e}" for k, v in sorted(WORST.items())})
