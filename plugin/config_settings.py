"""Turn the config-settings pip passes us into the ones scikit-build-core gets.

Our own ``-C aoti-shim.*`` keys are taken out (scikit-build-core's strict config would
reject them unless the project declared them), and two CMake variables go in as raw
``cmake.define`` entries, which beat anything pyproject.toml says:
``AOTI_SHIM_SYMBOL_PREFIX`` (the requested prefix, unless a raw define was given) and
``AotiShim_DIR`` (the CMake package of this very aoti-shim, so CMake and the checker
are one version), unless the project sets it itself.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from aoti_shim.plugin import prefix as prefixes
from aoti_shim.plugin.settings import OWN_SETTING_PREFIX, OWN_SETTINGS, GateSettings, gate_settings
from aoti_shim.errors import UsageError

CMAKE_PACKAGE_VAR = "AotiShim_DIR"


@dataclass(frozen=True)
class Prepared:
    """Everything decided before scikit-build-core runs."""

    skbuild_settings: dict[str, Any]
    gate: GateSettings
    requested: prefixes.PrefixChoice
    raw_define_source: str | None


def cmake_package_dir() -> Path:
    """The folder of AotiShimConfig.cmake, found as the ``cmake.root`` entry point finds it."""
    spec = importlib.util.find_spec("aoti_shim.cmake")
    if spec is not None and spec.submodule_search_locations:
        folder = Path(next(iter(spec.submodule_search_locations)))
        if (folder / "AotiShimConfig.cmake").is_file():
            return folder
    from aoti_shim.paths import cmake_dir

    return cmake_dir()


def _project_defines(pyproject: Mapping[str, Any]) -> Mapping[str, Any]:
    define = pyproject.get("tool", {}).get("scikit-build", {}).get("cmake", {}).get("define", {})
    return define if isinstance(define, dict) else {}


def prepare(
    pyproject: Mapping[str, Any],
    config_settings: Mapping[str, Any] | None,
    environ: Mapping[str, str] | None = None,
) -> Prepared:
    environ = os.environ if environ is None else environ
    given = dict(config_settings or {})
    declared = prefixes.declared_settings(pyproject)
    unknown = sorted(k for k in given if k.startswith(OWN_SETTING_PREFIX) and k not in OWN_SETTINGS | declared)
    if unknown:
        raise UsageError(f"unknown config-setting(s) {', '.join(unknown)}; known: {', '.join(sorted(OWN_SETTINGS))}")
    gate = gate_settings(pyproject, given)
    requested = prefixes.requested_prefix(pyproject, given, environ)
    raw_source = prefixes.raw_define_source(given, environ)

    out = {k: v for k, v in given.items() if not (k.startswith(OWN_SETTING_PREFIX) and k not in declared)}
    if raw_source is None and requested.value is not None:
        out[f"cmake.define.{prefixes.CMAKE_VAR}"] = requested.value
    if (
        prefixes.raw_define_source(given, environ, CMAKE_PACKAGE_VAR) is None
        and CMAKE_PACKAGE_VAR not in _project_defines(pyproject)
    ):
        out[f"cmake.define.{CMAKE_PACKAGE_VAR}"] = str(cmake_package_dir())
    return Prepared(skbuild_settings=out, gate=gate, requested=requested, raw_define_source=raw_source)


def for_skbuild(pyproject: Mapping[str, Any], config_settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """Just the settings to pass on (the hooks that build nothing)."""
    return prepare(pyproject, config_settings).skbuild_settings
