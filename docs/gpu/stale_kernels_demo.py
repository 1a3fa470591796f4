"""A second package_cpp_only compile of the same graph packages the first one's kernels.

    python docs/gpu/stale_kernels_demo.py     # on a GPU machine, aoti-shim installed

torch writes a package_cpp_only package's kernels to
``<Inductor cache>/<hash of the graph's code>/<kernel name>.cubin`` and keeps a file
already there. The float32 and bfloat16 MLPs have the same graph code, so:

1. in one shared Inductor cache: the float32 MLP's source-route package, then the
   bfloat16 one's (what the smoke did before it gave each source compile a cache of its own);
2. in a fresh Inductor cache: the bfloat16 MLP's package again;
3. the kernels the packages share by name, compared byte for byte;
4. both bfloat16 packages built by aoti_shim_add_model and run by the smoke.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

MLP_BF16 = "bf16_models:mlp_bf16"
DEVICE = os.environ.get("AOTI_SHIM_GPU_DEVICE", "cuda")  # cpu: a rehearsal (CPU packages have no kernel files)


def compile_package(model: str, out: Path, inductor_cache: Path) -> None:
    out.mkdir(parents=True)
    request = out / "request.json"
    request.write_text(json.dumps({"model": model, "device": DEVICE, "route": "source", "output": str(out)}))
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(inductor_cache))
    with open(out / "compile.log", "wb") as log:
        subprocess.run([sys.executable, "-m", "aoti_shim.smoke.compile_worker", str(request)],
                       stdout=log, stderr=subprocess.STDOUT, env=env, check=True)  # fmt: skip


def kernels(package_entry: Path) -> dict[str, bytes]:
    return {p.name.removesuffix(".cubin.o"): p.read_bytes() for p in (package_entry / "package").rglob("*.cubin.o")}


def smoke(cache: Path) -> str:
    out = cache / "smoke.json"
    proc = subprocess.run(
        [sys.executable, "-m", "aoti_shim", "smoke", "--device", DEVICE, "--cache-dir", str(cache), "--model", MLP_BF16,
         "--route", "source", "--no-control", "--iterations", "10", "-q", "--json", str(out)],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    if not out.is_file():
        return f"no result (exit {proc.returncode}): {proc.stderr.strip().splitlines()[-3:]}"
    row = json.loads(out.read_text())["rows"][0]
    return f"{row['status']} (max abs err {row['max_abs']})"


def main() -> int:
    from aoti_shim.smoke.compile import CompileRequest, cache_key

    work = Path(tempfile.mkdtemp(prefix="stale-kernels-"))
    shared, fresh = work / "inductor-shared", work / "inductor-fresh"
    stale_cache, clean_cache = work / "smoke-stale", work / "smoke-clean"
    key = cache_key(CompileRequest(model=MLP_BF16, device=DEVICE, route="source"))
    f32 = work / "f32"
    stale, clean = stale_cache / key, clean_cache / key
    errors: list[str] = []

    def guarded(fn, *args) -> None:
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - reported below, the demo goes on
            errors.append(f"{fn.__name__}{args}: {e}")

    def shared_chain() -> None:
        compile_package("mlp", f32, shared)
        compile_package(MLP_BF16, stale, shared)

    threads = [threading.Thread(target=guarded, args=(shared_chain,)),
               threading.Thread(target=guarded, args=(compile_package, MLP_BF16, clean, fresh))]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        print("compile failed:", *errors, sep="\n  ")
        return 1
    a, b, c = kernels(f32), kernels(stale), kernels(clean)
    for label, other in (("bf16, shared cache", b), ("bf16, fresh cache", c)):
        named = sorted(set(a) & set(other))
        same = [k for k in named if a[k] == other[k]]
        print(f"{label}: {len(other)} kernels, {len(named)} named as in the float32 package, "
              f"{len(same)} of those byte-identical to float32's: {same}")  # fmt: skip
    wrapper = next((stale / "package").rglob("*.wrapper.cpp")).read_text()
    print(f"bf16, shared cache: its wrapper's Triton signatures name *bf16: {'*bf16' in wrapper}, *fp32: {'*fp32' in wrapper}")
    results = {}
    runs = [threading.Thread(target=lambda n=n, c=c: results.__setitem__(n, smoke(c)))
            for n, c in (("shared cache", stale_cache), ("fresh cache", clean_cache))]  # fmt: skip
    for t in runs:
        t.start()
    for t in runs:
        t.join()
    for name, result in results.items():
        print(f"bf16 MLP package from the {name}, built by aoti_shim_add_model and run: {result}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
