"""The AotiShim CMake package folder.

Importable so that scikit-build-core's ``cmake.root`` and ``cmake.module`` entry
points (``importlib.resources.files("aoti_shim.cmake")``) resolve to this folder.
"""

from __future__ import annotations
