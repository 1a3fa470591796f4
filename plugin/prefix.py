"""Which symbol prefix the build asks for, where it came from, and what CMake really gets.

Requested prefix, highest first (the order scikit-build-core uses for a declared
config-setting): the bound environment variable (``AOTI_SHIM_PREFIX``, or the ``env``
of a ``[tool.scikit-build.config-setting."aoti-shim.prefix"]`` declaration), then
``-C aoti-shim.prefix=``, then ``[tool.aoti-shim] prefix``, then the declaration's
``default``, then a literal ``cmake.define.AOTI_SHIM_SYMBOL_PREFIX`` in pyproject.toml.

What CMake gets can still differ: a raw ``-C cmake.define.AOTI_SHIM_SYMBOL_PREFIX=`` or
``SKBUILD_CMAKE_DEFINE`` beats the requested value, and a ``-D`` in ``cmake.args`` or
``CMAKE_ARGS`` comes last on the CMake command line and beats everything.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Mapping

from aoti_shim.checks.prefix import validate  # the one rule for a prefix, shared with `aoti-shim check`
from aoti_shim.errors import UsageError
from aoti_shim.plugin import settings

CMAKE_VAR = "AOTI_SHIM_SYMBOL_PREFIX"
SETTING = settings.BY_KEY["prefix"].config_key


@dataclass(frozen=True)
class PrefixChoice:
    """A prefix (None: not set) and, for people, where it came from."""

    value: str | None
    source: str


def declaration(pyproject: Mapping[str, Any]) -> dict[str, Any] | None:
    """The project's own ``config-setting."aoti-shim.prefix"`` declaration, if any."""
    decl = settings.table_at(pyproject, "tool", "scikit-build", "config-setting").get(SETTING)
    return decl if isinstance(decl, dict) else None


def declared_settings(pyproject: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(str(k) for k in settings.table_at(pyproject, "tool", "scikit-build", "config-setting"))


def requested_prefix(
    pyproject: Mapping[str, Any], config_settings: Mapping[str, Any], environ: Mapping[str, str]
) -> PrefixChoice:
    """The declared setting's own chain (:func:`settings.lookup`), inside the project's declaration."""
    decl = declaration(pyproject) or {}
    own_env = decl.get("env")
    if isinstance(own_env, str) and own_env in environ:
        source = f"environment variable {own_env}"
        return PrefixChoice(validate(environ[own_env], source), source)
    found = settings.lookup("prefix", pyproject, config_settings, environ)
    if found is not None:
        return PrefixChoice(*found)
    if isinstance(decl.get("default"), str):
        source = f'the default of [tool.scikit-build.config-setting."{SETTING}"]'
        return PrefixChoice(validate(decl["default"], source), source)
    literal = settings.table_at(pyproject, "tool", "scikit-build", "cmake", "define").get(CMAKE_VAR)
    if isinstance(literal, str):
        source = f"[tool.scikit-build] cmake.define.{CMAKE_VAR}"
        return PrefixChoice(validate(literal, source), source)
    return PrefixChoice(None, "not set")


def _skbuild_env_defines(environ: Mapping[str, str]) -> dict[str, str]:
    """``SKBUILD_CMAKE_DEFINE="A=1;B=2"`` as scikit-build-core reads it."""
    out: dict[str, str] = {}
    for item in environ.get("SKBUILD_CMAKE_DEFINE", "").split(";"):
        name, sep, value = item.strip().partition("=")
        if sep:
            out[name.partition(":")[0].strip()] = value
    return out


def raw_define_source(config_settings: Mapping[str, Any], environ: Mapping[str, str], var: str = CMAKE_VAR) -> str | None:
    """Where a raw define of ``var`` is given at build time, if it is (these beat ours)."""
    if var in _skbuild_env_defines(environ):
        return "SKBUILD_CMAKE_DEFINE"
    for key in (f"cmake.define.{var}", f"skbuild.cmake.define.{var}"):
        if key in config_settings:
            return f"-C {key}"
    return None


def last_cmake_arg_define(args: list[str], var: str = CMAKE_VAR) -> str | None:
    """The value of the last ``-D var[:TYPE]=value`` in a CMake argument list."""
    found: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-D" and i + 1 < len(args):
            body, i = args[i + 1], i + 2
        elif arg.startswith("-D"):
            body, i = arg[2:], i + 1
        else:
            i += 1
            continue
        name, sep, value = body.strip().partition("=")
        if sep and name.partition(":")[0].strip() == var:
            found = value
    return found


@dataclass(frozen=True)
class EffectivePrefix:
    choice: PrefixChoice
    warnings: tuple[str, ...]


def effective_prefix(
    requested: PrefixChoice,
    *,
    define_value: object,
    cmake_args: list[str],
    environ: Mapping[str, str],
    raw_source: str | None,
) -> EffectivePrefix:
    """What CMake will see, given scikit-build-core's resolved settings.

    ``define_value`` is ``settings.cmake.define.get(AOTI_SHIM_SYMBOL_PREFIX)`` and
    ``cmake_args`` is ``settings.cmake.args``, both as scikit-build-core resolved them.
    """
    warnings: list[str] = []

    def overridden(by: str, value: str) -> None:
        if requested.value is not None and requested.value != value:
            warnings.append(
                f"{by} sets {CMAKE_VAR}={value}, overriding {SETTING}={requested.value} "
                f"(from {requested.source}); the library gets {value!r}"
            )

    try:
        env_args = shlex.split(environ.get("CMAKE_ARGS", ""))
    except ValueError as e:  # unbalanced quotes
        raise UsageError(f"CMAKE_ARGS: {e}") from None
    from_env_args = last_cmake_arg_define(env_args)
    if from_env_args is not None:
        overridden("CMAKE_ARGS", from_env_args)
        return EffectivePrefix(PrefixChoice(validate(from_env_args, "CMAKE_ARGS"), "CMAKE_ARGS"), tuple(warnings))
    from_args = last_cmake_arg_define(list(cmake_args))
    if from_args is not None:
        overridden("cmake.args", from_args)
        return EffectivePrefix(PrefixChoice(validate(from_args, "cmake.args"), "cmake.args"), tuple(warnings))
    if define_value is None:
        return EffectivePrefix(PrefixChoice(None, "not set by the build settings"), ())
    value = str(define_value)
    if raw_source is not None:
        source = f"a raw {raw_source}"
        overridden(source, value)
        return EffectivePrefix(PrefixChoice(validate(value, source), source), tuple(warnings))
    if requested.value is None or value != requested.value:
        # pyproject's own define ({env = ...} form, or an [[overrides]] entry).
        source = f"[tool.scikit-build] cmake.define.{CMAKE_VAR}"
        overridden(source, value)
        return EffectivePrefix(PrefixChoice(validate(value, source), source), tuple(warnings))
    return EffectivePrefix(PrefixChoice(value, requested.source), ())
