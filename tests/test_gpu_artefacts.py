"""What the H200 run left for CPU-only machines: torch 2.11.0+cu130's snapshot and a CUDA package.

The snapshot was taken from the real libraries on an H200 machine; the package is the
CUDA MLP made there with package_cpp_only=True (torch 2.11, link_libtorch=False,
kernels embedded as .cubin.o objects). Here the snapshot gates shims like torch
itself, and the package builds with aoti_shim_add_model into a prefixed blob that the
reference shims satisfy. No GPU is used: libcuda is only linked against, through a
link-time stand-in with its soname (what the toolkit's stubs/libcuda.so is for).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from aoti_shim.checks import CheckSettings, render, run_check
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.elf.layout import STB_GLOBAL, STT_FUNC
from aoti_shim.checks.snapshot import record as snapshot_mod
from cli_support import CLI
from cmake_support import PACKAGES, REPO, CMakeProject, log
from compile_support import compile_shared
from shims_support import reference_shims

CUDA_PACKAGE = REPO / "fixtures" / "aoti_packages" / "mlp_cuda"
MODEL_DIR = CUDA_PACKAGE / "model" / "data" / "aotinductor" / "model"
VERSION = "2.11.0+cu130"


def snapshot_path() -> Path:
    found = [p for p in snapshot_mod.shipped() if p.name == f"torch-{VERSION}.json.gz"]
    assert found, f"the torch {VERSION} snapshot is not installed with the package ({snapshot_mod.shipped_dir()})"
    return found[0]


def shim_names(lib: snapshot_mod.SnapshotLibrary) -> set[str]:
    return {name for name in lib.export_names() if name.startswith("aoti_torch_")}


@pytest.fixture(scope="module")
def snapshot_libs() -> dict[str, snapshot_mod.SnapshotLibrary]:
    return {lib.name: lib for lib in snapshot_mod.load(snapshot_path())}


def test_the_snapshot_is_torch_2_11_cu130_with_disjoint_cpu_and_cuda_shims(
    snapshot_libs: dict[str, snapshot_mod.SnapshotLibrary],
) -> None:
    snap = snapshot_mod.read(snapshot_path())
    assert snap.torch_version == VERSION
    assert snap.source == {"kind": "directory"}
    assert {"libtorch_cpu.so", "libtorch_cuda.so", "libc10_cuda.so", "libtorch.so"} <= set(snapshot_libs)
    cpu, cuda = snapshot_libs["libtorch_cpu.so"], snapshot_libs["libtorch_cuda.so"]
    assert all(lib.build_id and re.fullmatch(r"[0-9a-f]{40}", lib.build_id) for lib in (cpu, cuda))
    cpu_shims, cuda_shims = shim_names(cpu), shim_names(cuda)
    # Pinned to the H200's torch 2.11.0+cu130 libraries (the snapshot records their sha256): 318
    # and 163 were read from them there. No CPU machine has them; test_snapshot compares a
    # shipped snapshot with binutils' nm wherever its torch is installed (docs/gpu/run_h200.sh
    # runs that on the H200), and here the 2.13.0+cpu one. 2.13.0 and 2.14.1 have 329 and 175.
    assert (len(cpu_shims), len(cuda_shims)) == (318, 163)
    assert not cpu_shims & cuda_shims
    assert all(
        not shim_names(lib)
        for name, lib in snapshot_libs.items()
        if name not in ("libtorch_cpu.so", "libtorch_cuda.so")
    )
    for lib, name in ((cpu, "aoti_torch_empty_strided"), (cuda, "aoti_torch_create_cuda_stream_guard")):
        sym = lib.find_export(name)
        assert sym is not None and sym.bind == STB_GLOBAL and sym.type == STT_FUNC and not sym.versioned
        assert lib.find_export(f"aotishim_{name}") is None


def _check_cli(shim: Path) -> tuple[int, dict[str, object]]:
    done = subprocess.run(
        [
            *CLI,
            "check",
            "--shim",
            str(shim),
            "--against",
            str(snapshot_path()),
            "--prefix",
            "myrt_",
            "--format",
            "json",
        ],
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
    )
    return done.returncode, json.loads(done.stdout)


def test_check_against_the_snapshot_flags_the_unprefixed_shim_and_passes_the_clean_one(
    checker_libs: dict[str, Path],
) -> None:
    code, report = _check_cli(checker_libs["unprefixed_shim"])
    assert code == 8, report
    findings = report["findings"]
    assert isinstance(findings, list)
    collisions = {f["symbol"] for f in findings if f["rule"] == "COLLISION"}
    assert collisions == {"aoti_torch_empty_strided", "aoti_torch_get_data_ptr"}
    assert any(str(r).endswith("!libtorch_cpu.so") for r in report["references"])

    code, report = _check_cli(checker_libs["clean_shim"])
    assert code == 0, report
    assert report["findings"] == []


# --- the recorded CUDA package, built into a blob on a CPU-only machine -------------


Built = tuple[Path, str]


@pytest.fixture(scope="module")
def cuda_blob(tmp_path_factory: pytest.TempPathFactory) -> Built:
    if shutil.which("nvcc") is None:
        pytest.skip("no CUDA toolkit (nvcc on PATH): FindCUDAToolkit cannot describe one")
    _, prefix = reference_shims()
    tmp = tmp_path_factory.mktemp("cuda-model")
    # The driver is only linked against: an empty library with libcuda's soname.
    driver = tmp / "stubs" / "libcuda.so"
    driver.parent.mkdir()
    compile_shared(Path(os.devnull), driver, ("-Wl,-soname,libcuda.so.1",))
    project = CMakeProject(
        PACKAGES / "cmake_model",
        tmp / "build",
        {
            "AOTI_SHIM_SYMBOL_PREFIX": prefix,
            "FIXTURE_PACKAGE": str(CUDA_PACKAGE),
            "CUDA_cuda_driver_LIBRARY": str(driver),
        },
    )
    built = project.configure_and_build()
    assert built.returncode == 0, log(built)
    blob = project.build / "libmlp_blob.so"
    assert blob.is_file(), log(built)
    return blob, prefix


def test_the_cuda_blob_imports_only_prefixed_shims_that_torch_2_11_defines(
    cuda_blob: Built, snapshot_libs: dict[str, snapshot_mod.SnapshotLibrary]
) -> None:
    blob, prefix = cuda_blob
    with ElfImage(blob) as image:
        imports = set(image.imports())
        exports = set(image.exports())
    shims = {name for name in imports if "aoti_torch_" in name}
    assert all(name.startswith(f"{prefix}aoti_torch_") for name in shims), sorted(shims)
    assert f"{prefix}aoti_torch_create_cuda_stream_guard" in shims and len(shims) >= 20
    # The wrapper was generated by 2.11: each shim it calls is one that 2.11's libtorch exports.
    torch_shims = shim_names(snapshot_libs["libtorch_cpu.so"]) | shim_names(snapshot_libs["libtorch_cuda.so"])
    assert {name[len(prefix) :] for name in shims} <= torch_shims
    # Kernels are launched through the driver; the runtime comes from the host at load time.
    assert {"cuLaunchKernel", "cuModuleLoadData", "cudaMalloc"} <= imports
    assert exports and all(name.startswith("AOTInductor") for name in exports)


def test_the_cuda_blob_embeds_every_kernel_the_wrapper_launches(cuda_blob: Built) -> None:
    from elftools.elf.elffile import ELFFile

    wrapper = next(MODEL_DIR.glob("*.wrapper.cpp")).read_text()
    wanted = set(re.findall(r"\b(__triton_\w+)_start\b", wrapper))
    kernels = {path.name.removesuffix(".cubin.o") for path in MODEL_DIR.glob("*.cubin.o")}
    assert len(wanted) == 4 and wanted == {f"__{k}" for k in kernels}
    blob, _ = cuda_blob
    with blob.open("rb") as stream:
        symtab = ELFFile(stream).get_section_by_name(".symtab")
        assert symtab is not None, "the blob was stripped"
        defined = {
            sym.name: sym["st_value"]
            for sym in symtab.iter_symbols()
            if sym["st_shndx"] != "SHN_UNDEF" and sym.name.startswith("__triton_")
        }
    for kernel in wanted:
        size = defined[f"{kernel}_end"] - defined[f"{kernel}_start"]
        # A cubin is an ELF image of its own, kilobytes long.
        assert size > 1024, (kernel, size)


def test_the_reference_shims_satisfy_the_cuda_blob_without_colliding_with_torch(
    cuda_blob: Built, snapshot_libs: dict[str, snapshot_mod.SnapshotLibrary]
) -> None:
    blob, prefix = cuda_blob
    library, _ = reference_shims()
    report = run_check(
        CheckSettings(
            shims=(str(library),),
            models=(str(blob),),
            against=(str(snapshot_path()), "torch"),
            prefix=prefix,
            suppressions=None,
        )
    )
    assert not [f for f in report.findings if f.rule == "UNSATISFIED_IMPORT"], render(report, "text")
    assert not [f for f in report.findings if f.rule == "COLLISION"], render(report, "text")
    assert report.exit_code(fail_on="blocking") == 0, render(report, "text")
    assert any(r.endswith("!libtorch_cuda.so") for r in report.references)


def test_a_cuda_model_builds_with_no_toolkit_from_the_wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No CUDA toolkit, no nvcc, no driver: headers from NVIDIA's wheels, a libcuda.so.1 stub to link.

    This machine has a toolkit (/usr/local/cuda, nvcc on PATH). It is kept out as a machine
    without one would lack it: every folder with an nvcc leaves PATH, the variables naming a
    toolkit are unset, and CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit makes FindCUDAToolkit find
    nothing (it would otherwise find /usr/local/cuda by itself); the cache is read to prove it.
    """
    from cuda_support import path_without_nvcc, wheels_root

    for name in ("CUDACXX", "CUDA_PATH", "CUDA_HOME", "CUDA_ROOT", "CUDAToolkit_ROOT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", path_without_nvcc())
    _, prefix = reference_shims()
    project = CMakeProject(
        PACKAGES / "cmake_model",
        tmp_path / "build",
        {
            "AOTI_SHIM_SYMBOL_PREFIX": prefix,
            "FIXTURE_PACKAGE": str(CUDA_PACKAGE),
            "CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit": "ON",
        },
    )
    configured = project.configure()
    assert configured.returncode == 0, log(configured)
    assert "AotiShim: CUDA models compile against the headers of the CUDA wheel" in log(configured)
    built = project.build_all()
    assert built.returncode == 0, log(built)
    cache = (project.build / "CMakeCache.txt").read_text()
    assert "/usr/local/cuda" not in cache and "CUDAToolkit_BIN_DIR" not in cache
    blob = project.build / "libmlp_blob.so"
    from elftools.elf.elffile import ELFFile

    with blob.open("rb") as stream:
        dynamic = ELFFile(stream).get_section_by_name(".dynamic")
        needed = [t.needed for t in dynamic.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
        paths = [
            getattr(t, "runpath", None) or getattr(t, "rpath", None)
            for t in dynamic.iter_tags()
            if t.entry.d_tag in ("DT_RUNPATH", "DT_RPATH")
        ]
    # The driver by its soname, found at load time; never the stub in the build tree.
    assert "libcuda.so.1" in needed and not any("aoti_shim_cuda_driver_stub" in (p or "") for p in paths), (
        needed,
        paths,
    )
    with ElfImage(blob) as image:
        imports = set(image.imports())
    shims = {name for name in imports if "aoti_torch_" in name}
    assert shims and all(name.startswith(f"{prefix}aoti_torch_") for name in shims), sorted(shims)
    assert {"cuLaunchKernel", "cuModuleLoadData", "cudaMalloc"} <= imports
    flags = (project.build / "build.ninja").read_text()
    assert f"-isystem {wheels_root() / 'include'}" in flags
