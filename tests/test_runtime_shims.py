"""A runtime's existing shims (fixtures/packages/runtime_shims) built prefixed as they are.

The fixture has the shape of ExecuTorch's CUDA backend shims: sources that include only
their own headers (no aoti-shim header at all), names of their own declared in .h, .hpp
and .cuh headers, and an empty export macro. Through CMake (FORCE_INCLUDE, NAMES_FROM,
aoti_shim_limit_exports) and through pip ([tool.aoti-shim] force-include, names-from,
exports) it builds with every shim name prefixed, which `nm -D` reads; the plain build,
with the prefix alone, is the control that shows the unprefixed names the options remove.
"""

from __future__ import annotations

import concurrent.futures
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from aoti_shim.errors import UsageError
from aoti_shim.plugin import config_settings
from cmake_support import PACKAGES, CMakeProject, log

SOURCE = PACKAGES / "runtime_shims"
PREFIX = "rt_"
# torch's names the fixture defines, and the runtime's own (declared in shims.h, fused.hpp).
TORCH_NAMES = {"aoti_torch_device_type_cpu", "aoti_torch_dtype_float32", "aoti_torch_dtype_int64", "aoti_torch_get_dim"}
OWN_NAMES = {"aoti_torch_rt_int4_plain_mm", "aoti_torch_rt_fused_gelu"}
HELPER = "_ZN2rt12helper_countEv"  # rt::helper_count(), kept by name (a mangled C++ name)


def nm_exports(library: Path) -> set[str]:
    """The defined dynamic symbols, as binutils' nm reads them (the checker's reader is not the judge)."""
    done = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in done.stdout.splitlines() if line.strip()}


def _build(tmp: Path, **defines: str) -> Path:
    project = CMakeProject(SOURCE, tmp / "build", defines)
    built = project.configure_and_build()
    assert built.returncode == 0, log(built)
    return project.build / "librt_shims.so"


@pytest.fixture(scope="module")
def runtime_build(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The fixture built three ways through CMake (C and C++ only: seconds each)."""
    return {
        "cmake": _build(tmp_path_factory.mktemp("rt-cmake"), RT_CALL="cmake"),
        # Limited twice, as a pip build with exports = "shims" and an explicit call in CMakeLists.txt
        # do it: aoti_shim_prefix first (AOTI_SHIM_EXPORTS, AOTI_SHIM_EXPORT_NAMES), then the explicit NAMES.
        "limited": _build(tmp_path_factory.mktemp("rt-limited"), RT_CALL="cmake", RT_LIMIT_EXPORTS="ON",
                          AOTI_SHIM_EXPORTS="shims", AOTI_SHIM_EXPORT_NAMES=HELPER),
        "plain": _build(tmp_path_factory.mktemp("rt-plain"), RT_CALL="plain"),
    }


def _unprefixed(exports: set[str]) -> set[str]:
    return {n for n in exports if n.startswith("aoti_torch_")}


def test_the_control_exports_unprefixed_names(runtime_build: dict[str, Path]) -> None:
    # The prefix alone does nothing to sources that never include the rename header.
    assert _unprefixed(nm_exports(runtime_build["plain"])) == TORCH_NAMES | OWN_NAMES


def test_force_include_and_names_from_prefix_every_shim(runtime_build: dict[str, Path]) -> None:
    exports = nm_exports(runtime_build["cmake"])
    assert _unprefixed(exports) == set()
    # C (dtypes.c) and C++ sources alike; the runtime's own names through NAMES_FROM.
    assert {PREFIX + n for n in TORCH_NAMES | OWN_NAMES} <= exports
    assert "rt_runtime_version" in exports and any("helper_count" in n for n in exports)


def test_limit_exports_keeps_the_shim_abi_and_the_listed_names(runtime_build: dict[str, Path]) -> None:
    # One version script holding both calls' names (a shared library takes one).
    exports = nm_exports(runtime_build["limited"])
    assert exports == {PREFIX + n for n in TORCH_NAMES | OWN_NAMES} | {"rt_runtime_version", HELPER}
    script = (runtime_build["limited"].parent / "aoti_shim_exports" / "rt_shims.map").read_text()
    assert script.count("global:") == 1 and "rt_runtime_version;" in script and f"{HELPER};" in script


def test_the_generated_rename_header_holds_the_own_names(runtime_build: dict[str, Path]) -> None:
    from aoti_shim.rename_header import header_names

    header = runtime_build["cmake"].parent / "aoti_shim_rename" / "aoti_shim_rename.h"
    names = header_names(header.read_text())
    # The .cuh's name too, though this build compiles no CUDA.
    assert OWN_NAMES | {"aoti_torch_rt_sort_u32"} <= names
    assert "aoti_torch_empty_strided" in names  # torch's names stay


def test_pip_keys_pass_the_cmake_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "include").mkdir()
    monkeypatch.chdir(tmp_path)
    tool = {
        "prefix": "rt_",
        "force-include": True,
        "names-from": ["include/"],
        "exports": "shims",
        "export-names": "rt_v*",
    }
    out = config_settings.prepare({"tool": {"aoti-shim": tool}}, {}, {}).skbuild_settings
    assert out["cmake.define.AOTI_SHIM_FORCE_INCLUDE"] == "ON"
    assert out["cmake.define.AOTI_SHIM_NAMES_FROM"] == str(tmp_path / "include")
    assert out["cmake.define.AOTI_SHIM_EXPORTS"] == "shims"
    assert out["cmake.define.AOTI_SHIM_EXPORT_NAMES"] == "rt_v*"
    # Unset keys pass nothing: a project without them configures as before.
    bare = config_settings.prepare({"tool": {"aoti-shim": {"prefix": "rt_"}}}, {}, {}).skbuild_settings
    assert not any(
        k.startswith("cmake.define.AOTI_SHIM_") and k != "cmake.define.AOTI_SHIM_SYMBOL_PREFIX" for k in bare
    )
    with pytest.raises(UsageError, match=r"names-from 'nowhere/': .* is not a folder"):
        config_settings.prepare({"tool": {"aoti-shim": {"names-from": "nowhere/"}}}, {}, {})
    with pytest.raises(UsageError, match=r"exports must be one of 'all', 'shims', not 'some'"):
        config_settings.prepare({"tool": {"aoti-shim": {"exports": "some"}}}, {}, {})
    with pytest.raises(UsageError, match=r'export-names is given but exports is "all"'):
        config_settings.prepare({"tool": {"aoti-shim": {"export-names": ["x"]}}}, {}, {})


def _pip_build(project: Path, out_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import aoti_shim.build as backend

    out_dir.mkdir()
    monkeypatch.chdir(project)
    name = backend.build_wheel(str(out_dir))
    with zipfile.ZipFile(out_dir / name) as zf:
        zf.extract("rt_shims/librt_shims.so", out_dir / "x")
    return out_dir / "x" / "rt_shims" / "librt_shims.so"


def test_pip_force_include_names_from_and_exports(
    plugin_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AOTI_SHIM_PREFIX", "AOTI_SHIM_TORCH", "CMAKE_ARGS", "SKBUILD_CMAKE_DEFINE"):
        monkeypatch.delenv(name, raising=False)
    project = plugin_project("runtime_shims")
    exports = nm_exports(_pip_build(project, tmp_path / "dist", monkeypatch))
    assert _unprefixed(exports) == set()
    assert {PREFIX + n for n in TORCH_NAMES | OWN_NAMES} <= exports
    # exports = "shims" with export-names: the same library limited to the shim ABI.
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'exports = "shims"\nexport-names = ["rt_runtime_version"]\n')
    exports = nm_exports(_pip_build(project, tmp_path / "dist-limited", monkeypatch))
    assert exports == {PREFIX + n for n in TORCH_NAMES | OWN_NAMES} | {"rt_runtime_version"}


# --- the CUB sort: CCCL's inline templates collide with libtorch_cuda.so's ---------------------

# What keeps a system CUDA toolkit (this machine has one under /usr/local/cuda, with nvcc on
# PATH) out of the "no toolkit" builds: every folder holding an nvcc is taken off PATH, the
# variables that name a toolkit are unset, and AotiShimCudaWheels.cmake points
# CMAKE_CUDA_COMPILER and CUDAToolkit_ROOT at the wheels before project(); the test then
# reads the CMake cache to prove that no path of the build leads into a toolkit.
_TOOLKIT_VARIABLES = ("CUDACXX", "CUDA_PATH", "CUDA_HOME", "CUDA_ROOT", "CUDAToolkit_ROOT", "CUDAARCHS")


def _cuda_build(tmp: Path, **defines: str) -> Path:
    """One build of the fixture with CUDA; the caller has taken the toolkit out of the environment."""
    from aoti_shim.paths import cmake_dir

    wheels_toolchain = str(cmake_dir() / "AotiShimCudaWheels.cmake")
    return _build(tmp, RT_WITH_CUDA="ON", CMAKE_PROJECT_TOP_LEVEL_INCLUDES=wheels_toolchain, **defines)


def toolkit_paths(build: Path) -> list[str]:
    """Cache entries that lead into a CUDA toolkit rather than NVIDIA's wheels."""
    return [
        line
        for line in (build / "CMakeCache.txt").read_text().splitlines()
        if "/usr/local/cuda" in line or "/opt/cuda" in line
    ]


@pytest.fixture(scope="module")
def cuda_runtime_build(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The fixture with its CUB sort, nvcc and libcudart from the wheels, exports limited or not.
    The two builds run at once: each is mostly one nvcc compile of the CUB sort (one core), so
    on 2 cores the pair takes about as long as one (issue 34)."""
    from cuda_support import path_without_nvcc

    configurations = {
        "all": (tmp_path_factory.mktemp("rt-cuda-all"), {"RT_CALL": "cmake"}),
        # With the cuRAND fill too: curand_kernel.h from the nvidia-curand wheel (the test extra has it).
        "limited": (
            tmp_path_factory.mktemp("rt-cuda-limited"),
            {"RT_CALL": "cmake", "RT_LIMIT_EXPORTS": "ON", "RT_WITH_CURAND": "ON"},
        ),
    }
    # The environment is changed once, around both builds: a change inside a thread would be
    # undone under the other build.
    with pytest.MonkeyPatch.context() as patch, concurrent.futures.ThreadPoolExecutor(len(configurations)) as pool:
        for name in _TOOLKIT_VARIABLES:
            patch.delenv(name, raising=False)
        patch.setenv("PATH", path_without_nvcc())
        futures = {key: pool.submit(_cuda_build, tmp, **defines) for key, (tmp, defines) in configurations.items()}
        return {key: future.result() for key, future in futures.items()}


def _collisions(library: Path) -> list[str]:
    from aoti_shim.checks import CheckSettings, run_check

    result = run_check(CheckSettings(shims=(str(library),), against=("torch-2.14.1+cu130",), prefix=PREFIX))
    return sorted(f.symbol for f in result.findings if f.rule == "COLLISION")


def test_cub_sort_collides_with_libtorch_cuda_unless_exports_are_limited(cuda_runtime_build: dict[str, Path]) -> None:
    from cuda_support import wheels_root

    for library in cuda_runtime_build.values():
        assert toolkit_paths(library.parent) == []
        cache = (library.parent / "CMakeCache.txt").read_text()
        assert re.search(
            rf"^CMAKE_CUDA_COMPILER:[A-Z]+={re.escape(str(wheels_root() / 'bin' / 'nvcc'))}$", cache, re.M
        ), cache
    collisions = _collisions(cuda_runtime_build["all"])
    # CCCL/libcu++ inline templates (cuda::__4::cuda_error, ...) that libtorch_cuda.so exports too.
    assert len(collisions) >= 10 and all(
        s.startswith(("_ZN4cuda", "_ZTIN4cuda", "_ZTSN4cuda", "_ZTVN4cuda", "_ZN3cub", "_ZNSt", "_ZSt", "_ZN6thrust"))
        for s in collisions
    ), collisions
    assert any(s.startswith("_ZN4cuda3__410cuda_error") for s in collisions), collisions
    assert _collisions(cuda_runtime_build["limited"]) == []
    cuda_names = {"aoti_torch_rt_sort_u32", "aoti_torch_rt_rand_fill"}
    assert nm_exports(cuda_runtime_build["limited"]) == {PREFIX + n for n in TORCH_NAMES | OWN_NAMES | cuda_names} | {
        "rt_runtime_version"
    }
