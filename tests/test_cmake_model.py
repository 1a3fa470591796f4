"""aoti_shim_add_model on the recorded package_cpp_only package, and aoti_shim_check with MODELS.

The blob is built from the package's wrapper source and weights object with the rename
header force-included: it must import only prefixed shims, all of which the installed
reference shim library provides. A shim library that provides only two of them is
checked against the blob after its build, which must fail.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from cmake_support import FIXTURE_PREFIX, PACKAGES, RECORDED_PACKAGE, CMakeProject, log
from shims_support import reference_shims

Built = tuple[CMakeProject, subprocess.CompletedProcess[str], str]


@pytest.fixture(scope="module")
def model_build(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The blob, built with the reference library's prefix (so it can be checked against it)."""
    assert list(RECORDED_PACKAGE.rglob("*.wrapper.cpp")), f"no recorded package under {RECORDED_PACKAGE}"
    _, prefix = reference_shims()
    tmp = tmp_path_factory.mktemp("cmake-model")
    project = CMakeProject(
        PACKAGES / "cmake_model",
        tmp / "build",
        {"AOTI_SHIM_SYMBOL_PREFIX": prefix, "FIXTURE_PACKAGE": str(RECORDED_PACKAGE), "FIXTURE_CHECK": "ON"},
    )
    return project, project.configure_and_build(), prefix


def _blob(project: CMakeProject) -> Path:
    blob = project.build / "libmlp_blob.so"
    assert blob.is_file(), "the blob was not built"
    return blob


def test_blob_imports_only_prefixed_shims(model_build: Built) -> None:
    from aoti_shim.checks.elf.image import ElfImage

    project, _, prefix = model_build
    with ElfImage(_blob(project)) as image:
        imports = set(image.imports())
    shim_imports = {name for name in imports if "aoti_torch_" in name}
    # The MLP needs tensor creation, metadata getters and addmm: a couple of dozen shims.
    assert len(shim_imports) >= 20, sorted(shim_imports)
    assert all(name.startswith(f"{prefix}aoti_torch_") for name in shim_imports), sorted(shim_imports)
    assert f"{prefix}aoti_torch_cpu_addmm_out" in shim_imports


def test_blob_exports_only_the_aoti_api(model_build: Built) -> None:
    from aoti_shim.checks.elf.image import ElfImage

    project, _, _ = model_build
    with ElfImage(_blob(project)) as image:
        exports = set(image.exports())
    assert "AOTInductorModelContainerRun" in exports
    assert not [name for name in exports if not name.startswith("AOTInductor")]


def test_check_with_models_fails_the_build_on_unsatisfied_imports(model_build: Built) -> None:
    _, built, prefix = model_build
    output = log(built)
    assert built.returncode != 0, output
    assert "aoti-shim check: partial_shim" in output or "check --shim" in output
    # The checker's table is in the build log, grouped by rule: only unsatisfied imports...
    assert re.search(r"blocking\s+UNSATISFIED_IMPORT\s", output), output
    assert "UNPREFIXED_IMPORT" not in output and "FAILED:" in output
    # ...which are the blob's prefixed imports but the two the shim provides.
    from aoti_shim.checks import CheckSettings, run_check
    from aoti_shim.checks.elf.image import ElfImage

    project, _, _ = model_build
    with ElfImage(_blob(project)) as image:
        wanted = {n for n in image.imports() if n.startswith(f"{prefix}aoti_torch_")}
    provided = {f"{prefix}aoti_torch_dtype_float32", f"{prefix}aoti_torch_device_type_cpu"}
    assert provided <= wanted and f"{prefix}aoti_torch_cpu_addmm_out" in wanted
    report = run_check(
        CheckSettings(shims=(str(project.build / "libpartial_shim.so"),), models=(str(_blob(project)),), prefix=prefix)
    )
    assert {f.symbol for f in report.findings if f.rule == "UNSATISFIED_IMPORT"} == wanted - provided
    assert f"FAILED: {len(wanted - provided)} blocking" in output


def test_reference_shims_satisfy_the_blob_without_colliding_with_torch(model_build: Built) -> None:
    from aoti_shim.checks import CheckSettings, render, run_check

    project, _, _ = model_build
    library, prefix = reference_shims()
    report = run_check(
        CheckSettings(
            shims=(str(library),), models=(str(_blob(project)),), against=("torch",), prefix=prefix, suppressions=None
        )
    )
    assert report.exit_code(fail_on="blocking") == 0, render(report, "text")


_FAKE_WRAPPER = """
#include <stddef.h>
extern "C" {
extern const unsigned char __triton_fixture_0_start[];
extern const unsigned char __triton_fixture_0_end[];
__attribute__((visibility("default"))) size_t AOTInductorFixtureKernelSize(void) {
  return static_cast<size_t>(__triton_fixture_0_end - __triton_fixture_0_start);
}
__attribute__((visibility("default"))) const unsigned char* AOTInductorFixtureKernel(void) {
  return __triton_fixture_0_start;
}
}
"""


def test_kernel_binaries_are_embedded_under_torchs_symbol_names(cmake_project, tmp_path: Path) -> None:
    """A GPU package's cubins become __<kernel>_start/_end in the blob (checked on CPU with a stand-in)."""
    import ctypes

    package = tmp_path / "package" / "data" / "aotinductor" / "model"
    package.mkdir(parents=True)
    (package / "cfixture.wrapper.cpp").write_text(_FAKE_WRAPPER)
    kernel = bytes(range(256)) * 3 + b"tail"
    (package / "triton_fixture_0.cubin").write_bytes(kernel)
    project = cmake_project(
        PACKAGES / "cmake_model",
        {"AOTI_SHIM_SYMBOL_PREFIX": FIXTURE_PREFIX, "FIXTURE_PACKAGE": str(tmp_path / "package")},
    )
    built = project.configure_and_build()
    assert built.returncode == 0, log(built)
    blob = ctypes.CDLL(str(_blob(project)), mode=ctypes.RTLD_LOCAL)
    blob.AOTInductorFixtureKernelSize.restype = ctypes.c_size_t
    blob.AOTInductorFixtureKernel.restype = ctypes.POINTER(ctypes.c_ubyte)
    size = blob.AOTInductorFixtureKernelSize()
    assert size == len(kernel)
    assert bytes(blob.AOTInductorFixtureKernel()[:size]) == kernel


def test_a_pt2_archive_is_unpacked_once(cmake_project, tmp_path: Path) -> None:
    import shutil
    import zipfile

    archive = Path(shutil.make_archive(str(tmp_path / "mlp"), "zip", RECORDED_PACKAGE))
    pt2 = archive.rename(tmp_path / "mlp.pt2")
    project = cmake_project(
        PACKAGES / "cmake_model", {"AOTI_SHIM_SYMBOL_PREFIX": FIXTURE_PREFIX, "FIXTURE_PACKAGE": str(pt2)}
    )
    configured = project.configure()
    assert configured.returncode == 0, log(configured)
    wrappers = list((project.build / "mlp_blob_package").rglob("*.wrapper.cpp"))
    assert len(wrappers) == 1
    assert str(wrappers[0]) in (project.build / "build.ninja").read_text()
    sentinel = project.build / "mlp_blob_package" / "sentinel"
    sentinel.write_text("left by the test")
    again = project.configure()
    assert again.returncode == 0, log(again)
    # Unchanged archive: not unpacked again, so the sources stay as they were and nothing rebuilds.
    assert sentinel.exists()
    # A changed archive is unpacked afresh.
    with zipfile.ZipFile(pt2, "a") as extra:
        extra.writestr("model/extra.txt", "changed")
    third = project.configure()
    assert third.returncode == 0, log(third)
    assert not sentinel.exists()
    assert (project.build / "mlp_blob_package" / "model" / "extra.txt").is_file()


_ISA_WRAPPER = """
#if defined(WANT_AVX512) && !(defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512VL__) \\
    && defined(__AVX512BW__) && defined(__FMA__))
#error "CPU_CAPABILITY_AVX512 without the AVX-512 instruction sets"
#endif
#if defined(WANT_AVX2) && !(defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#error "CPU_CAPABILITY_AVX2 without AVX2, FMA and F16C"
#endif
#if defined(WANT_AVX2) && defined(__AVX512F__)
#error "-march=native reached the build: this host's instruction sets, not the package's"
#endif
extern "C" __attribute__((visibility("default"))) int AOTInductorFixtureIsa(void) { return 1; }
"""


@pytest.mark.parametrize("isa", ["AVX512", "AVX2"])
def test_a_cpu_capability_brings_its_instruction_sets(cmake_project, tmp_path: Path, isa: str) -> None:
    """Inductor records CPU_CAPABILITY_<ISA> and -march=native; the host flag is dropped, so the ISA's own
    flags must come back: torch's vec512 headers failed to compile without them (Sleef's AVX-512 names)."""
    import json

    package = tmp_path / "package" / "data" / "aotinductor" / "model"
    package.mkdir(parents=True)
    (package / "cfixture.wrapper.cpp").write_text(_ISA_WRAPPER)
    flags = {
        "definitions": ["TORCH_INDUCTOR_CPP_WRAPPER", f"CPU_CAPABILITY_{isa}", f"WANT_{isa}"],
        "cflags": ["O2", "march=native", "fPIC"],
    }
    (package / "cfixture.wrapper_compile_flags.json").write_text(json.dumps(flags))
    project = cmake_project(
        PACKAGES / "cmake_model",
        {"AOTI_SHIM_SYMBOL_PREFIX": FIXTURE_PREFIX, "FIXTURE_PACKAGE": str(tmp_path / "package")},
    )
    built = project.configure_and_build()
    assert built.returncode == 0, log(built)
