"""Fill the smoke compile cache in parallel before the GPU steps use it.

    python docs/gpu/prewarm.py --cache-dir DIR --device cuda [--bf16 | --only-bf16] mlp block convnet
    python docs/gpu/prewarm.py --cache-dir DIR --device cuda --list-cached bf16_models:mlp_bf16 ...

Autotuned CUDA compiles take tens of seconds to minutes each, and `aoti-shim smoke`
compiles one model after another. Here each model gets one thread that runs its
compiles in order (binary route, source route and its CMake build, then the bench's
libtorch-linked twin, so the later ones reuse the first one's autotuning results), all
models at once. Each
compile is its own child process (the smoke's compile_cached), so a step that is cut
short loses nothing already cached. Prints one line per compile.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import threading
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]


def _bench_module():
    # The bench imports its sibling host_sampler.py: its folder must be on the path, as it is
    # when the bench runs as a script.
    if str(REPO / "bench") not in sys.path:
        sys.path.insert(0, str(REPO / "bench"))
    spec = importlib.util.spec_from_file_location("shim_latency", REPO / "bench" / "shim_latency.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    parser.add_argument("--bf16", action="store_true", help="also the bfloat16 variants (docs/gpu/bf16_models.py)")
    parser.add_argument("--only-bf16", action="store_true", help="only the bfloat16 variants")
    parser.add_argument("--prefix", default="aotishim_", help="the smoke's prefix, for its source-route build")
    parser.add_argument("--list-cached", action="store_true",
                        help="print which of the given models have both routes cached, and exit")  # fmt: skip
    parser.add_argument("models", nargs="*", default=["mlp", "block", "convnet"])
    args = parser.parse_args(argv)

    from aoti_shim.errors import AotiShimError
    from aoti_shim.smoke.compile import CompileRequest, compile_cached, is_cached
    from aoti_shim.smoke.source_route import SourceBuild, build_source_blob, cmake_package_digest

    if args.list_cached:
        ready = [m for m in args.models
                 if all(is_cached(CompileRequest(m, args.device, r), args.cache_dir.resolve()) for r in ("binary", "source"))]  # fmt: skip
        print(" ".join(ready))
        return 0

    bench = _bench_module()
    cache, device = args.cache_dir.resolve(), args.device
    lock = threading.Lock()
    failures: list[str] = []

    def say(line: str) -> None:
        with lock:
            print(line, flush=True)

    def chain(label: str, steps: list[tuple[str, Callable[[], object]]]) -> None:
        for what, fn in steps:
            start = time.perf_counter()
            try:
                fn()
                say(f"prewarm: {label} {what}: {time.perf_counter() - start:.1f} s")
            except (AotiShimError, OSError) as e:
                failures.append(f"{label} {what}")
                say(f"prewarm: {label} {what}: FAILED after {time.perf_counter() - start:.1f} s: {e}")
                return  # the later steps of this chain need this one

    def smoke_compile(model: str, route: str) -> Callable[[], object]:
        return lambda: compile_cached(CompileRequest(model=model, device=device, route=route), cache)

    def source_build(model: str) -> Callable[[], object]:
        # The smoke pipeline's own build folder for this package, so it finds the build done.
        def build() -> object:
            art = compile_cached(CompileRequest(model=model, device=device, route="source"), cache)
            folder = art.directory / f"cmake-{args.prefix}-{cmake_package_digest()}"
            return build_source_blob(SourceBuild(package=art.package, prefix=args.prefix, build_dir=folder, jobs=4))

        return build

    jobs: list[tuple[str, list[tuple[str, Callable[[], object]]]]] = []
    for model in args.models:
        if not args.only_bf16:
            jobs.append((model, [
                ("binary", smoke_compile(model, "binary")),
                ("source", smoke_compile(model, "source")),
                ("source build", source_build(model)),
                ("libtorch-linked", lambda m=model: bench.compile_libtorch_linked(cache, device, m)),
            ]))  # fmt: skip
        if args.bf16 or args.only_bf16:
            spec = f"bf16_models:{model}_bf16"
            jobs.append((spec, [
                ("binary", smoke_compile(spec, "binary")),
                ("source", smoke_compile(spec, "source")),
                ("source build", source_build(spec)),
            ]))  # fmt: skip
    threads = [threading.Thread(target=chain, args=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        say(f"prewarm: {len(failures)} compile(s) failed: {', '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
