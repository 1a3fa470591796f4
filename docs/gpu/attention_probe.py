"""The fused attention kernel's tiles against torch's own kernels, per call on the GPU.

    python3 docs/gpu/attention_probe.py [--out DIR]

Builds docs/gpu/attention_probe.cu (the shims' kernel sources at several template arguments:
the mma.sync kernel's tiles, the Hopper kernel) with nvcc, once per dtype, and for each
shape and dtype prints each tile's GPU time per call (CUDA events around 50 back-to-back calls,
the median of 3), its ratio to torch's kernel on the same inputs (flash and cuDNN for 16-bit
types, the memory-efficient kernel for float32), and its worst error against float64 math over
max|reference|. Causal, `[B, L, H, E]` inputs viewed as `[B, H, L, E]`, as the zoo's
transformers pass them. Needs torch with CUDA and nvcc on PATH.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
DTYPES = {"float32": (torch.float32, 6, "float"), "bfloat16": (torch.bfloat16, 15, "__nv_bfloat16"),
          "float16": (torch.float16, 5, "__half")}
SHAPES = [(4, 16, 512, 64), (1, 32, 2048, 128), (2, 16, 1024, 64), (8, 16, 256, 128)]
# Also timed without the causal cut (the zoo's encoders).
FULL = [(1, 32, 2048, 128), (4, 16, 512, 64)]
P, I64 = ctypes.c_void_p, ctypes.c_int64
HANG_S = 30


def nvcc_command(out: Path, dtype: str, *, link: bool = True) -> list[str]:
    """nvcc for one dtype's probe: a shared library of sm_90a code, or (link=False) an object
    of PTX only, as tests/test_gpu_kit.py builds it on a machine without a GPU or a static CUDA
    runtime (every template instantiated and checked, no ptxas: a third of the time)."""
    kind = ["-shared", "--generate-code=arch=compute_90a,code=sm_90a", "-Xptxas", "-v"] if link else [
        "-c", "--generate-code=arch=compute_90a,code=compute_90a"]
    return ["nvcc", "-O3", "-std=c++17", *kind, "-Xcompiler", "-fPIC", f"-DPROBE_T={DTYPES[dtype][2]}",
            str(HERE / "attention_probe.cu"), "-o", str(out)]


def build(work: Path, dtype: str) -> ctypes.CDLL:
    out = work / f"probe_{dtype}.so"
    cmd = nvcc_command(out, dtype)
    done = subprocess.run(cmd, capture_output=True, text=True)
    spills = [ln for ln in done.stderr.splitlines() if "spill" in ln and ("bytes spill stores" in ln)]
    regs = [ln.strip() for ln in done.stderr.splitlines() if "Used" in ln and "registers" in ln]
    if done.returncode != 0:
        sys.exit(f"nvcc failed for {dtype}:\n{done.stderr[-4000:]}")
    print(f"# {dtype}: built; ptxas per kernel (registers, spills):")
    for r, s in zip(regs, spills):
        print(f"#   {r} | {s.strip()}")
    return ctypes.CDLL(str(out))


def time_ms(fn, iters: int = 50) -> float:
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    runs = []
    for _ in range(3):
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        runs.append(start.elapsed_time(end) / iters)
    return sorted(runs)[1]


def torch_kernels(dtype: torch.dtype, causal: bool):
    aten = torch.ops.aten
    if dtype == torch.float32:
        return {
            "efficient": lambda q, k, v: aten._scaled_dot_product_efficient_attention(q, k, v, None, False, 0.0, causal)
        }
    return {
        "flash": lambda q, k, v: aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False),
        "cudnn": lambda q, k, v: aten._scaled_dot_product_cudnn_attention(q, k, v, None, False, 0.0, causal, False),
    }


def check_products(lib: ctypes.CDLL, dtype: torch.dtype, stream: int) -> None:
    """The Hopper kernel's two products alone against float64 math: S = Q K^T and O = P V."""
    fn = lib.probe_products
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.c_int, P, P, P, P, P]
    for e in (64, 128):
        q = torch.randn(128, e, device="cuda", dtype=dtype)
        k = torch.randn(128, e, device="cuda", dtype=dtype)
        v = torch.randn(128, e, device="cuda", dtype=dtype)
        pin = torch.rand(128, 128, device="cuda")
        cases = [
            ("S = Q K^T", 0, q, k, q.double() @ k.double().T, (128, 128)),
            ("O = P V", 1, None, v, pin.to(dtype).double() @ v.double(), (128, e)),
        ]
        for name, which, a, b, want, shape in cases:
            out = torch.full(shape, float("nan"), device="cuda")
            rc = fn(which, e, P(a.data_ptr() if a is not None else 0), P(b.data_ptr()), P(pin.data_ptr()),
                    P(out.data_ptr()), P(stream))
            torch.cuda.synchronize()
            err = (out.double() - want).abs().max().item() / want.abs().max().item()
            print(f"# products {str(dtype)[6:]} E={e}: {name:26s} rc {rc}  error {err:.2e}")


def time_case(lib: ctypes.CDLL, tiles: list[str], chosen: list[int], dtype: str, shape: tuple[int, ...],
              causal: bool, stream: int) -> None:
    """One shape and dtype: torch's kernels, then each chosen variant, with its error against float64."""
    b, h, n, e = shape
    tdtype, code, _ = DTYPES[dtype]
    fn = lib.probe_attention
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.c_int, P, P, P, P, P, P, P, ctypes.c_float, ctypes.c_int, P]
    q, k, v = (torch.randn(b, n, h, e, device="cuda", dtype=tdtype).transpose(1, 2) for _ in range(3))
    want = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
    peak = want.abs().max().item()
    out = torch.empty(b, h, n, e, device="cuda", dtype=tdtype)
    dims = (I64 * 6)(b, h, h, n, n, e)
    strides = (I64 * 15)(*q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *out.stride()[:3], 0, 0, 0)
    theirs = {name: time_ms(lambda f=f: f(q, k, v)) for name, f in torch_kernels(tdtype, causal).items()}
    best = min(theirs.values())
    flops = 4 * b * h * n * n * e / (2 if causal else 1)  # causal: half the score matrix
    label = f"{dtype} B,H,L,E={shape}{'' if causal else ' not causal'}"
    print(f"\n## {label}: torch " + ", ".join(f"{name} {t:.4f} ms" for name, t in theirs.items()))
    args = (code, P(q.data_ptr()), P(k.data_ptr()), P(v.data_ptr()), P(out.data_ptr()), None,
            ctypes.cast(dims, P), ctypes.cast(strides, P), e**-0.5, int(causal), P(stream))
    for i in chosen:
        tile = tiles[i]

        def call(i: int = i) -> None:
            rc = fn(i, *args)
            if rc != 0:
                raise RuntimeError(f"probe_attention returned {rc}")

        # A kernel that never finishes (a barrier nobody arrives at) would hang the process:
        # end it with a line that names the variant instead.
        watchdog = threading.Timer(HANG_S, lambda tile=tile: (print(f"   {tile:26s} hung: no finish in {HANG_S} s",
                                                                    flush=True), os._exit(3)))
        watchdog.start()
        try:
            out.zero_()
            call()
            torch.cuda.synchronize()
            err = (out.double() - want).abs().max().item() / peak
            t = time_ms(call)
        except RuntimeError as exc:
            print(f"   {tile:26s} {exc}")
            continue
        finally:
            watchdog.cancel()
        ratios = "  ".join(f"/{name} {t / tt:5.2f}" for name, tt in theirs.items())
        print(f"   {tile:26s} {t:.4f} ms  {flops / t / 1e9:6.1f} TFLOP/s  {ratios}  err {err:.2e}"
              f"{'  (best)' if t < best else ''}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtypes", default="bfloat16,float16,float32")
    ap.add_argument("--variants", default="",
                    help="comma-separated name prefixes of the variants to time (default: all)")
    ap.add_argument("--products-only", action="store_true",
                    help="only the Hopper kernel's two products (a fault there ends the process)")
    args = ap.parse_args()
    torch.manual_seed(0)
    dtypes = args.dtypes.split(",")
    unknown = [d for d in dtypes if d not in DTYPES]
    if unknown:
        ap.error(f"--dtypes: {', '.join(unknown)} unknown (known: {', '.join(DTYPES)})")
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(len(dtypes)) as pool:
        libs = dict(zip(dtypes, pool.map(lambda d: build(Path(tmp), d), dtypes)))
        first = next(iter(libs.values()))
        first.probe_variant.restype = ctypes.c_char_p
        tiles: list[str] = []
        while (name := first.probe_variant(len(tiles))) is not None:
            tiles.append(name.decode())
        print(f"# device: {torch.cuda.get_device_name()}; torch {torch.__version__}")
        print("# mma RxN wW: the mma.sync kernel (R query rows per warp, N keys per tile, W warps); "
              "wgmma: the Hopper kernel; ws: its warp-specialised form (TMA, ping-pong)")
        stream = torch.cuda.current_stream().cuda_stream
        wanted = [w.strip() for w in args.variants.split(",") if w.strip()]
        chosen = [i for i, name in enumerate(tiles) if not wanted or any(name.startswith(w) for w in wanted)]
        if not chosen:
            print(f"attention_probe: --variants {args.variants!r} names none of: {', '.join(tiles)}", file=sys.stderr)
            return 2
        for dtype in dtypes:
            if dtype != "float32":
                check_products(libs[dtype], DTYPES[dtype][0], stream)
        if args.products_only:
            return 0
        for shape, causal in [(s, True) for s in SHAPES] + [(s, False) for s in FULL]:
            for dtype in dtypes:
                time_case(libs[dtype], tiles, chosen, dtype, shape, causal, stream)
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
