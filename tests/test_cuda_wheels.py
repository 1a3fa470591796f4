"""CUDA without a toolkit: `[tool.aoti-shim] cuda = true` and AotiShimCudaWheels.cmake.

On this CPU machine, with every nvcc taken off PATH, a shim project with a `.cu` kernel
builds through an isolated `pip wheel` from a local wheelhouse that holds NVIDIA's
compiler wheels, passes the gate, and carries sm_90 code; a plain CMake project gets the
same from the CMake file alone. nvcc is slow (seconds per file, CMake's CUDA detection
about as much), so each build here is one configure and one or two `.cu` files.
"""

from __future__ import annotations

import ctypes
import os
import re
import zipfile
from pathlib import Path

import pytest

from aoti_shim.errors import EXIT_USAGE, UsageError
from aoti_shim.plugin import cuda as plugin_cuda
from cmake_support import CMakeProject
from cuda_support import add_cuda_wheels, fatbin_images, has_sm90_code, path_without_nvcc, wheels_root
from plugin_support import TargetEnv, assemble_wheelhouse, copy_fixture, make_target_env

PREFIX = "pcuda_"
EXPECTED_EXPORTS = {f"{PREFIX}aoti_torch_dtype_float32"}


def _cache_value(build: Path, name: str) -> str:
    match = re.search(rf"^{name}:[A-Z]+=(.*)$", (build / "CMakeCache.txt").read_text(), re.MULTILINE)
    assert match, f"{name} is not in the CMake cache"
    return match.group(1)


def _exports(library: Path) -> set[str]:
    from aoti_shim.checks.elf.image import ElfImage

    with ElfImage(library) as image:
        return set(image.exports())


def _run_kernel(library: Path) -> tuple[int, list[float]]:
    """pcuda_fill_iota_host: 0 and the values with a GPU, a CUDA error code without one."""
    lib = ctypes.CDLL(str(library), mode=os.RTLD_LOCAL)
    run = lib.pcuda_fill_iota_host
    run.restype = ctypes.c_int32
    run.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_int64, ctypes.c_float]
    out = (ctypes.c_float * 1000)()
    status = run(out, 1000, 0.5)
    return status, list(out)


def _check_kernel_library(library: Path) -> None:
    assert has_sm90_code(library), fatbin_images(library)
    exports = _exports(library)
    assert {n for n in exports if "aoti_torch_" in n} == EXPECTED_EXPORTS
    # The static CUDA runtime stays inside: no cuda* API name leaves the library, and
    # nvcc's registration code gives the checker nothing to report.
    assert not {n for n in exports if n.startswith("cuda")}
    from aoti_shim.checks import CheckSettings, run_check

    assert list(run_check(CheckSettings(shims=(str(library),), prefix=PREFIX)).findings) == []
    status, values = _run_kernel(library)
    if status == 0:  # a GPU: the kernel ran
        assert values == [0.5 + i for i in range(1000)]
    else:  # no driver (35), no device (100): a clean error code, no crash
        assert status in (35, 100), status


# --- isolated pip wheel -------------------------------------------------------------------


@pytest.fixture(scope="module")
def cuda_wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    house = assemble_wheelhouse(tmp_path_factory.mktemp("cuda-wheelhouse"))
    add_cuda_wheels(house)
    return house


@pytest.fixture
def target(tmp_path: Path, cuda_wheelhouse: Path) -> TargetEnv:
    return make_target_env(tmp_path / "target", cuda_wheelhouse)


@pytest.mark.slow  # about 40 s: pip installs the CUDA wheels (300 MB) into the isolated build env
def test_cuda_project_builds_isolated_from_the_nvcc_wheels(target: TargetEnv, tmp_path: Path) -> None:
    project = copy_fixture("plugin_cuda", tmp_path)
    dist = tmp_path / "dist"
    result = target.pip("wheel", "-v", "--no-deps", "-w", str(dist), str(project), PATH=path_without_nvcc())
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert re.search(r"aoti-shim: cuda: nvcc from the wheels in \S+/nvidia/cu13", out), out
    assert "The CUDA compiler identification is NVIDIA 13.0" in out
    assert re.search(r"plugin_cuda: nvcc \S+/nvidia/cu13/bin/nvcc, CUDA 13\.0\.\d+, architectures 90", out), out
    assert "OK: 0 blocking" in out
    (wheel,) = dist.glob("plugin_cuda-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        zf.extract("plugin_cuda/libpcuda_shims.so", tmp_path / "x")
    _check_kernel_library(tmp_path / "x" / "plugin_cuda" / "libpcuda_shims.so")


# --- the backend in-process ------------------------------------------------------------------


def test_requires_gain_the_cuda_wheels_only_with_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import aoti_shim.build as backend

    project = copy_fixture("plugin_cuda", tmp_path)
    monkeypatch.chdir(project)
    with_key = backend.get_requires_for_build_wheel()
    assert set(plugin_cuda.CUDA_WHEELS) <= set(with_key)
    assert all(r.endswith("==13.0.*") for r in plugin_cuda.CUDA_WHEELS)
    assert set(plugin_cuda.CUDA_WHEELS) <= set(backend.get_requires_for_build_editable())
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("cuda = true", "cuda = false"))
    assert not set(plugin_cuda.CUDA_WHEELS) & set(backend.get_requires_for_build_wheel())
    pyproject.write_text(pyproject.read_text().replace("cuda = false", 'cuda = "yes"'))
    with pytest.raises(SystemExit) as done:
        backend.get_requires_for_build_wheel()
    assert done.value.code == EXIT_USAGE


def test_build_settings_choices(tmp_path: Path) -> None:
    cmake_dir = tmp_path / "cmake"
    root = tmp_path / "nvidia" / "cu13"
    settings, line = plugin_cuda.build_settings({}, {}, cmake_dir, {"PATH": ""}, root)
    assert settings == {
        "cmake.define.CMAKE_PROJECT_TOP_LEVEL_INCLUDES": str(cmake_dir / "AotiShimCudaWheels.cmake"),
        "cmake.define.AOTI_SHIM_CUDA_WHEELS_ROOT": str(root),
    }
    assert line == f"cuda: nvcc from the wheels in {root}"
    # A compiler the user chose wins (CMake's side of it: AotiShimCudaWheels.cmake); nvcc on PATH does not.
    _, line = plugin_cuda.build_settings({}, {}, cmake_dir, {"CUDACXX": "/opt/cuda/bin/nvcc", "PATH": ""}, root)
    assert line.startswith("cuda: the chosen compiler /opt/cuda/bin/nvcc (CUDACXX) wins")
    # --no-build-isolation without the wheels: a system nvcc is used, none at all is a usage error.
    nvcc_dir = tmp_path / "bin"
    nvcc_dir.mkdir()
    (nvcc_dir / "nvcc").write_text("#!/bin/sh\n")
    (nvcc_dir / "nvcc").chmod(0o755)
    _, line = plugin_cuda.build_settings({}, {}, cmake_dir, {"PATH": str(nvcc_dir)}, None)
    assert line == f"cuda: no nvcc wheels in the build environment; CMake uses {nvcc_dir / 'nvcc'}"
    with pytest.raises(
        UsageError, match=r"no nvcc wheels and no CUDA compiler .*pip install nvidia-cuda-nvcc==13\.0\.\*"
    ):
        plugin_cuda.build_settings({}, {}, cmake_dir, {"PATH": ""}, None)
    own = {"tool": {"scikit-build": {"cmake": {"define": {"CMAKE_PROJECT_TOP_LEVEL_INCLUDES": "x.cmake"}}}}}
    with pytest.raises(UsageError, match="sets CMAKE_PROJECT_TOP_LEVEL_INCLUDES itself"):
        plugin_cuda.build_settings(own, {}, cmake_dir, {"PATH": ""}, root)


def test_without_the_key_a_missing_cuda_compiler_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import aoti_shim.build as backend

    project = copy_fixture("plugin_cuda", tmp_path)
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("cuda = true\n", ""))
    monkeypatch.chdir(project)
    monkeypatch.setenv("PATH", path_without_nvcc())
    for name in ("CUDACXX", "CUDA_PATH", "CMAKE_ARGS"):
        monkeypatch.delenv(name, raising=False)
    out_dir = tmp_path / "dist"
    out_dir.mkdir()
    with pytest.raises(SystemExit) as done:
        backend.build_wheel(str(out_dir), {"aoti-shim.against": "torch-2.13.0+cpu"})
    assert done.value.code not in (0, None)
    err = capsys.readouterr().err
    hints = [line for line in err.splitlines() if "aoti-shim: error:" in line]
    assert len(hints) == 1 and "set `cuda = true` under [tool.aoti-shim]" in hints[0], err
    assert list(out_dir.iterdir()) == []


# --- plain CMake ------------------------------------------------------------------------------


def test_plain_cmake_top_level_include_finds_the_wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The documented recipe for an unchanged project; include(AotiShimCudaWheels) before
    # project() is what the reference shims' own build does (every aoti-shim install).
    from aoti_shim.paths import cmake_dir

    monkeypatch.setenv("PATH", path_without_nvcc())
    monkeypatch.delenv("CUDACXX", raising=False)
    monkeypatch.delenv("CUDAARCHS", raising=False)
    project = CMakeProject(
        source=copy_fixture("plugin_cuda", tmp_path),
        build=tmp_path / "build",
        defines={
            "CMAKE_PROJECT_TOP_LEVEL_INCLUDES": str(cmake_dir() / "AotiShimCudaWheels.cmake"),
            "AOTI_SHIM_SYMBOL_PREFIX": PREFIX,
            "CMAKE_CUDA_ARCHITECTURES": "80",  # the default (90) is the user's to override
        },
    )
    built = project.configure_and_build()
    assert built.returncode == 0, built.stdout + built.stderr
    assert Path(_cache_value(project.build, "CMAKE_CUDA_COMPILER")) == wheels_root() / "bin" / "nvcc"
    assert Path(_cache_value(project.build, "CUDAToolkit_ROOT")) == wheels_root()
    images = {(i.kind, i.arch) for i in fatbin_images(project.build / "libpcuda_shims.so")}
    assert images == {(1, 80), (2, 80)}


def test_plain_cmake_without_the_wheels_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aoti_shim.paths import cmake_dir

    monkeypatch.setenv("PATH", path_without_nvcc())
    monkeypatch.delenv("CUDACXX", raising=False)
    source = tmp_path / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nset(AOTI_SHIM_CUDA_WHEELS_REQUIRED ON)\n"
        f'include("{cmake_dir()}/AotiShimCudaWheels.cmake")\nproject(none LANGUAGES NONE)\n'
    )
    empty = tmp_path / "nvidia" / "cu13"
    (empty / "bin").mkdir(parents=True)
    (empty / "bin" / "nvcc").write_text("")
    project = CMakeProject(source=source, build=tmp_path / "build", defines={"AOTI_SHIM_CUDA_WHEELS_ROOT": str(empty)})
    configured = project.configure()
    assert configured.returncode != 0
    message = " ".join(configured.stderr.split())  # CMake wraps long lines
    assert f"AotiShimCudaWheels: {empty}/nvvm/bin/cicc is missing (install nvidia-nvvm==13.0.*)" in message


@pytest.mark.parametrize("how", ["cache", "CUDACXX"])
def test_plain_cmake_a_chosen_compiler_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    # A system toolkit the user prefers: the file leaves the compiler alone (no CUDA is
    # enabled here, so the path need not exist), and still defaults the architectures.
    from aoti_shim.paths import cmake_dir

    chosen = "/opt/toolkit/bin/nvcc"
    monkeypatch.delenv("CUDAARCHS", raising=False)
    if how == "CUDACXX":
        monkeypatch.setenv("CUDACXX", chosen)
    else:
        monkeypatch.delenv("CUDACXX", raising=False)
    source = tmp_path / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(none LANGUAGES NONE)\n"
        'message(STATUS "compiler=[${CMAKE_CUDA_COMPILER}] root=[${CUDAToolkit_ROOT}]")\n'
    )
    defines = {"CMAKE_PROJECT_TOP_LEVEL_INCLUDES": str(cmake_dir() / "AotiShimCudaWheels.cmake")}
    if how == "cache":
        defines["CMAKE_CUDA_COMPILER"] = chosen
    project = CMakeProject(source=source, build=tmp_path / "build", defines=defines)
    configured = project.configure()
    assert configured.returncode == 0, configured.stdout + configured.stderr
    out = " ".join(configured.stdout.split())
    assert f"AotiShimCudaWheels: using the chosen CUDA compiler {chosen}" in out
    assert f"compiler=[{chosen if how == 'cache' else ''}] root=[]" in out
    assert _cache_value(project.build, "CMAKE_CUDA_ARCHITECTURES") == "90"


def test_plain_cmake_a_wheel_nvcc_given_by_hand_gets_the_wheel_fixes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hand-set recipe (CMAKE_CUDA_COMPILER = the wheel's nvcc) through this file:
    # the lib64/lib and libcudart.so fixes still apply, for that nvcc's own nvidia/cu13.
    from aoti_shim.paths import cmake_dir

    monkeypatch.delenv("CUDACXX", raising=False)
    root = tmp_path / "elsewhere" / "nvidia" / "cu13"
    source = tmp_path / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(none LANGUAGES NONE)\n"
        'message(STATUS "flags=[${CMAKE_CUDA_FLAGS}]")\n'
    )
    for rel in ("bin/nvcc", "nvvm/bin/cicc", "include/cuda_runtime.h", "lib/libcudart.so.13",
                "lib/libcudart_static.a", "include/crt/host_defines.h"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    defines = {
        "CMAKE_PROJECT_TOP_LEVEL_INCLUDES": str(cmake_dir() / "AotiShimCudaWheels.cmake"),
        "CMAKE_CUDA_COMPILER": str(root / "bin" / "nvcc"),
    }
    configured = CMakeProject(source=source, build=tmp_path / "build", defines=defines).configure()
    assert configured.returncode == 0, configured.stdout + configured.stderr
    out = " ".join(configured.stdout.split())
    assert f"AotiShimCudaWheels: CUDA from the wheels in {root}" in out
    assert f"flags=[-L{root}/lib]" in out
    assert _cache_value(tmp_path / "build", "CUDA_CUDART") == str(root / "lib" / "libcudart.so.13")


def test_cuda_libraries_name_the_library_wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import aoti_shim.build as backend

    project = copy_fixture("plugin_cuda", tmp_path)
    monkeypatch.chdir(project)
    pyproject = project / "pyproject.toml"
    base = pyproject.read_text()
    pyproject.write_text(base + 'cuda-libraries = ["curand", "cublas"]\n')
    requires = backend.get_requires_for_build_wheel()
    assert {"nvidia-curand==10.4.0.*", "nvidia-cublas==13.0.*"} <= set(requires)
    assert set(plugin_cuda.CUDA_WHEELS) <= set(requires)
    for bad, needle in (('cuda-libraries = ["cudnn"]\n', "cuda-libraries: unknown 'cudnn'; known: cublas, curand"),
                        ('cuda-libraries = ["curand"]\n', "cuda-libraries is given but cuda is false")):
        text = base + bad
        if "curand" in bad:
            text = text.replace("cuda = true", "cuda = false")
        pyproject.write_text(text)
        with pytest.raises(SystemExit) as done:
            backend.get_requires_for_build_wheel()
        assert done.value.code == EXIT_USAGE, needle
