"""The model zoo through the shims: compile in parallel, then one smoke run per model.

    python docs/gpu/zoo_run.py --device cuda --dtype float32 --policy zero-fallback \\
        --cache-dir DIR --json zoo_f32_zero-fallback.json [--jobs 10] [--compile-budget 300]

Policies (``aoti-shim smoke --compile``): ``zero-fallback`` is the smoke's autotuned compile
(GEMMs and convolutions generated, attention lowered to math: the blob needs no fallback
op); ``default`` is Inductor's plain compile (no autotuning, PyTorch's own attention
choice): ATen's GEMMs and convolutions and the fused attention kernels, so the blob calls
the shims' fallback ops (cuBLAS, cuDNN, attention).

Every compile (both routes of every model, and the source route's CMake build) runs at
once, up to --jobs, each in its own child (the smoke's compile cache), until
--compile-budget seconds have passed. Then each model whose compiles finished runs
through ``aoti-shim smoke`` on the routes it has (a model refused for missing shims
does not stop the others). One JSON file holds everything; a table goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

POLICIES = ("zero-fallback", "default")


def _fallbacks(blob: Path) -> list[str]:
    """The fallback ops (aoti_torch_cpu_* / aoti_torch_cuda_*) a blob imports."""
    from aoti_shim.checks.elf.image import ElfImage

    with ElfImage(blob) as image:
        return sorted(n for n in image.imports() if n.startswith(("aoti_torch_cpu_", "aoti_torch_cuda_")))


def compile_all(
    specs: list[str], device: str, cache: Path, jobs: int, budget_s: float, prefix: str, policy: str
) -> dict[str, Any]:
    from aoti_shim.errors import AotiShimError
    from aoti_shim.smoke.compile import CompileRequest, compile_cached
    from aoti_shim.smoke.source_route import SourceBuild, build_source_blob, cmake_package_digest

    results: dict[str, dict[str, Any]] = {s: {} for s in specs}
    began = time.monotonic()

    def binary(spec: str) -> dict[str, Any]:
        art = compile_cached(CompileRequest(spec, device, "binary", compile=policy), cache)
        return {"fallbacks": _fallbacks(art.blob)}

    def source(spec: str) -> dict[str, Any]:
        art = compile_cached(CompileRequest(spec, device, "source", compile=policy), cache)
        # The smoke's own build folder for this package, so that the smoke finds it built.
        folder = art.directory / f"cmake-{prefix}-{cmake_package_digest()}"
        build_source_blob(SourceBuild(package=art.package, prefix=prefix, build_dir=folder, jobs=4))
        return {}

    def timed(spec: str, route: str) -> tuple[str, str, dict[str, Any]]:
        start = time.monotonic()
        try:
            info = (binary if route == "binary" else source)(spec)
            info["seconds"] = round(time.monotonic() - start, 1)
        except (AotiShimError, OSError) as e:
            info = {"seconds": round(time.monotonic() - start, 1), "error": str(e)}
        print(f"zoo: compile {spec} ({route}): {info['seconds']} s{' FAILED: ' + info['error'] if 'error' in info else ''}"
              f"{'; fallbacks: ' + ', '.join(info['fallbacks']) if info.get('fallbacks') else ''}", flush=True)  # fmt: skip
        return spec, route, info

    # Daemon threads, not a pool: compiles still running at the budget's end are left
    # behind (their children go on filling the cache) instead of holding up the exit.
    tasks = queue.Queue()
    for s in specs:
        for r in ("binary", "source"):
            tasks.put((s, r))
    lock = threading.Lock()

    def worker() -> None:
        while True:
            try:
                spec, route = tasks.get_nowait()
            except queue.Empty:
                return
            _, _, info = timed(spec, route)
            with lock:
                results[spec][route] = info

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    deadline = began + budget_s
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    with lock:
        snapshot = {s: dict(r) for s, r in results.items()}
    missing = sum(2 - len(r) for r in snapshot.values())
    if missing:
        print(f"zoo: {missing} compile(s) not done after {budget_s:.0f} s: left out of the smoke", flush=True)
    print(f"zoo: compiles took {time.monotonic() - began:.0f} s", flush=True)
    return snapshot


def smoke_one(spec: str, routes: list[str], device: str, cache: Path, work: Path, policy: str) -> dict[str, Any]:
    out = work / "smoke.json"
    out.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "aoti_shim", "smoke", "--device", device, "--model", spec, "--cache-dir", str(cache),
           "--compile", policy, "--iterations", "10", "--json", str(out), "-q"]  # fmt: skip
    for route in routes:
        cmd += ["--route", route]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    entry: dict[str, Any] = {"exit": proc.returncode, "seconds": round(time.monotonic() - start, 1), "routes": routes}
    if out.is_file():
        entry["rows"] = json.loads(out.read_text())["rows"]
    elif proc.returncode == 8 and "does not define" in proc.stderr:
        entry["refused"] = proc.stdout.split()
    entry["stderr"] = proc.stderr.strip().splitlines()[-20:]
    return entry


def _cell(row: dict[str, Any]) -> tuple[str, str]:
    if row.get("control_bitwise"):
        control = "bitwise"
    elif row.get("control_max_abs") is not None:
        control = f"{row['control_max_abs']:.1e} (<={row['control_bound']:.1e})"
    else:
        control = "-"
    if row.get("eager_max_abs") is not None and row.get("eager_bound") is not None:
        eager = f"{row['eager_max_abs']:.1e} (<={row['eager_bound']:.1e})"
    else:
        eager = "-" if row.get("eager_max_abs") is None else f"{row['eager_max_abs']:.1e}"
    return control, eager


def table(report: dict[str, Any]) -> str:
    lines = []
    head = ("model", "route", "fallbacks", "compile s", "imports bound to", "vs control", "vs eager f64", "result")
    cells: list[tuple[str, ...]] = []
    for spec, entry in report["models"].items():
        name = spec.rpartition(":")[2]
        compiled = entry["compile"]
        fallbacks = ",".join(f.removeprefix("aoti_torch_") for f in compiled.get("binary", {}).get("fallbacks", [])) or "none"
        smoke = entry.get("smoke") or {}
        if "rows" in smoke:
            for row in smoke["rows"]:
                control, eager = _cell(row)
                secs = compiled.get(row["route"] if row["route"] != "control" else "binary", {}).get("seconds", "-")
                bound = f"{row['binding']} ({sum(row['bound'].values())})" if row.get("bound") else row["binding"]
                cells.append((name, row["route"], fallbacks, str(secs), bound, control, eager, row["status"]))
        else:
            why = ("refused: " + " ".join(smoke["refused"])) if "refused" in smoke else (
                smoke.get("skipped") or f"smoke exit {smoke.get('exit')}: {(smoke.get('stderr') or ['?'])[-1]}")  # fmt: skip
            errors = "; ".join(f"{r}: {c['error']}" for r, c in compiled.items() if "error" in c)
            cells.append((name, "-", fallbacks, "-", "-", "-", "-", errors or why))
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(head)]
    for values in (head, tuple("-" * w for w in widths), *cells):
        lines.append("  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip())
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    parser.add_argument("--policy", choices=tuple(POLICIES), default="zero-fallback")
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=10, help="compiles at once (default 10)")
    parser.add_argument("--compile-budget", type=float, default=300, help="seconds for the compiles (default 300)")
    parser.add_argument("--prefix", default="aotishim_")
    parser.add_argument("models", nargs="*", help="zoo names (default: all of aoti_shim.smoke.zoo.MODELS)")
    args = parser.parse_args(argv)

    from aoti_shim.smoke.compile import torch_version
    from aoti_shim.smoke.zoo import MODELS, spec

    names = args.models or list(MODELS)
    specs = [spec(n, args.dtype) for n in names]
    cache = args.cache_dir.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    print(f"zoo: {args.device} {args.dtype} {args.policy} (AOTI_SHIM_INDUCTOR_OPTIONS={os.environ.get('AOTI_SHIM_INDUCTOR_OPTIONS', 'unset')}, "
          f"AOTI_SHIM_MAX_MM_CONFIGS={os.environ.get('AOTI_SHIM_MAX_MM_CONFIGS', 'unset')}): {', '.join(names)}", flush=True)  # fmt: skip
    compiled = compile_all(specs, args.device, cache, args.jobs, args.compile_budget, args.prefix, args.policy)
    report: dict[str, Any] = {
        "device": args.device, "dtype": args.dtype, "policy": args.policy,
        "inductor_options": os.environ.get("AOTI_SHIM_INDUCTOR_OPTIONS"),
        "torch_version": torch_version(), "max_mm_configs": os.environ.get("AOTI_SHIM_MAX_MM_CONFIGS"),
        "models": {s: {"compile": compiled[s]} for s in specs},
    }  # fmt: skip
    # Written after every step: a run cut short by its time limit keeps what it measured.
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    with tempfile.TemporaryDirectory(prefix="zoo-") as work:
        for s in specs:
            # Only what finished here: a compile still running (past the budget) may be building
            # in the very folder the smoke would build in.
            routes = [r for r in ("source", "binary") if r in compiled[s] and "error" not in compiled[s][r]]
            if "binary" not in routes:
                # The control needs the binary route's blob: without it there is nothing to compare.
                report["models"][s]["smoke"] = {"skipped": "the binary route did not compile in time"
                                                if "binary" not in compiled[s] else "the binary route failed to compile"}  # fmt: skip
                continue
            entry = smoke_one(s, routes, args.device, cache, Path(work), args.policy)
            report["models"][s]["smoke"] = entry
            print(f"zoo: smoke {s} ({', '.join(routes)}): exit {entry['exit']} after {entry['seconds']} s", flush=True)
            args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\n# zoo {args.device} {args.dtype} {args.policy}, torch {report['torch_version']}")
    print(table(report))
    ok = all((e.get("smoke") or {}).get("exit") == 0 and len(e["compile"]) == 2 for e in report["models"].values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
