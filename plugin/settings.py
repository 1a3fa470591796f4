"""The backend's own settings, declared once: ``[tool.aoti-shim]`` keys and ``-C aoti-shim.*``.

Each setting is one field of :class:`GateSettings`, made by :func:`setting` with its
docstring, its kind and where it may be given. Everything else derives from those
fields: the known ``[tool.aoti-shim]`` keys and config-settings, the unknown-key errors
(with a did-you-mean), the precedence (environment variable, then ``-C``, then the
table, then the default) and the settings table of docs/reference.md
(:func:`markdown_table`, held to it by a test). To add a setting, add one field.

The prefix has sources of its own around that chain (the environment variable and the
``default`` of a scikit-build-core ``config-setting`` declaration, a literal
``cmake.define``): :func:`lookup` asks them in the same walk, each once, and the
winner's value is read (and, for the prefix, validated) once, at the end. What CMake then
really gets is :mod:`aoti_shim.plugin.prefix`'s business.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from aoti_shim.checks.abi.prefix import validate  # the one prefix rule, shared with `aoti-shim check`
from aoti_shim.checks.report.model import validate_fail_on
from aoti_shim.errors import UsageError
from aoti_shim.plugin.cuda_wheels import CUDA_LIBRARY_WHEELS

TABLE = "[tool.aoti-shim]"
CONFIG_PREFIX = "aoti-shim."
# The CMake variable that carries the prefix (the rename header's macro).
CMAKE_VAR = "AOTI_SHIM_SYMBOL_PREFIX"


# --- kinds: how a value is read from TOML and from a -C string ---------------------------


@dataclass(frozen=True)
class Kind:
    """How one setting's value is read; every reader raises UsageError naming ``where``."""

    shown: str  # for the settings table of docs/reference.md
    from_toml: Callable[[object, str], Any]
    from_config: Callable[[str, str], Any] | None = None  # None: no -C form


def _string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise UsageError(f"{where} must be a string")
    return value


def _prefix(value: object, where: str) -> str:
    return validate(_string(value, where), where)


def _string_list(value: object, where: str, *, empty_ok: bool) -> tuple[str, ...]:
    if isinstance(value, str) and value:
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value) and (value or empty_ok):
        return tuple(value)
    raise UsageError(f"{where} must be a non-empty string or a list of non-empty strings")


def _empty_references(where: str) -> UsageError:
    # An empty string is an unset variable (-C aoti-shim.against=$REF), never a choice: it
    # turned COLLISION off and published the wheel. Not checking collisions is said as a list.
    return UsageError(
        f"{where} is empty: name a reference (\"torch\", a shipped snapshot such as "
        f"\"torch-2.14.1+cu130\", or a path); against = [] in {TABLE} checks prefixes only"
    )


def _references_toml(value: object, where: str) -> tuple[str, ...]:
    if value == "" or (isinstance(value, list) and any(isinstance(v, str) and not v.strip() for v in value)):
        raise _empty_references(where)
    return _string_list(value, where, empty_ok=True)


def _semicolon_list(value: str, where: str) -> tuple[str, ...]:
    # ';' separates items, as scikit-build-core does for lists given as one -C string.
    items = tuple(item.strip() for item in value.split(";") if item.strip())
    if not items:
        raise _empty_references(where)
    return items


def _fail_on(value: object, where: str) -> str:
    return validate_fail_on(value, where)


def _path(value: object, where: str) -> str:
    if not isinstance(value, str) or not value or "\0" in value:
        raise UsageError(f"{where} must be the path of a file")
    return value


def _tables(value: object, where: str) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
        raise UsageError(f"{where} must be an array of tables ([[tool.aoti-shim.suppress]])")
    return tuple(value)


_TRUE, _FALSE = frozenset({"true", "1", "yes", "on"}), frozenset({"false", "0", "no", "off"})


def _bool(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise UsageError(f"{where} must be true or false")
    return value


def _bool_text(value: str, where: str) -> bool:
    if value.strip().lower() in _TRUE:
        return True
    if value.strip().lower() in _FALSE:
        return False
    raise UsageError(f"{where} must be true or false, not {value!r}")


def _cuda_libraries(value: object, where: str) -> tuple[str, ...]:
    names = _string_list(value, where, empty_ok=True)
    unknown = [n for n in names if n not in CUDA_LIBRARY_WHEELS]
    if unknown:
        raise UsageError(
            f"{where}: unknown {', '.join(repr(n) for n in unknown)}; known: {', '.join(sorted(CUDA_LIBRARY_WHEELS))}"
        )
    return names


EXPORT_CHOICES = ("all", "shims")


def _exports(value: object, where: str) -> str:
    if value not in EXPORT_CHOICES:
        raise UsageError(f"{where} must be one of {', '.join(repr(c) for c in EXPORT_CHOICES)}, not {value!r}")
    return str(value)


PREFIX = Kind("string (a C identifier prefix)", _prefix, _prefix)
REFERENCES = Kind("string or list of strings", _references_toml, _semicolon_list)
GLOBS = Kind("string or list of strings", lambda v, w: _string_list(v, w, empty_ok=False))
PATH = Kind("string (a path)", _path, _path)
TABLES = Kind("array of tables", _tables)
FAIL_ON = Kind("string", _fail_on, _fail_on)
BOOL = Kind("boolean", _bool, _bool_text)
CUDA_LIBRARIES = Kind('list of `"curand"`, `"cublas"`', _cuda_libraries)
FOLDERS = Kind("string or list of strings (folders)", lambda v, w: _string_list(v, w, empty_ok=True))
NAMES = Kind("string or list of strings", lambda v, w: _string_list(v, w, empty_ok=True))
EXPORTS = Kind('string (`"all"` or `"shims"`)', _exports, _exports)


def setting(default: Any, *, kind: Kind, doc: str, config: bool = False, env: str | None = None) -> Any:
    """Declare one setting: a dataclass field whose metadata the rest of the plugin reads.

    ``config``: also settable as ``-C aoti-shim.<key>``; ``env``: an environment variable
    that beats every other source.
    """
    if config and kind.from_config is None:
        raise TypeError("a -C setting needs a kind that reads strings")
    return field(default=default, metadata={"doc": doc, "kind": kind, "config": config, "env": env})


@dataclass(frozen=True)
class GateSettings:
    """What the backend asks CMake for, what it checks the built wheel against, and what fails it."""

    prefix: str | None = setting(
        None,
        kind=PREFIX,
        config=True,
        env="AOTI_SHIM_PREFIX",
        doc="the private symbol prefix, passed to CMake as `AOTI_SHIM_SYMBOL_PREFIX`; "
        "unset: the CMake project decides and the check reads it from the built shims",
    )
    against: tuple[str, ...] = setting(
        ("torch",),
        kind=REFERENCES,
        config=True,
        doc='references that must not collide: `"torch"` (the target env\'s), a shipped snapshot '
        '(`"torch-2.13.0+cpu"`) or paths relative to the project; `[]` checks prefixes only; '
        'as `-C`, separated by `;`',
    )
    shims: tuple[str, ...] = setting(
        (),
        kind=GLOBS,
        doc="globs over wheel members that are shim libraries; members no `shims` or `models` glob matches "
        "are classified by their symbols",
    )
    models: tuple[str, ...] = setting(
        (), kind=GLOBS, doc="globs over wheel members that consume the shim ABI (blobs, backends)"
    )
    suppressions: str | None = setting(
        None, kind=PATH, doc="a suppressions TOML file, relative to the project"
    )
    suppress: tuple[dict[str, Any], ...] = setting(
        (), kind=TABLES, doc="inline suppressions (`[[tool.aoti-shim.suppress]]`); a `reason` is required"
    )
    fail_on: str = setting(
        "blocking", kind=FAIL_ON, config=True, doc="what fails the build: `blocking`, `any` (warnings too) or `never`"
    )
    report: str | None = setting(
        None,
        kind=PATH,
        config=True,
        doc="a file, relative to the project, that the check's text report and verdict are written to, "
        "passed or failed (default: `build/aoti-shim-report.txt`): pip shows the backend's output only on "
        "failure or with `pip -v`",
    )
    cuda: bool = setting(
        False,
        kind=BOOL,
        config=True,
        doc="build `.cu` files with NVIDIA's nvcc wheels (13.0), no CUDA toolkit: they join the build "
        "requirements and CMake gets `AotiShimCudaWheels.cmake` (`CMAKE_CUDA_COMPILER`, `CUDAToolkit_ROOT`, "
        "`CMAKE_CUDA_ARCHITECTURES` default `90`); a compiler you set (`CMAKE_CUDA_COMPILER`, `CUDACXX`) wins",
    )


    cuda_libraries: tuple[str, ...] = setting(
        (),
        kind=CUDA_LIBRARIES,
        doc="with `cuda = true`: NVIDIA's library wheels of the same CUDA 13.0 line join the build requirements, "
        "for sources that include their headers: `curand` (`nvidia-curand==10.4.0.*`: `curand_kernel.h`), "
        "`cublas` (`nvidia-cublas==13.0.*`: `cublas_v2.h`); their headers land in the include folder nvcc already uses",
    )
    force_include: bool = setting(
        False,
        kind=BOOL,
        config=True,
        doc="force-include the rename header into every C, C++ and CUDA source of the targets `aoti_shim_prefix` "
        "marks (CMake gets `AOTI_SHIM_FORCE_INCLUDE=ON`, as `FORCE_INCLUDE`): for sources that include only "
        "their own headers",
    )
    library_path: tuple[str, ...] = setting(
        (),
        kind=FOLDERS,
        doc="folders, relative to the project, where the deployment keeps libraries the built members need "
        "(`DT_NEEDED`) that no run path finds: the check looks there after the loader's own places, as "
        "`aoti-shim check --library-path`",
    )
    names_from: tuple[str, ...] = setting(
        (),
        kind=FOLDERS,
        doc="folders of your shim headers, relative to the project: every `aoti_torch_*` function their `.h`, "
        "`.hpp` and `.cuh` files declare joins the rename header of the targets `aoti_shim_prefix` marks "
        "(CMake gets `AOTI_SHIM_NAMES_FROM`, as `NAMES_FROM`)",
    )
    exports: str = setting(
        "all",
        kind=EXPORTS,
        config=True,
        doc='`"shims"`: the shared libraries `aoti_shim_prefix` marks export only the prefixed shim ABI, the '
        "caller-stream API and `export-names` (a version script, as `aoti_shim_limit_exports`); `\"all\"` leaves "
        "exports to the project",
    )
    export_names: tuple[str, ...] = setting(
        (),
        kind=NAMES,
        doc='with `exports = "shims"`: more names (or version-script globs) that stay exported',
    )


@dataclass(frozen=True)
class Declared:
    """One declared setting, as the rest of the plugin sees it."""

    name: str  # the field
    key: str  # in [tool.aoti-shim]
    default: Any
    kind: Kind
    doc: str
    config: bool
    env: str | None

    @property
    def config_key(self) -> str:
        return CONFIG_PREFIX + self.key


DECLARED: tuple[Declared, ...] = tuple(
    Declared(
        f.name,
        f.name.replace("_", "-"),
        f.default,
        f.metadata["kind"],
        f.metadata["doc"],
        f.metadata["config"],
        f.metadata["env"],
    )
    for f in dataclasses.fields(GateSettings)
)
BY_KEY: dict[str, Declared] = {d.key: d for d in DECLARED}
TABLE_KEYS: frozenset[str] = frozenset(BY_KEY)
CONFIG_KEYS: frozenset[str] = frozenset(d.config_key for d in DECLARED if d.config)


def _unknown(what: str, unknown: list[str], known: frozenset[str]) -> UsageError:
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, sorted(known), n=1)
        if close:
            hints.append(f"{name!r}: did you mean {close[0]!r}?")
    hint = f" ({'; '.join(hints)})" if hints else ""
    shown = ", ".join(repr(u) for u in unknown)
    return UsageError(f"{what}: unknown {shown}{hint}; known: {', '.join(sorted(known))}")


def table_at(pyproject: Mapping[str, Any], *keys: str) -> Mapping[str, Any]:
    """A nested table of pyproject.toml, or an empty one where any level is missing or not a table."""
    node: object = pyproject
    for key in keys:
        node = node.get(key, {}) if isinstance(node, Mapping) else {}
    return node if isinstance(node, Mapping) else {}


def tool_table(pyproject: Mapping[str, Any]) -> Mapping[str, Any]:
    """``[tool.aoti-shim]``, with every key known."""
    tool = pyproject.get("tool", {})
    if not isinstance(tool, dict):
        raise UsageError("[tool] in pyproject.toml must be a table")
    table = tool.get("aoti-shim", {})
    if not isinstance(table, dict):
        raise UsageError(f"{TABLE} must be a table")
    unknown = sorted(str(k) for k in set(table) - TABLE_KEYS)
    if unknown:
        raise _unknown(f"{TABLE} key", unknown, TABLE_KEYS)
    return table


def check_config_keys(config_settings: Mapping[str, Any], declared_by_project: frozenset[str]) -> None:
    """Every ``-C aoti-shim.*`` is ours or declared by the project to scikit-build-core."""
    unknown = sorted(
        k for k in config_settings if k.startswith(CONFIG_PREFIX) and k not in CONFIG_KEYS | declared_by_project
    )
    if unknown:
        raise _unknown("config-setting", unknown, CONFIG_KEYS)


def config_value(config_settings: Mapping[str, Any], key: str) -> str | None:
    """One ``-C key=value``, or None; a repeated or non-string one is a usage error."""
    if key not in config_settings:
        return None
    value = config_settings[key]
    if isinstance(value, list):
        if len(value) != 1:
            raise UsageError(f"-C {key} was given {len(value)} times; give it once")
        value = value[0]
    if not isinstance(value, str):
        raise UsageError(f"-C {key} must be a string")
    if "\0" in value:
        raise UsageError(f"-C {key} must not contain a NUL character")
    return value


def declaration(pyproject: Mapping[str, Any]) -> dict[str, Any] | None:
    """The project's own ``config-setting."aoti-shim.prefix"`` declaration, if any."""
    decl = table_at(pyproject, "tool", "scikit-build", "config-setting").get(BY_KEY["prefix"].config_key)
    return decl if isinstance(decl, dict) else None


def declared_settings(pyproject: Mapping[str, Any]) -> frozenset[str]:
    """The config-settings the project declares to scikit-build-core itself."""
    return frozenset(str(k) for k in table_at(pyproject, "tool", "scikit-build", "config-setting"))


# (where, the raw value or None when that source gives none, how the value is read)
_Source = tuple[str, Callable[[], Any], Callable[[Any, str], Any]]


def _sources(
    decl: Declared, pyproject: Mapping[str, Any], config_settings: Mapping[str, Any], environ: Mapping[str, str]
) -> Iterator[_Source]:
    """Where setting ``decl`` may be given, highest first; a source is read only when reached."""
    from_config = decl.kind.from_config
    prefix = decl.name == "prefix"
    own = (declaration(pyproject) or {}) if prefix else {}
    # A project's declaration of the prefix binds an environment variable of its own, which
    # beats ours, and a default below our table (scikit-build-core's order for a declared setting).
    own_env = own.get("env")
    if isinstance(own_env, str):
        assert from_config is not None  # the prefix is a string setting
        yield f"environment variable {own_env}", lambda: environ.get(own_env), from_config
    if decl.env is not None:
        env = decl.env
        assert from_config is not None  # an env setting is a string setting
        yield f"environment variable {env}", lambda: environ.get(env), from_config
    if decl.config:
        assert from_config is not None
        yield f"-C {decl.config_key}", lambda: config_value(config_settings, decl.config_key), from_config
    yield f"{TABLE} {decl.key}", lambda: tool_table(pyproject).get(decl.key), decl.kind.from_toml
    if prefix:
        default = own.get("default")
        where = f'the default of [tool.scikit-build.config-setting."{decl.config_key}"]'
        yield where, lambda: default if isinstance(default, str) else None, decl.kind.from_toml
        literal = table_at(pyproject, "tool", "scikit-build", "cmake", "define").get(CMAKE_VAR)
        where = f"[tool.scikit-build] cmake.define.{CMAKE_VAR}"
        yield where, lambda: literal if isinstance(literal, str) else None, decl.kind.from_toml


def lookup(
    name: str, pyproject: Mapping[str, Any], config_settings: Mapping[str, Any], environ: Mapping[str, str]
) -> tuple[Any, str] | None:
    """The value of setting ``name`` from its first source that gives one, with that source.

    The order, highest first: the environment variable, ``-C aoti-shim.<key>``, the table
    (and, for the prefix, the sources :func:`_sources` adds around them). Each source is
    asked once, and only the winner's value is read and validated. None: only the default applies.
    """
    decl = next(d for d in DECLARED if d.name == name)
    for where, raw, read in _sources(decl, pyproject, config_settings, environ):
        value = raw()
        if value is not None:
            return read(value, where), where
    return None


@dataclass(frozen=True)
class Resolved:
    """The settings and, per field, where its value came from (``default`` when nowhere)."""

    settings: GateSettings
    sources: Mapping[str, str]

    def source(self, name: str) -> str:
        return self.sources.get(name, "default")

    def found(self, name: str) -> tuple[Any, str] | None:
        """What :func:`lookup` found for ``name`` (None: only the default applies)."""
        return (getattr(self.settings, name), self.sources[name]) if name in self.sources else None


def resolve(
    pyproject: Mapping[str, Any], config_settings: Mapping[str, Any], environ: Mapping[str, str]
) -> Resolved:
    """Every setting from its own chain (:func:`lookup`), each source asked once."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for decl in DECLARED:
        found = lookup(decl.name, pyproject, config_settings, environ)
        if found is not None:
            values[decl.name], sources[decl.name] = found
    return Resolved(GateSettings(**values), sources)


def gate_settings(pyproject: Mapping[str, Any], config_settings: Mapping[str, Any]) -> GateSettings:
    """The settings from pyproject.toml and ``-C`` alone (no environment)."""
    return resolve(pyproject, config_settings, {}).settings


# --- the reference's table ---------------------------------------------------------------


def _shown_default(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, tuple):
        return "`[" + ", ".join(f'"{v}"' for v in value) + "]`"
    return f'`"{value}"`'


def markdown_table() -> str:
    """The settings table as docs/reference.md shows it."""
    lines = [
        f"| `{TABLE}` key | `-C` / environment | type | default | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for d in DECLARED:
        where = [f"`-C {d.config_key}=…`"] if d.config else []
        if d.env:
            where.insert(0, f"`${d.env}`")
        lines.append(
            f"| `{d.key}` | {' > '.join(where) or '-'} | {d.kind.shown} | {_shown_default(d.default)} | {d.doc} |"
        )
    return "\n".join(lines) + "\n"
