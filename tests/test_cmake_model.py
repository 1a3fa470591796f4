"""aoti_shim_add_model on the recorded package_cpp_only package, and aoti_shim_check with MODELS.

The blob is built from the package's wrapper source and weights object with the rename
header force-included: it must import only prefixed shims. A shim library that provides
two of them is then checked against the blob after its build, which must fail.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cmake_support import FIXTURE_PREFIX, PACKAGES, RECORDED_PACKAGE, CMakeProject, log

Built = tuple[CMakeProject, subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def model_build(tmp_path_factory: pytest.TempPathFactory) -> Built:
    assert list(RECORDED_PACKAGE.rglob("*.wrapper.cpp")), f"no recorded package under {RECORDED_PACKAGE}"
    tmp = tmp_path_factory.mktemp("cmake-model")
    project = CMakeProject(
        PACKAGES / "cmake_model",
        tmp / "build",
        {"AOTI_SHIM_SYMBOL_PREFIX": FIXTURE_PREFIX, "FIXTURE_PACKAGE": str(RECORDED_PACKAGE), "FIXTURE_CHECK": "ON"},
    )
    return project, project.configure_and_build()


def _blob(project: CMakeProject) -> Path:
    blob = project.build / "libmlp_blob.so"
    assert blob.is_file(), "the blob was not built"
    return blob


def test_blob_imports_only_prefixed_shims(model_build: Built) -> None:
    from aoti_shim.checks.elf import ElfImage

    project, built = model_build
    with ElfImage(_blob(project)) as image:
        imports = set(image.imports())
    shim_imports = {name for name in imports if "aoti_torch_" in name}
    # The MLP needs tensor creation, metadata getters and addmm: a couple of dozen shims.
    assert len(shim_imports) >= 20, sorted(shim_imports)
    assert all(name.startswith(f"{FIXTURE_PREFIX}aoti_torch_") for name in shim_imports), sorted(shim_imports)
    assert f"{FIXTURE_PREFIX}aoti_torch_cpu_addmm_out" in shim_imports


def test_blob_exports_only_the_aoti_api(model_build: Built) -> None:
    from aoti_shim.checks.elf import ElfImage

    project, _ = model_build
    with ElfImage(_blob(project)) as image:
        exports = set(image.exports())
    assert "AOTInductorModelContainerRun" in exports
    assert not [name for name in exports if not name.startswith("AOTInductor")]


def test_check_with_models_fails_the_build_on_unsatisfied_imports(model_build: Built) -> None:
    project, built = model_build
    output = log(built)
    assert built.returncode != 0, output
    assert "aoti-shim check: partial_shim" in output or "check --shim" in output
    # The checker's table is in the build log: the blob's imports that the shim lacks...
    assert f"UNSATISFIED_IMPORT  imports '{FIXTURE_PREFIX}aoti_torch_cpu_addmm_out'" in output
    # ...and none for the two it provides, nor any unprefixed import.
    assert f"'{FIXTURE_PREFIX}aoti_torch_dtype_float32'" not in output
    assert "UNPREFIXED_IMPORT" not in output
    assert "FAILED:" in output
