"""``[tool.aoti-shim] cuda = true``: build ``.cu`` files with NVIDIA's nvcc wheels, no toolkit.

The key does three things:

- the build requirements gain the CUDA 13.0 compiler wheels (:data:`CUDA_WHEELS`), so an
  isolated ``pip install`` / ``pip wheel`` has nvcc, cicc, ptxas, the runtime and headers;
- CMake gets ``cmake/AotiShimCudaWheels.cmake`` as ``CMAKE_PROJECT_TOP_LEVEL_INCLUDES``
  (CMake 3.24+), with the wheels' ``nvidia/cu13`` folder: it sets ``CMAKE_CUDA_COMPILER``,
  ``CUDAToolkit_ROOT`` and what ``find_package(CUDAToolkit)`` needs before the first
  ``project()``, unless the user chose a compiler (``CMAKE_CUDA_COMPILER``, ``CUDACXX``);
- ``CMAKE_CUDA_ARCHITECTURES`` defaults to ``90`` (sm_90 code + compute_90 PTX) unless set.

Without the key, a build that fails while the project uses CUDA and no CUDA compiler is
in sight ends with a line naming the key.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aoti_shim.errors import UsageError
from aoti_shim.paths import cmake_dir

# Named here too: the tests and the docs know them as plugin.cuda.CUDA_WHEELS.
from aoti_shim.plugin.cuda_wheels import CUDA_LIBRARY_WHEELS as CUDA_LIBRARY_WHEELS
from aoti_shim.plugin.cuda_wheels import CUDA_WHEELS as CUDA_WHEELS
from aoti_shim.plugin.settings import TABLE, table_at

if TYPE_CHECKING:
    from aoti_shim.plugin.config_settings import Prepared

KEY = "cuda"
INCLUDE_FILE = "AotiShimCudaWheels.cmake"
TOP_LEVEL_INCLUDES = "CMAKE_PROJECT_TOP_LEVEL_INCLUDES"
ROOT_VAR = "AOTI_SHIM_CUDA_WHEELS_ROOT"


def wheels_root() -> Path | None:
    """The ``nvidia/cu13`` folder with ``bin/nvcc`` in this (the build) environment, if any."""
    try:
        import nvidia  # a namespace package: one folder per installing distribution
    except ImportError:
        return None
    for folder in getattr(nvidia, "__path__", ()):
        root = Path(folder) / "cu13"
        if (root / "bin" / "nvcc").is_file():
            return root.resolve()
    return None


def _chosen_compiler(settings: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    """A CUDA compiler CMake would find without us: CMAKE_CUDA_COMPILER, CUDACXX, nvcc on PATH."""
    for key in ("cmake.define.CMAKE_CUDA_COMPILER", "skbuild.cmake.define.CMAKE_CUDA_COMPILER"):
        if key in settings:
            return f"{settings[key]} (-C {key})"
    if "-DCMAKE_CUDA_COMPILER" in environ.get("CMAKE_ARGS", ""):
        return "CMAKE_CUDA_COMPILER from CMAKE_ARGS"
    if environ.get("CUDACXX"):
        return f"{environ['CUDACXX']} (CUDACXX)"
    path = shutil.which("nvcc", path=environ.get("PATH", ""))
    if path is None and environ.get("CUDA_PATH"):
        path = shutil.which("nvcc", path=os.path.join(environ["CUDA_PATH"], "bin"))
    return path


def _user_value(pyproject: Mapping[str, Any], settings: Mapping[str, Any], var: str) -> bool:
    defines = table_at(pyproject, "tool", "scikit-build", "cmake", "define")
    return var in defines or any(
        key in settings for key in (f"cmake.define.{var}", f"skbuild.cmake.define.{var}")
    )


def build_settings(
    pyproject: Mapping[str, Any],
    settings: Mapping[str, Any],
    cmake_dir: Path,
    environ: Mapping[str, str],
    root: Path | None,
) -> tuple[dict[str, Any], str]:
    """The settings for scikit-build-core with the CUDA wheels wired in, and a line for the log."""
    if _user_value(pyproject, settings, TOP_LEVEL_INCLUDES):
        raise UsageError(
            f"{TABLE} {KEY} = true sets {TOP_LEVEL_INCLUDES} itself; the project sets it too: "
            f"add {cmake_dir / INCLUDE_FILE} to yours and drop the key, or include(AotiShimCudaWheels) before project()"
        )
    out = dict(settings)
    out[f"cmake.define.{TOP_LEVEL_INCLUDES}"] = str(cmake_dir / INCLUDE_FILE)
    if root is not None:
        out[f"cmake.define.{ROOT_VAR}"] = str(root)
        chosen = _chosen_compiler(settings, {k: v for k, v in environ.items() if k != "PATH"})
        if chosen is not None:
            return out, f"cuda: the chosen compiler {chosen} wins over the nvcc wheels in {root}"
        return out, f"cuda: nvcc from the wheels in {root}"
    chosen = _chosen_compiler(settings, environ)
    if chosen is None:
        raise UsageError(
            f"{TABLE} {KEY} = true, but the build environment has no nvcc wheels and no CUDA compiler "
            f"(a --no-build-isolation build?): pip install {' '.join(CUDA_WHEELS)}"
        )
    return out, f"cuda: no nvcc wheels in the build environment; CMake uses {chosen}"


# How a CMake project turns CUDA on, for the hint after a failed build without the key.
_USES_CUDA = re.compile(
    r"\b(?:enable_language\s*\(\s*CUDA\b|project\s*\([^)]*\bCUDA\b|LANGUAGES[^)]*\bCUDA\b|find_package\s*\(\s*CUDAToolkit\b)",
    re.IGNORECASE,
)


def with_cuda(
    prepared: Prepared, pyproject: Mapping[str, Any], environ: Mapping[str, str]
) -> tuple[Prepared, str | None]:
    """The prepared settings with the nvcc wheels wired in when ``cuda = true``, and a line for the log."""
    if not prepared.gate.cuda:
        return prepared, None
    settings, line = build_settings(pyproject, prepared.skbuild_settings, cmake_dir(), environ, wheels_root())
    return dataclasses.replace(prepared, skbuild_settings=settings), line


def uses_cuda(source_dir: Path) -> bool:
    """Whether the project's CMake files turn the CUDA language on (a cheap text search)."""
    candidates = [source_dir / "CMakeLists.txt"]
    for sub in ("cmake", "src"):
        folder = source_dir / sub
        if folder.is_dir():
            candidates += sorted(folder.rglob("CMakeLists.txt"))[:50] + sorted(folder.rglob("*.cmake"))[:50]
    for path in candidates:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        # Comments would give false hits.
        text = re.sub(r"#.*", "", text)
        if _USES_CUDA.search(text):
            return True
    return False


def missing_key_hint(requested: bool, settings: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    """After a failed build without the key: the line naming it, when CUDA is the likely cause."""
    if requested or not uses_cuda(Path.cwd()) or _chosen_compiler(settings, environ) is not None:
        return None
    return (
        "this project uses CUDA and no CUDA compiler was found: set `cuda = true` under [tool.aoti-shim] in "
        "pyproject.toml to build with NVIDIA's nvcc wheels (no toolkit needed), or install a CUDA 13 toolkit"
    )
