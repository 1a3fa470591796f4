"""``aoti_shim.build``: scikit-build-core's PEP 517 backend with the prefix and the check built in.

A downstream project opts in with::

    [build-system]
    requires = ["scikit-build-core>=1.1,<2", "aoti-shim"]
    build-backend = "aoti_shim.build"

Each hook passes on the config-settings with our ``-C aoti-shim.*`` keys taken out and
the prefix put in as ``cmake.define.AOTI_SHIM_SYMBOL_PREFIX``. ``build_wheel`` and
``build_editable`` build into a private folder, check the wheel, and publish it into
``wheel_directory`` only when it passes. The hooks live in :mod:`aoti_shim.plugin`;
this module only names them.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from aoti_shim.errors import EXIT_TOOL_ERROR
from aoti_shim.plugin import console as _console

# scikit-build-core is a dependency of aoti-shim, but an install with --no-deps (or a build
# environment that removed it) lacks it: pip then shows this one line and exit status 1
# instead of the import traceback of every hook.
if importlib.util.find_spec("scikit_build_core") is None:
    _console.error(
        "the build backend aoti_shim.build needs scikit-build-core, which is not installed: "
        'add "scikit-build-core>=1.1,<2" to [build-system] requires, or pip install "scikit-build-core>=1.1,<2" '
        "into the environment of a --no-build-isolation build"
    )
    raise SystemExit(EXIT_TOOL_ERROR)

# After the check above, which must say its one line before any scikit-build-core import fails.
from aoti_shim.plugin import passthrough as _passthrough

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
]


def build_wheel(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    # Lazy (here and in build_editable): only the hooks that check a wheel import the checker.
    from aoti_shim.plugin.wheel import build

    return build("wheel", wheel_directory, config_settings, metadata_directory)


def build_editable(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    from aoti_shim.plugin.wheel import build

    return build("editable", wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    return _passthrough.build_sdist(sdist_directory, config_settings)


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _passthrough.get_requires("get_requires_for_build_sdist", config_settings)


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _passthrough.get_requires("get_requires_for_build_wheel", config_settings)


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _passthrough.get_requires("get_requires_for_build_editable", config_settings)


# Offered exactly when scikit-build-core offers them (not when its metadata may depend on a failed build).
if _passthrough.offered("prepare_metadata_for_build_wheel"):

    def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: dict[str, Any] | None = None) -> str:
        return _passthrough.prepare_metadata("prepare_metadata_for_build_wheel", metadata_directory, config_settings)

    __all__ += ["prepare_metadata_for_build_wheel"]

if _passthrough.offered("prepare_metadata_for_build_editable"):

    def prepare_metadata_for_build_editable(
        metadata_directory: str, config_settings: dict[str, Any] | None = None
    ) -> str:
        return _passthrough.prepare_metadata("prepare_metadata_for_build_editable", metadata_directory, config_settings)

    __all__ += ["prepare_metadata_for_build_editable"]
