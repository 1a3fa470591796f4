"""Where the installed package keeps its non-Python parts."""

from __future__ import annotations

from pathlib import Path

from aoti_shim.errors import AotiShimError

PACKAGE_DIR = Path(__file__).resolve().parent
# How a broken installation is mended until aoti-shim is on an index (every hint names a route that works).
REINSTALL = "reinstall aoti-shim (pip install --force-reinstall <the aoti-shim clone>)"


def cmake_dir() -> Path:
    """The folder holding ``AotiShimConfig.cmake`` in this installation."""
    path = PACKAGE_DIR / "cmake"
    if not (path / "AotiShimConfig.cmake").is_file():
        raise AotiShimError(f"AotiShimConfig.cmake is missing from {path}: {REINSTALL}")
    return path


def shim_library() -> Path:
    """The reference shim library built into this installation."""
    path = PACKAGE_DIR / "lib" / "libaoti_shim.so"
    if not path.is_file():
        raise AotiShimError(f"the reference shim library is missing from {path.parent}: {REINSTALL}")
    return path
