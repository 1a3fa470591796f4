"""What the shim profile costs when it is off: the same shims built with the profile
compiled in (AOTI_SHIM_PROFILING=ON, off at run time) and compiled out (OFF), timed
against each other in interleaved rounds on two hot paths: an ``empty_strided`` +
``delete_tensor_object`` pair and an ``aoti_torch_get_dim`` call (the cheapest entry
point, where a branch would weigh most). Each ratio is in/out time per call, the
geometric mean of per-round ratios with a 95% bootstrap interval.

    cmake -S shims -B build-on  && cmake --build build-on
    cmake -S shims -B build-off -DAOTI_SHIM_PROFILING=OFF && cmake --build build-off
    python bench/profile_overhead.py build-on/libaoti_shim.so build-off/libaoti_shim.so
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from aoti_shim.errors import AotiShimError
from shim_latency import ALLOC_SHAPE, AllocApi, Interval, alloc_pairs, shims_prefix


def getter_calls_per_s(library: ctypes.CDLL, prefix: str, handle: ctypes.c_void_p, seconds: float) -> float:
    get_dim = getattr(library, f"{prefix}aoti_torch_get_dim")
    get_dim.argtypes, get_dim.restype = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)], ctypes.c_int32
    out = ctypes.c_int64()
    ref = ctypes.byref(out)
    batch, done = 500, 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(batch):
            get_dim(handle, ref)
        done += batch
    return done / (time.perf_counter() - start)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("compiled_in", type=Path)
    p.add_argument("compiled_out", type=Path)
    p.add_argument("--prefix", help="the shims' prefix (default: read from the compiled-in library)")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--seconds", type=float, default=0.1, help="per library per path per round")
    args = p.parse_args(argv)
    try:
        args.prefix = shims_prefix(args.compiled_in, args.prefix)
    except AotiShimError as e:
        print(f"profile_overhead: {e}", file=sys.stderr)
        return e.exit_code
    # RTLD_LOCAL: both define the same prefixed names; each is reached through its handle.
    libs = {name: ctypes.CDLL(str(path.resolve()), mode=os.RTLD_LOCAL | os.RTLD_NOW)
            for name, path in (("in", args.compiled_in), ("out", args.compiled_out))}
    if not hasattr(libs["in"], f"{args.prefix}aoti_shim_profile_enable"):
        print(f"{args.compiled_in}: no profile ABI", file=sys.stderr)
        return 2
    handles = {}
    for name, lib in libs.items():
        api = AllocApi(lib, args.prefix)
        sizes = (ctypes.c_int64 * 2)(*ALLOC_SHAPE)
        h = ctypes.c_void_p()
        assert api.empty(2, sizes, None, 6, 0, 0, ctypes.byref(h)) == 0
        handles[name] = h
    ratios: dict[str, list[float]] = {"empty_strided + delete pair": [], "get_dim call": []}
    for r in range(args.rounds):
        order = ["in", "out"] if r % 2 == 0 else ["out", "in"]
        pairs, gets = {}, {}
        for name in order:
            pairs[name] = alloc_pairs(AllocApi(libs[name], args.prefix), "cpu", args.seconds, lambda: None)
            gets[name] = getter_calls_per_s(libs[name], args.prefix, handles[name], args.seconds)
        ratios["empty_strided + delete pair"].append(pairs["out"] / pairs["in"])  # time in / time out
        ratios["get_dim call"].append(gets["out"] / gets["in"])
    print(f"# shim profile overhead when off: {args.rounds} interleaved rounds, {args.seconds} s per library per path")
    print(f"compiled in (off at run time): {args.compiled_in}")
    print(f"compiled out:                  {args.compiled_out}")
    for path, values in ratios.items():
        print(f"  {path:<28} time per call, in/out: {Interval.of(values).render()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
