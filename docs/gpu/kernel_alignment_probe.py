"""Does where a kernel image starts in memory decide whether a CUDA blob works?

    python docs/gpu/kernel_alignment_probe.py load  [--cache-dir DIR --model M ...]
    python docs/gpu/kernel_alignment_probe.py relink --cache-dir DIR --model M ... [--pad N ...]

The bfloat16 source-route blobs of the 2026-11-30 H200 run failed now and then
(illegal memory access, or a run returning status 1) while the binary route never
did. torch's ready-made ``<kernel>.cubin.o`` objects align their bytes to 1, so the
blob's wrapper hands cuModuleLoadData whatever address the linker left; the
binary route's kernels were aligned. Two measurements:

``load``: one real kernel (the recorded CUDA MLP's pointwise kernel, and every
kernel of the given cached packages) loaded by cuModuleLoadData from host memory
at offsets 0..15 from a 128-byte boundary; the load's result and the function's
attributes per offset, and for the pointwise kernel a launch compared with torch.

``relink``: each cached source-route package linked as torch's objects are (the
package's objects as they are, an N-byte pad before them to move them), the kernel
starts' alignment read from the blob, then the smoke run on that blob; and once
more as ``aoti_shim_add_model`` linked it at commit 200fb13, which re-embedded every
kernel 128-byte aligned (later commits link torch's objects as they are again, so
there that row is not aligned).

It ran once, on the H200 (docs/gpu/results-2026-11-30/probe_*): every kernel loaded
and ran alike from every offset, and every misaligned blob passed. Alignment was not
the cause; a stale kernel was (docs/gpu/stale_kernels_demo.py).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from stale_kernels_demo import smoke  # noqa: E402 - beside this script: one smoke-row runner

REPO = Path(__file__).resolve().parents[2]
MLP_CUDA = REPO / "fixtures" / "aoti_packages" / "mlp_cuda" / "model" / "data" / "aotinductor" / "model"
PREFIX = "aotishim_"


def rodata(obj: Path) -> bytes:
    from elftools.elf.elffile import ELFFile

    with obj.open("rb") as stream:
        section = ELFFile(stream).get_section_by_name(".rodata")
        assert section is not None, obj
        return section.data()


def model_dir(package: Path) -> Path:
    return next(package.rglob("*.wrapper.cpp")).parent


def source_artefact(cache: Path, model: str, route: str = "source") -> Path:
    from aoti_shim.smoke.compile import CompileRequest, cache_key

    return cache / cache_key(CompileRequest(model=model, device="cuda", route=route))


# --- load -------------------------------------------------------------------------

_ATTRS = {"max_threads": 0, "shared": 1, "const": 2, "local": 3, "regs": 4, "ptx": 5, "binary": 6}


class Driver:
    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")

    def load(self, image: bytes, offset: int, name: str) -> tuple[int, ctypes.c_void_p, ctypes.c_void_p, object]:
        room = ctypes.create_string_buffer(len(image) + 256)
        at = (ctypes.addressof(room) + 127) // 128 * 128 + offset
        ctypes.memmove(at, image, len(image))
        module, function = ctypes.c_void_p(), ctypes.c_void_p()
        rc = self.lib.cuModuleLoadData(ctypes.byref(module), ctypes.c_void_p(at))
        if rc == 0:
            rc = self.lib.cuModuleGetFunction(ctypes.byref(function), module, name.encode())
        return rc, module, function, room

    def attributes(self, function: ctypes.c_void_p) -> dict[str, int]:
        out = {}
        for key, attr in _ATTRS.items():
            value = ctypes.c_int()
            self.lib.cuFuncGetAttribute(ctypes.byref(value), attr, function)
            out[key] = value.value
        return out


def load_probe(args: argparse.Namespace) -> int:
    import torch

    torch.zeros(1, device="cuda")  # the primary context, current on this thread
    driver = Driver()
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    kernel = "triton_poi_fused_addmm_relu_1"  # in_out = relu(in_out + bias[x % 128]), 1024 elements
    image = rodata(MLP_CUDA / f"{kernel}.cubin.o")
    print(f"load: {kernel} from the recorded CUDA MLP, {len(image)} bytes")
    torch.manual_seed(0)
    base, bias = torch.randn(1024, device="cuda"), torch.randn(128, device="cuda")
    expected = torch.relu(base + bias.repeat(8))
    for offset in range(16):
        rc, module, function, room = driver.load(image, offset, kernel)
        if rc != 0:
            print(f"  offset {offset:2d}: load/get-function failed with CUresult {rc}")
            continue
        io = base.clone()
        args_ = [ctypes.c_uint64(io.data_ptr()), ctypes.c_uint64(bias.data_ptr()), ctypes.c_int32(1024),
                 ctypes.c_uint64(0), ctypes.c_uint64(0)]  # fmt: skip
        params = (ctypes.c_void_p * len(args_))(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args_])
        rc = driver.lib.cuLaunchKernel(function, 4, 1, 1, 128, 1, 1, 0, stream, params, None)
        torch.cuda.synchronize()
        err = (io - expected).abs().max().item() if rc == 0 else float("nan")
        print(f"  offset {offset:2d}: loaded, {driver.attributes(function)}, launch CUresult {rc}, max abs err {err:.1e}")
        driver.lib.cuModuleUnload(module)
        del room
    for model in args.model:
        directory = model_dir(source_artefact(args.cache_dir, model) / "package")
        for obj in sorted(directory.glob("*.cubin.o")):
            name = obj.name.removesuffix(".cubin.o")
            image = rodata(obj)
            seen = {}
            for offset in (0, 1, 2, 4, 8, 12):
                rc, module, function, room = driver.load(image, offset, name)
                seen[offset] = driver.attributes(function) if rc == 0 else f"CUresult {rc}"
                if rc == 0:
                    driver.lib.cuModuleUnload(module)
                del room
            same = all(v == seen[0] for v in seen.values())
            print(f"load: {model} {name} ({len(image)} bytes): offsets 0,1,2,4,8,12 "
                  f"{'all alike: ' + str(seen[0]) if same else json.dumps(seen)}")  # fmt: skip
    return 0


# --- relink -----------------------------------------------------------------------

_PROJECT = """\
cmake_minimum_required(VERSION 3.21)
project(probe LANGUAGES CXX)
find_package(AotiShim CONFIG REQUIRED)
aoti_shim_add_model(probe_model PACKAGE "{package}" PREFIX "{prefix}")
"""


def kernel_starts(blob: Path) -> dict[str, int]:
    from elftools.elf.elffile import ELFFile

    with blob.open("rb") as stream:
        symtab = ELFFile(stream).get_section_by_name(".symtab")
        if symtab is None:
            return {}
        return {
            s.name[2:-6]: s["st_value"]
            for s in symtab.iter_symbols()  # type: ignore[union-attr]
            if s.name.startswith("__") and s.name.endswith("_start") and s["st_shndx"] != "SHN_UNDEF"
            and s.name != "__offload_funcs_start"
        }  # fmt: skip


def relink_probe(args: argparse.Namespace) -> int:
    from aoti_shim.paths import cmake_dir
    from aoti_shim.smoke.source_route import cmake_package_digest

    cmake = shutil.which("cmake") or "cmake"
    work = Path(tempfile.mkdtemp(prefix="kernel-align-"))
    for model in args.model:
        art = source_artefact(args.cache_dir, model)
        marker = art / f"cmake-{PREFIX}-{cmake_package_digest()}" / "blob_path.txt"
        if not marker.is_file():
            print(f"relink: {model}: no source-route build in the cache ({marker})")
            continue
        cached_blob = Path(marker.read_text().strip())
        binary = source_artefact(args.cache_dir, model, "binary") / "blob.so"
        if binary.is_file():  # torch's own embedding, for comparison
            where = ", ".join(f"{k}@{v % 128}" for k, v in sorted(kernel_starts(binary).items()))
            print(f"relink: {model} | binary route (torch linked it) | kernel start mod 128: {where or 'no symbols'}")
        original = cached_blob.read_bytes()
        package = work / model.replace(":", "-") / "package"
        shutil.copytree(art / "package", package)
        directory = model_dir(package)
        objects = sorted(directory.glob("*.cubin.o"))
        src, build = package.parent / "src", package.parent / "build"
        src.mkdir()
        (src / "CMakeLists.txt").write_text(_PROJECT.format(package=package.as_posix(), prefix=PREFIX))
        variants = [("aoti_shim_add_model (aligned)", None)] + [(f"torch's objects as they are, pad {n}", n) for n in args.pad]
        try:
            for label, pad in variants:
                for obj in objects:  # as they are: a name aoti_shim_add_model does not re-embed
                    as_is = obj.with_name(obj.name.replace(".cubin.o", ".cubin_as_is.o"))
                    if pad is None and as_is.exists():
                        as_is.rename(obj)
                    elif pad is not None and obj.exists():
                        obj.rename(as_is)
                pad_obj = directory / "t0_pad.o"  # sorts just before triton_*: the linker puts it first
                pad_obj.unlink(missing_ok=True)
                if pad:
                    asm = directory / "t0_pad.s"
                    asm.write_text(".section .rodata\n" + ".byte 0\n" * pad)
                    subprocess.run(["gcc", "-c", str(asm), "-o", str(pad_obj)], check=True)
                    asm.unlink()
                for step in ([cmake, "-S", str(src), "-B", str(build), "-G", "Ninja", f"-DAotiShim_DIR={cmake_dir()}",
                              "-DCMAKE_BUILD_TYPE=Release", f"-DAOTI_SHIM_PYTHON={sys.executable}", *args.cmake_arg],
                             [cmake, "--build", str(build)]):  # fmt: skip
                    proc = subprocess.run(step, capture_output=True, text=True, check=False)
                    if proc.returncode != 0:
                        print(f"relink: {model} {label}: {step[1]} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
                        raise SystemExit(1)
                blob = build / "libprobe_model.so"
                starts = kernel_starts(blob)
                shutil.copyfile(blob, cached_blob)
                result = smoke(args.cache_dir, model)
                where = ", ".join(f"{k}@{v % 128}" for k, v in sorted(starts.items()))
                print(f"relink: {model} | {label} | kernel start mod 128: {where} | {result}", flush=True)
        finally:
            cached_blob.write_bytes(original)
    shutil.rmtree(work, ignore_errors=True)
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("load", "relink"))
    parser.add_argument("--cache-dir", type=Path, default=Path(os.environ.get("AOTI_SHIM_GPU_CACHE", "/tmp/aoti-shim-gpu-cache")))
    parser.add_argument("--model", action="append", default=[])
    parser.add_argument("--pad", type=int, action="append", default=[])
    parser.add_argument("--cmake-arg", action="append", default=[], help="passed to the relink's configure")
    args = parser.parse_args(argv)
    args.cache_dir = args.cache_dir.resolve()
    return load_probe(args) if args.what == "load" else relink_probe(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
