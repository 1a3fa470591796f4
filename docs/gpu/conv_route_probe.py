"""The shims' two routes for a dense convolution, cuDNN and the direct kernel, side by side.

    PYTHONPATH=/tmp/site python3 docs/gpu/conv_route_probe.py [float32|bfloat16|float16] [model ...]

after run_h200.sh's install. TF32 off, as the smoke runs it. For every dense ``nn.Conv2d`` of
each zoo model's eager run (default: resnet18) and for a ladder of bigger ResNet shapes, in
both layouts, per call: host and GPU microseconds through the shims with
``AOTI_SHIM_CONV_ROUTE=cudnn`` and ``=direct`` (read by the shims per call), and torch's own
``F.conv2d``; the largest difference between the two routes' outputs, over the output's
largest magnitude; and where the default route sends the call. Then the totals per model. It
is the measurement behind the direct kernel's size bound (``kDirectOutputs``).
"""

from __future__ import annotations

import ctypes
import os
import sys
import time

import torch
import torch.nn.functional as F
from conv_probe import DTYPES, P, Shims, host_us, ints
from conv_tuning_probe import gpu_us, kept_convolutions

from aoti_shim.smoke import zoo

CALLS = 50
DIRECT_OUTPUTS = 1 << 16  # kDirectOutputs in shims/src/ops_cuda_conv.cpp (small_for_direct)
# (N, C, H, W, O, k, stride, padding): ResNet's stages at 224x224, batch 1 and 8.
LADDER = [
    (1, 64, 56, 56, 64, 3, 1, 1),
    (1, 128, 28, 28, 128, 3, 1, 1),
    (1, 256, 14, 14, 256, 3, 1, 1),
    (1, 512, 7, 7, 512, 3, 1, 1),
    (8, 64, 56, 56, 64, 3, 1, 1),
    (8, 128, 28, 28, 128, 3, 1, 1),
    (8, 256, 14, 14, 256, 3, 1, 1),
    (8, 512, 7, 7, 512, 3, 1, 1),
    (8, 256, 14, 14, 1024, 1, 1, 0),
]


class _DeviceBytes:
    def __init__(self, ptr: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 3}


def read_output(shims: Shims, h: P, like: torch.Tensor) -> torch.Tensor:
    """A copy of the shims' output, read with the layout torch gives the same call (``like``)."""
    data = P()
    assert shims.fn("aoti_torch_get_data_ptr", P, P)(h, ctypes.byref(data)) == 0
    span = 1 + sum((n - 1) * step for n, step in zip(like.shape, like.stride()))
    raw = torch.as_tensor(_DeviceBytes(data.value, span * like.element_size()), device="cuda").clone()
    return raw.view(like.dtype).as_strided(like.shape, like.stride())


def measure(shims: Shims, x: torch.Tensor, w: torch.Tensor, stride, padding, dilation) -> list[float]:
    args = (*ints(stride), *ints(padding), *ints(dilation), 0, *ints((0, 0)), 1)
    hx, hw = shims.handle(x), shims.handle(w)
    outs = {}

    def ours() -> None:
        out = P()
        code = shims.conv(hx, hw, None, *args, ctypes.byref(out))
        assert code == 0, code
        shims.delete(out)

    like = F.conv2d(x, w, None, stride, padding, dilation)
    row = []
    for route in ("cudnn", "direct"):
        os.environ["AOTI_SHIM_CONV_ROUTE"] = route
        row += [host_us(ours, CALLS, warm=3), gpu_us(ours, CALLS)]
        out = P()
        assert shims.conv(hx, hw, None, *args, ctypes.byref(out)) == 0
        outs[route] = read_output(shims, out, like)
        shims.delete(out)
    del os.environ["AOTI_SHIM_CONV_ROUTE"]
    shims.delete(hx), shims.delete(hw)

    def theirs() -> None:
        F.conv2d(x, w, None, stride, padding, dilation)

    row += [host_us(theirs, CALLS, warm=3), gpu_us(theirs, CALLS)]
    scale = float(outs["cudnn"].double().abs().max()) or 1.0
    row.append(float((outs["cudnn"].double() - outs["direct"].double()).abs().max()) / scale)
    return row


def report(shims: Shims, title: str, cases: list[tuple[torch.Tensor, torch.Tensor, tuple, tuple, tuple]]) -> None:
    print(title)
    print(
        f"{'layout':6} {'cudnn host':>10} {'gpu':>7} {'direct host':>11} {'gpu':>7} {'torch host':>10} {'gpu':>7} "
        f"{'diff':>8} default  shape"
    )
    for layout, fmt in (("NHWC", torch.channels_last), ("NCHW", torch.contiguous_format)):
        sums = [0.0] * 6
        for x0, w0, stride, padding, dilation in cases:
            x, w = x0.contiguous(memory_format=fmt), w0.contiguous(memory_format=fmt)
            row = measure(shims, x, w, stride, padding, dilation)
            sums = [a + b for a, b in zip(sums, row[:6])]
            out_h = (x.shape[2] + 2 * padding[0] - dilation[0] * (w.shape[2] - 1) - 1) // stride[0] + 1
            out_w = (x.shape[3] + 2 * padding[1] - dilation[1] * (w.shape[3] - 1) - 1) // stride[1] + 1
            outputs, pixels = x.shape[0] * w.shape[0] * out_h * out_w, x.shape[0] * out_h * out_w
            fits = outputs <= DIRECT_OUTPUTS if x.stride(1) == 1 else outputs <= 8192 or pixels <= 128
            small = fits and x.shape[1] >= 16
            default = "direct" if small and x.dtype == torch.float32 else "cudnn"
            shape = f"{tuple(x.shape)} -> {tuple(w.shape)} s{stride[0]}"
            print(
                f"{layout:6} {row[0]:10.1f} {row[1]:7.1f} {row[2]:11.1f} {row[3]:7.1f} {row[4]:10.1f} {row[5]:7.1f} "
                f"{row[6]:8.1e} {default:7}  {shape}"
            )
        print(
            f"{layout:6} {sums[0]:10.1f} {sums[1]:7.1f} {sums[2]:11.1f} {sums[3]:7.1f} {sums[4]:10.1f} {sums[5]:7.1f}"
            f" {'':8} {'':7}  total"
        )


def main() -> None:
    torch.backends.cudnn.allow_tf32 = False
    dtype_name = sys.argv[1] if len(sys.argv) > 1 else "float32"
    if dtype_name not in DTYPES:
        raise SystemExit(f"conv_route_probe: unknown dtype {dtype_name!r}: one of {', '.join(DTYPES)}")
    dtype = DTYPES[dtype_name][0]
    models = sys.argv[2:] or ["resnet18"]
    t0 = time.perf_counter()
    shims = Shims()
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}, {dtype}")
    for name in models:
        model, inputs = getattr(zoo, name)("cuda")
        model = model.to("cuda").eval()
        kept = [
            (x.to(dtype), m.weight.detach().to(dtype), m.stride, m.padding, m.dilation)
            for x, m in kept_convolutions(model, inputs)
            if m.groups == 1
        ]
        report(shims, f"{name}: {len(kept)} dense convolutions; us per call, {CALLS} calls each", kept)
    ladder = []
    for n, c, h, wd, o, k, s, pad in LADDER:
        x = torch.randn(n, c, h, wd, device="cuda", dtype=dtype)
        w = torch.randn(o, c, k, k, device="cuda", dtype=dtype) / (c * k * k) ** 0.5
        ladder.append((x, w, (s, s), (pad, pad), (1, 1)))
    report(shims, "ResNet stages at 224x224", ladder)
    print(f"probe: {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
