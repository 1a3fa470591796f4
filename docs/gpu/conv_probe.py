"""Where the shims' CUDA convolution spends its host time (the zoo bench's profile puts 85 %
of mobilenet_v3_small's inference inside cuDNN's forward call): one device call,

    PYTHONPATH=/tmp/site python3 docs/gpu/conv_probe.py [float32|bfloat16|float16]

after run_h200.sh's install. For a few of the zoo's convolution shapes (float32 by default, TF32
off, as the smoke runs them; or the 16-bit type a bfloat16 zoo run uses) it prints, per call:

- host: microseconds the shim call takes on the host, with the GPU idle;
- busy: the same while the stream still runs a long sleep kernel queued before the calls
  (a call that waits for the stream, a synchronisation inside, takes the sleep);
- gpu: microseconds of GPU time per call, between CUDA events around the calls queued behind
  that sleep (no host gaps between them, as long as the host finishes queueing first);
- the same three for torch's own F.conv2d (cuDNN through torch's frontend), for scale.
"""

from __future__ import annotations

import ctypes
import sys
import time

import torch
import torch.nn.functional as F

from aoti_shim.checks.abi.prefix import built_prefix
from aoti_shim.paths import shim_library

P, I64, I32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
CALLS = 200
# torch dtype -> c10::ScalarType, as the shims take it.
DTYPES = {"float32": (torch.float32, 6), "bfloat16": (torch.bfloat16, 15), "float16": (torch.float16, 5)}

# (name, input NCHW, out channels, kernel, stride, padding, groups)
SHAPES = [
    ("resnet18 3x3 64", (2, 64, 16, 16), 64, 3, 1, 1, 1),
    ("resnet18 3x3 256 s2", (2, 128, 8, 8), 256, 3, 2, 1, 1),
    ("mobilenet dw 3x3 72", (2, 72, 16, 16), 72, 3, 2, 1, 72),
    ("mobilenet dw 5x5 240", (2, 240, 4, 4), 240, 5, 1, 2, 240),
    ("mobilenet 1x1 96->576", (2, 96, 2, 2), 576, 1, 1, 0, 1),
]


class Shims:
    def __init__(self) -> None:
        library = shim_library()
        self.lib = ctypes.CDLL(str(library))
        self.prefix = built_prefix(library)
        self.from_blob = self.fn("aoti_torch_create_tensor_from_blob", P, I64, P, P, I64, I32, I32, I32, P)
        self.conv = self.fn("aoti_torch_cuda_convolution", P, P, P, P, I64, P, I64, P, I64, I32, P, I64, I64, P)
        self.delete = self.fn("aoti_torch_delete_tensor_object", P)

    def fn(self, name: str, *argtypes: object):
        f = getattr(self.lib, self.prefix + name)
        f.restype, f.argtypes = I32, list(argtypes)
        return f

    def handle(self, t: torch.Tensor) -> P:
        out = P()
        sizes, strides = (I64 * t.dim())(*t.shape), (I64 * t.dim())(*t.stride())
        scalar_type = next(code for dtype, code in DTYPES.values() if dtype == t.dtype)
        code = self.from_blob(
            t.data_ptr(), t.dim(), sizes, strides, 0, scalar_type, 1, t.device.index or 0, ctypes.byref(out)
        )
        assert code == 0, code
        return out


def ints(v: tuple[int, ...]):
    return (I64 * len(v))(*v), len(v)


def host_us(fn, calls: int = CALLS, warm: int = 10) -> float:
    """Host microseconds a call of ``fn`` takes, timed over ``calls`` after ``warm`` untimed
    ones, with the GPU idle before and drained after."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - t0) / calls * 1e6
    torch.cuda.synchronize()
    return host


def main() -> None:
    torch.backends.cudnn.allow_tf32 = False
    dtype = DTYPES[sys.argv[1] if len(sys.argv) > 1 else "float32"][0]
    shims = Shims()
    print(
        f"shims {shim_library()} prefix {shims.prefix}; torch {torch.__version__}, "
        f"cuDNN {torch.backends.cudnn.version()}; {dtype}"
    )
    print(f"{'shape':24} {'layout':6} {'ours host':>10} {'busy':>8} {'gpu':>8}   {'torch host':>10} {'busy':>8} {'gpu':>8}")
    for name, shape, cout, k, s, pad, groups in SHAPES:
        for layout in ("NCHW", "NHWC"):
            fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
            x = torch.randn(*shape, device="cuda", dtype=dtype).to(memory_format=fmt)
            w = torch.randn(cout, shape[1] // groups, k, k, device="cuda", dtype=dtype).to(memory_format=fmt)
            hx, hw = shims.handle(x), shims.handle(w)
            args = (*ints((s, s)), *ints((pad, pad)), *ints((1, 1)), 0, *ints((0, 0)), groups)

            def ours() -> None:
                out = P()
                code = shims.conv(hx, hw, None, *args, ctypes.byref(out))
                assert code == 0, code
                shims.delete(out)

            def theirs() -> None:
                F.conv2d(x, w, None, s, pad, 1, groups)

            row = []
            for fn in (ours, theirs):
                host = host_us(fn)
                # Calls queued behind a long sleep kernel: the host's time per call, and
                # the GPU's time between the events, with no host gaps between the calls.
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda._sleep(400_000_000)
                start.record()
                t0 = time.perf_counter()
                for _ in range(CALLS):
                    fn()
                busy = (time.perf_counter() - t0) / CALLS * 1e6
                end.record()
                torch.cuda.synchronize()
                gpu = start.elapsed_time(end) / CALLS * 1e3
                row += [host, busy, gpu]
            shims.delete(hx), shims.delete(hw)
            print(f"{name:24} {layout:6} {row[0]:10.1f} {row[1]:8.1f} {row[2]:8.1f}   {row[3]:10.1f} {row[4]:8.1f} {row[5]:8.1f}")


if __name__ == "__main__":
    main()
