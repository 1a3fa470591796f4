"""A second package_cpp_only compile of the same graph packages the first one's kernels.

    python docs/gpu/stale_kernels_demo.py [MODEL ...]    # on a GPU machine, aoti-shim installed

torch writes a package_cpp_only package's kernels to
``<Inductor cache>/<hash of the graph's code>/<kernel name>.cubin`` and keeps a file
already there. A float32 model and its bfloat16 variant have the same graph code. For
each model (default: mlp and block):

1. in one shared Inductor cache, the compiles in the order the smoke's GPU script ran
   them before each source compile got a cache of its own: float32 binary route, float32
   source route, bfloat16 binary route, bfloat16 source route;
2. in a fresh Inductor cache: the bfloat16 source route alone;
3. each bfloat16 package's kernels compared byte for byte with the float32 package's
   kernels of the same name, and whether each kernel's embedded PTX mentions bf16;
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


def compile_package(model: str, out: Path, inductor_cache: Path, route: str = "source") -> None:
    out.mkdir(parents=True)
    request = out / "request.json"
    request.write_text(json.dumps({"model": model, "device": DEVICE, "route": route, "output": str(out)}))
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(inductor_cache))
    with open(out / "compile.log", "wb") as log:
        subprocess.run([sys.executable, "-m", "aoti_shim.smoke.compile_worker", str(request)],
                       stdout=log, stderr=subprocess.STDOUT, env=env, check=True)  # fmt: skip


def kernels(package_entry: Path) -> dict[str, bytes]:
    return {p.name.removesuffix(".cubin.o"): p.read_bytes() for p in (package_entry / "package").rglob("*.cubin.o")}


def ptx_mentions_bf16(obj: bytes) -> str:
    """Triton's cubins carry their PTX in .nv_debug_ptx_txt; a bfloat16 kernel's names bf16."""
    import io

    from elftools.elf.elffile import ELFFile

    rodata = ELFFile(io.BytesIO(obj)).get_section_by_name(".rodata")
    cubin = ELFFile(io.BytesIO(rodata.data())).get_section_by_name(".nv_debug_ptx_txt")
    if cubin is None:
        return "no PTX"
    return "bf16" if b"bf16" in cubin.data() else "no bf16"


def smoke(cache: Path, model: str) -> str:
    out = cache / "smoke.json"
    proc = subprocess.run(
        [sys.executable, "-m", "aoti_shim", "smoke", "--device", DEVICE, "--cache-dir", str(cache), "--model", model,
         "--route", "source", "--no-control", "--iterations", "10", "-q", "--json", str(out)],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    if not out.is_file():
        return f"no result (exit {proc.returncode}): {proc.stderr.strip().splitlines()[-3:]}"
    row = json.loads(out.read_text())["rows"][0]
    return f"{row['status']} (max abs err {row['max_abs']})"


def main(models: list[str]) -> int:
    from aoti_shim.smoke.compile import CompileRequest, cache_key

    work = Path(tempfile.mkdtemp(prefix="stale-kernels-"))
    errors: list[str] = []
    plans = []
    for model in models:
        bf16 = f"bf16_models:{model}_bf16"
        key = cache_key(CompileRequest(model=bf16, device=DEVICE, route="source"))
        root = work / model
        plans.append((model, bf16, root, root / "smoke-shared" / key, root / "smoke-fresh" / key))

    def guarded(fn, *args) -> None:
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - reported below, the demo goes on
            errors.append(f"{fn.__name__}{args}: {e}")

    def shared_chain(model: str, bf16: str, root: Path, stale: Path) -> None:
        shared = root / "inductor-shared"
        compile_package(model, root / "f32-binary", shared, "binary")
        compile_package(model, root / "f32-source", shared)
        compile_package(bf16, root / "bf16-binary", shared, "binary")
        compile_package(bf16, stale, shared)

    threads = []
    for model, bf16, root, stale, fresh in plans:
        threads.append(threading.Thread(target=guarded, args=(shared_chain, model, bf16, root, stale)))
        threads.append(threading.Thread(target=guarded, args=(compile_package, bf16, fresh, root / "inductor-fresh")))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        print("compile failed:", *errors, sep="\n  ")
        return 1
    results: dict[str, str] = {}
    runs = []
    for model, bf16, root, stale, fresh in plans:
        f32 = kernels(root / "f32-source")
        for label, entry in (("shared cache", stale), ("fresh cache", fresh)):
            ours = kernels(entry)
            same = sorted(k for k in ours if f32.get(k) == ours[k])
            print(f"{bf16} from the {label}: {len(ours)} kernels, {len(set(ours) & set(f32))} named as in the float32 "
                  f"package, byte-identical to float32's: {same or 'none'}")  # fmt: skip
            for name in sorted(ours):
                print(f"    {name}: PTX {ptx_mentions_bf16(ours[name])}{', = float32' if name in same else ''}")
            runs.append(threading.Thread(
                target=lambda k=f"{bf16} from the {label}", c=entry.parent, m=bf16: results.__setitem__(k, smoke(c, m))))  # fmt: skip
    for t in runs:
        t.start()
    for t in runs:
        t.join()
    for name, result in sorted(results.items()):
        print(f"{name}, built by aoti_shim_add_model and run: {result}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["mlp", "block"]))
