"""aoti_shim_check() cannot be walked around: a rebuilt model re-runs it, no AGAINST still
checks against torch (or the build backend's references), a model named before it exists
says to define it first."""

from __future__ import annotations

from pathlib import Path

from cmake_support import log, one_line

SHIMS = """#include <aoti_shim_rename.h>
#include <cstdint>
extern "C" __attribute__((visibility("default"))) int32_t aoti_torch_device_type_cpu() { return 0; }
"""
# A blob of the prefixed ABI; REGRESS makes it call libtorch's unprefixed name as well.
MODEL = """extern int myrt_aoti_torch_device_type_cpu(void);
#ifdef REGRESS
extern int aoti_torch_get_data_ptr(void);
#endif
__attribute__((visibility("default"))) int AOTInductorModelContainerRun(void) {
#ifdef REGRESS
  return myrt_aoti_torch_device_type_cpu() + aoti_torch_get_data_ptr();
#else
  return myrt_aoti_torch_device_type_cpu();
#endif
}
"""
LISTS = """cmake_minimum_required(VERSION 3.21)
project(gate LANGUAGES C CXX)
find_package(AotiShim CONFIG REQUIRED)
{body}
"""
SHIM_TARGET = "add_library(myrt_shims SHARED shims.cpp)\naoti_shim_prefix(myrt_shims PREFIX {prefix})\n"
MODEL_TARGET = "add_library(blob SHARED model.c)\n"


def _project(root: Path, body: str, prefix: str = "myrt_", model: str = MODEL, shims: str = SHIMS) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "shims.cpp").write_text(shims)
    (root / "model.c").write_text(model)
    (root / "CMakeLists.txt").write_text(LISTS.format(body=body.format(prefix=prefix)))
    return root


def test_a_rebuilt_model_runs_the_check_again(cmake_project, tmp_path: Path) -> None:
    source = _project(
        tmp_path / "src", SHIM_TARGET + MODEL_TARGET + "aoti_shim_check(myrt_shims MODELS blob AGAINST torch)\n"
    )
    project = cmake_project(source)
    built = project.configure_and_build()
    assert built.returncode == 0, log(built)
    assert "OK: 0 blocking" in log(built)
    # The blob regresses; the shim library is unchanged. At f562a93 nothing re-ran the check
    # (it ran only after the shim's link) and the regressed blob built green.
    (source / "model.c").write_text("#define REGRESS 1\n" + MODEL)
    again = project.build_all()
    assert again.returncode != 0, log(again)
    assert "UNPREFIXED_IMPORT" in log(again) and "aoti_torch_get_data_ptr" in log(again)


def test_no_against_checks_against_torch_as_the_backend_does(cmake_project, tmp_path: Path) -> None:
    # An unprefixed shim: against torch it collides with libtorch_cpu. At f562a93 a check with
    # no AGAINST had no reference ("COLLISION skipped") and only the prefix rule spoke.
    unprefixed = SHIMS.replace("#include <aoti_shim_rename.h>\n", "")
    source = _project(
        tmp_path / "src", "add_library(myrt_shims SHARED shims.cpp)\naoti_shim_check(myrt_shims)\n", shims=unprefixed
    )
    built = cmake_project(source).configure_and_build()
    assert built.returncode != 0, log(built)
    assert "COLLISION" in log(built) and "libtorch_cpu.so" in log(built)
    assert "no --against reference given" not in log(built)


def test_no_against_under_the_backend_takes_its_references(cmake_project, tmp_path: Path) -> None:
    # The backend passes its `against` (here a shipped snapshot, no torch needed) to CMake.
    source = _project(tmp_path / "src", SHIM_TARGET + "aoti_shim_check(myrt_shims)\n")
    built = cmake_project(source, env={"AOTI_SHIM_AGAINST": "torch-2.14.1+cu130"}).configure_and_build()
    assert built.returncode == 0, log(built)
    assert "torch-2.14.1+cu130" in log(built) and "OK: 0 blocking" in log(built)


def test_models_named_before_they_exist_say_to_define_them_first(cmake_project, tmp_path: Path) -> None:
    source = _project(tmp_path / "src", SHIM_TARGET + "aoti_shim_check(myrt_shims MODELS blob)\n" + MODEL_TARGET)
    configured = cmake_project(source).configure()
    assert configured.returncode != 0
    assert (
        "aoti_shim_check: MODELS 'blob' is not a target (yet): define it first (aoti_shim_add_model(blob ...) "
        "or add_library(blob SHARED ...) above this aoti_shim_check())"
    ) in one_line(configured.stderr)
