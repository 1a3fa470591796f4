"""The plugin's own settings: ``[tool.aoti-shim]`` in pyproject.toml plus ``-C aoti-shim.*``.

The prefix itself is resolved in :mod:`aoti_shim.plugin.prefix`, since it has to agree
with what scikit-build-core hands to CMake; everything else the gate needs is here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from aoti_shim.checks.report import validate_fail_on
from aoti_shim.errors import UsageError

TABLE = "[tool.aoti-shim]"

# Keys a downstream pyproject may put in [tool.aoti-shim].
_KNOWN_KEYS = frozenset({"prefix", "against", "shims", "models", "suppressions", "suppress", "fail-on"})

# Config-settings (-C name=value) this backend answers itself.
OWN_SETTING_PREFIX = "aoti-shim."
OWN_SETTINGS = frozenset({"aoti-shim.prefix", "aoti-shim.against", "aoti-shim.fail-on"})


@dataclass(frozen=True)
class GateSettings:
    """What to check in the built wheel, against what, and what fails the build."""

    against: tuple[str, ...] = ("torch",)
    shims: tuple[str, ...] = ()  # globs over wheel member paths; empty: classify by symbols
    models: tuple[str, ...] = ()
    suppressions: str | None = None  # a TOML file, relative to the project
    inline_suppressions: tuple[dict[str, str], ...] = ()
    fail_on: str = "blocking"
    against_source: str = "default"


def tool_table(pyproject: Mapping[str, Any]) -> dict[str, Any]:
    table = pyproject.get("tool", {}).get("aoti-shim", {})
    if not isinstance(table, dict):
        raise UsageError(f"{TABLE} must be a table")
    unknown = sorted(set(table) - _KNOWN_KEYS)
    if unknown:
        raise UsageError(f"{TABLE}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_KNOWN_KEYS))}")
    return table


def _string_list(value: object, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise UsageError(f"{where} must be a string or a list of non-empty strings")


def _single(config_settings: Mapping[str, Any], name: str) -> str | None:
    if name not in config_settings:
        return None
    value = config_settings[name]
    if isinstance(value, list):
        if len(value) != 1:
            raise UsageError(f"-C {name} was given {len(value)} times; give it once")
        value = value[0]
    if not isinstance(value, str):
        raise UsageError(f"-C {name} must be a string")
    return value


def config_value(config_settings: Mapping[str, Any], name: str) -> str | None:
    """One ``-C name=value`` of ours, or None; a repeated one is a usage error."""
    return _single(config_settings, name)


def gate_settings(pyproject: Mapping[str, Any], config_settings: Mapping[str, Any]) -> GateSettings:
    table = tool_table(pyproject)
    against: tuple[str, ...] = ("torch",)
    against_source = "default"
    if "against" in table:
        against = () if table["against"] == [] else _string_list(table["against"], f"{TABLE} against")
        against_source = f"{TABLE} against"
    cs_against = _single(config_settings, "aoti-shim.against")
    if cs_against is not None:
        # ';' separates several references, as scikit-build-core does for lists.
        against = tuple(p.strip() for p in cs_against.split(";") if p.strip())
        against_source = "-C aoti-shim.against"

    fail_on = table.get("fail-on", "blocking")
    cs_fail_on = _single(config_settings, "aoti-shim.fail-on")
    if cs_fail_on is not None:
        fail_on = cs_fail_on
    fail_on = validate_fail_on(fail_on, "fail-on")

    suppressions = table.get("suppressions")
    if suppressions is not None and (not isinstance(suppressions, str) or not suppressions):
        raise UsageError(f"{TABLE} suppressions must be the path of a TOML file")
    inline = table.get("suppress", [])
    if not isinstance(inline, list) or not all(isinstance(e, dict) for e in inline):
        raise UsageError(f"{TABLE} suppress must be an array of tables ([[tool.aoti-shim.suppress]])")

    return GateSettings(
        against=against,
        shims=_string_list(table["shims"], f"{TABLE} shims") if "shims" in table else (),
        models=_string_list(table["models"], f"{TABLE} models") if "models" in table else (),
        suppressions=suppressions,
        inline_suppressions=tuple(inline),
        fail_on=fail_on,
        against_source=against_source,
    )
