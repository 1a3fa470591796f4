"""Where the installed package keeps its non-Python parts."""

from __future__ import annotations

from pathlib import Path

from aoti_shim.errors import AotiShimError

PACKAGE_DIR = Path(__file__).resolve().parent


def cmake_dir() -> Path:
    """The folder holding ``AotiShimConfig.cmake`` in this installation."""
    path = PACKAGE_DIR / "cmake"
    if not (path / "AotiShimConfig.cmake").is_file():
        raise AotiShimError(f"AotiShimConfig.cmake is missing from {path}: reinstall aoti-shim")
    return path


def shim_library() -> Path:
    """The reference shim library built into this installation."""
    path = PACKAGE_DIR / "lib" / "libaoti_shim.so"
    if not path.is_file():
        raise AotiShimError(f"the reference shim library is missing from {path.parent}: reinstall aoti-shim")
    return path
