"""Read pyproject.toml and turn the config-settings pip passes us into scikit-build-core's.

Our own ``-C aoti-shim.*`` keys are taken out (scikit-build-core's strict config would
reject them unless the project declared them), and two CMake variables go in as raw
``cmake.define`` entries, which beat anything pyproject.toml says:
``AOTI_SHIM_SYMBOL_PREFIX`` (the requested prefix, unless a raw define was given) and
``AotiShim_DIR`` (the CMake package of this very aoti-shim, so CMake and the checker
are one version), unless the project sets it itself.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as a package (a dependency there)
    import tomli as tomllib

from aoti_shim.errors import AotiShimError, UsageError
from aoti_shim.paths import cmake_dir
from aoti_shim.plugin import prefix as prefixes
from aoti_shim.plugin import settings as declared
from aoti_shim.plugin.shim_options import cmake_defines

CMAKE_PACKAGE_VAR = "AotiShim_DIR"


@dataclass(frozen=True)
class Prepared:
    """Everything decided before scikit-build-core runs."""

    skbuild_settings: dict[str, Any]
    gate: declared.GateSettings  # gate.prefix is the requested prefix
    requested: prefixes.PrefixChoice
    raw_define_source: str | None
    sources: Mapping[str, str]  # where each setting came from, for messages

    def source(self, name: str) -> str:
        return self.sources.get(name, "default")


def load_pyproject(path: str = "pyproject.toml") -> dict[str, Any]:
    """The project's pyproject.toml (PEP 517 runs every hook in the project's source tree)."""
    try:
        with open(path, "rb") as f:
            loaded: dict[str, Any] = tomllib.load(f)
            return loaded
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise AotiShimError(f"pyproject.toml: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise AotiShimError(f"pyproject.toml: invalid TOML: not UTF-8 text (byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise AotiShimError(f"pyproject.toml: invalid TOML: {e}") from None


def _project_defines(pyproject: Mapping[str, Any]) -> Mapping[str, Any]:
    return declared.table_at(pyproject, "tool", "scikit-build", "cmake", "define")


def prepare(
    pyproject: Mapping[str, Any],
    config_settings: Mapping[str, Any] | None,
    environ: Mapping[str, str] | None = None,
) -> Prepared:
    environ = os.environ if environ is None else environ
    if config_settings is not None and not isinstance(config_settings, Mapping):
        raise UsageError("config-settings must be a mapping of names to strings")
    given = dict(config_settings or {})
    bad_key = next((k for k in given if not isinstance(k, str)), None)
    if bad_key is not None:
        raise UsageError(f"config-setting name {bad_key!r} is not a string")
    project_declared = declared.declared_settings(pyproject)
    declared.check_config_keys(given, project_declared)
    resolved = declared.resolve(pyproject, given, environ)
    requested = prefixes.PrefixChoice.of(resolved.found("prefix"))
    gate = resolved.settings
    sources = {**resolved.sources, "prefix": requested.source}
    raw_source = prefixes.raw_define_source(given, environ)

    out = {k: v for k, v in given.items() if not (k.startswith(declared.CONFIG_PREFIX) and k not in project_declared)}
    if raw_source is None and requested.value is not None:
        out[f"cmake.define.{declared.CMAKE_VAR}"] = requested.value
    if (
        prefixes.raw_define_source(given, environ, CMAKE_PACKAGE_VAR) is None
        and CMAKE_PACKAGE_VAR not in _project_defines(pyproject)
    ):
        out[f"cmake.define.{CMAKE_PACKAGE_VAR}"] = str(cmake_dir())
    # force-include, names-from, exports: a raw -C cmake.define of the same variable wins.
    for key, value in cmake_defines(gate, Path.cwd()).items():
        out.setdefault(key, value)
    return Prepared(skbuild_settings=out, gate=gate, requested=requested, raw_define_source=raw_source, sources=sources)


def for_skbuild(pyproject: Mapping[str, Any], config_settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """Just the settings to pass on (the hooks that build nothing)."""
    return prepare(pyproject, config_settings).skbuild_settings
