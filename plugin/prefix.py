"""Which symbol prefix the build asks for, where it came from, and what CMake really gets.

Requested prefix, highest first (the order scikit-build-core uses for a declared
config-setting): the bound environment variable (``AOTI_SHIM_PREFIX``, or the ``env``
of a ``[tool.scikit-build.config-setting."aoti-shim.prefix"]`` declaration), then
``-C aoti-shim.prefix=``, then ``[tool.aoti-shim] prefix``, then the declaration's
``default``, then a literal ``cmake.define.AOTI_SHIM_SYMBOL_PREFIX`` in pyproject.toml.
That chain is the prefix setting's own (:func:`aoti_shim.plugin.settings.lookup`): each
source asked once, the winner validated once.

What CMake gets can still differ: a raw ``-C cmake.define.AOTI_SHIM_SYMBOL_PREFIX=`` or
``SKBUILD_CMAKE_DEFINE`` beats the requested value, and a ``-D`` in ``cmake.args`` or
``CMAKE_ARGS`` comes last on the CMake command line and beats everything. Those are
weighed in one walk too (:func:`_cmake_gets`), and the value CMake gets is validated once.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aoti_shim.checks.abi.prefix import separator_warning, validate  # the one rule, shared with `aoti-shim check`
from aoti_shim.errors import UsageError
from aoti_shim.plugin import settings
from aoti_shim.plugin.settings import CMAKE_VAR

SETTING = settings.BY_KEY["prefix"].config_key
NOT_SET = "not set"


@dataclass(frozen=True)
class PrefixChoice:
    """A prefix (None: not set) and, for people, where it came from."""

    value: str | None
    source: str

    @classmethod
    def of(cls, found: tuple[str, str] | None) -> PrefixChoice:
        """The choice from what :func:`settings.lookup` found (None: nothing)."""
        return cls(*found) if found is not None else cls(None, NOT_SET)


def requested_prefix(
    pyproject: Mapping[str, Any], config_settings: Mapping[str, Any], environ: Mapping[str, str]
) -> PrefixChoice:
    """The prefix the build asks for: the prefix setting's chain (:func:`settings.lookup`)."""
    return PrefixChoice.of(settings.lookup("prefix", pyproject, config_settings, environ))


def _skbuild_env_defines(environ: Mapping[str, str]) -> dict[str, str]:
    """``SKBUILD_CMAKE_DEFINE="A=1;B=2"`` as scikit-build-core reads it."""
    out: dict[str, str] = {}
    for item in environ.get("SKBUILD_CMAKE_DEFINE", "").split(";"):
        name, sep, value = item.strip().partition("=")
        if sep:
            out[name.partition(":")[0].strip()] = value
    return out


def raw_define_source(
    config_settings: Mapping[str, Any], environ: Mapping[str, str], var: str = CMAKE_VAR
) -> str | None:
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


def _cmake_gets(
    define_value: object,
    cmake_args: list[str],
    environ: Mapping[str, str],
    raw_source: str | None,
    requested: PrefixChoice,
) -> tuple[str | None, str]:
    """The value CMake's command line ends up with and where it comes from, highest first."""
    try:
        env_args = shlex.split(environ.get("CMAKE_ARGS", ""))
    except ValueError as e:  # unbalanced quotes
        raise UsageError(f"CMAKE_ARGS: {e}") from None
    # A -D in CMAKE_ARGS comes last on CMake's command line, then one in cmake.args.
    for source, args in (("CMAKE_ARGS", env_args), ("cmake.args", list(cmake_args))):
        found = last_cmake_arg_define(args)
        if found is not None:
            return found, source
    if define_value is None:
        return None, "not set by the build settings"
    value = str(define_value)
    if raw_source is not None:
        return value, f"a raw {raw_source}"
    if requested.value is None or value != requested.value:
        # pyproject's own define ({env = ...} form, or an [[overrides]] entry).
        return value, f"[tool.scikit-build] cmake.define.{CMAKE_VAR}"
    return value, requested.source  # our injected define, as requested


def effective_prefix(
    requested: PrefixChoice,
    *,
    define_value: object,
    cmake_args: list[str],
    environ: Mapping[str, str],
    raw_source: str | None,
) -> EffectivePrefix:
    """What CMake will see, given scikit-build-core's resolved settings: validated once, here.

    ``define_value`` is ``settings.cmake.define.get(AOTI_SHIM_SYMBOL_PREFIX)`` and
    ``cmake_args`` is ``settings.cmake.args``, both as scikit-build-core resolved them.
    """
    value, source = _cmake_gets(define_value, cmake_args, environ, raw_source, requested)
    if value is None:
        return EffectivePrefix(PrefixChoice(None, source), ())
    choice = PrefixChoice(validate(value, source), source)
    # The prefix the library gets, whichever source won, is the one warned of.
    warnings = tuple(w for w in (separator_warning(value, source),) if w is not None)
    if requested.value is None or requested.value == value:
        return EffectivePrefix(choice, warnings)
    overridden = (
        f"{source} sets {CMAKE_VAR}={value}, overriding {SETTING}={requested.value} "
        f"(from {requested.source}); the library gets {value!r}"
    )
    return EffectivePrefix(choice, (overridden, *warnings))
