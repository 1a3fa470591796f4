"""The hooks that build no binary: scikit-build-core's, with our settings taken out."""

from __future__ import annotations

from typing import Any

from aoti_shim.plugin.boundary import pep517_boundary
from aoti_shim.plugin.config_settings import for_skbuild, load_pyproject


def passed_on(config_settings: dict[str, Any] | None) -> dict[str, Any]:
    """The config-settings scikit-build-core gets (ours validated, then taken out)."""
    with pep517_boundary():
        return for_skbuild(load_pyproject(), config_settings)


def offered(hook: str) -> bool:
    """Whether scikit-build-core offers ``hook`` (the metadata hooks depend on the project)."""
    from scikit_build_core import build as skbuild

    return hook in skbuild.__all__


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None) -> str:
    from scikit_build_core import build as skbuild

    return skbuild.build_sdist(sdist_directory, passed_on(config_settings))


def get_requires(hook: str, config_settings: dict[str, Any] | None) -> list[str]:
    from scikit_build_core import build as skbuild

    from aoti_shim.plugin.config_settings import prepare
    from aoti_shim.plugin.cuda_wheels import CUDA_LIBRARY_WHEELS, CUDA_WHEELS

    with pep517_boundary():
        prepared = prepare(load_pyproject(), config_settings)
    # cuda = true: an isolated build gets nvcc from NVIDIA's wheels (not for an sdist), and
    # the library wheels that cuda-libraries names.
    extra: list[str] = []
    if prepared.gate.cuda and hook != "get_requires_for_build_sdist":
        extra = list(CUDA_WHEELS) + [CUDA_LIBRARY_WHEELS[name] for name in prepared.gate.cuda_libraries]
    requires: list[str] = getattr(skbuild, hook)(prepared.skbuild_settings)
    return requires + extra


def prepare_metadata(hook: str, metadata_directory: str, config_settings: dict[str, Any] | None) -> str:
    from scikit_build_core import build as skbuild

    folder: str = getattr(skbuild, hook)(metadata_directory, passed_on(config_settings))
    return folder
