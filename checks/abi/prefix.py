"""The shim ABI and the prefix rules: validate, split, infer, what a library carries.

This module is the one home of "is this name shim ABI, and what is its prefixed form",
of the rule a prefix obeys (:func:`validate`), of the project's own default prefix and of
"the prefix a built library carries" (:func:`built_prefix`): the checker's rules and
binding model, the pip plugin's gate, the smoke, the bench, the rename header and the
import rewriter all ask here. Shim ABI is what torch's shim headers declare
(``torch_shim_names.txt``): every ``aoti_torch_*`` name, the few functions of
``c/shim.h`` spelled otherwise (``aoti_record_function_start`` and ``_end``, which a blob
compiled with ``profiler_mark_wrapper_call=True`` imports), and the stable C ABI's
``torch_*`` functions (``torch/csrc/stable/c/shim.h``: ``torch_from_blob``...), which
stable-ABI extensions import and a slim runtime may define. A runtime's own
``aoti_torch_*`` names count by their spelling; a ``torch_*`` name only when torch declares it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from aoti_shim.errors import UsageError
from aoti_shim.torch_names import shipped_names

# The rule's data, shared with CMake (cmake/AotiShimConfig.cmake reads the same file), so
# the two languages cannot disagree on the default prefix or on what a prefix may be.
RULE_FILE = Path(__file__).with_name("prefix_rule.txt")


def _read_rule(path: Path) -> dict[str, str]:
    rule: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            rule[key] = value
    return rule


_RULE = _read_rule(RULE_FILE)
# Almost every AOTInductor shim function's name holds this; a private prefix goes in front of it.
SHIM_MARK = _RULE["shim_mark"]
# The reference shim library's prefix when its build is given none.
DEFAULT_PREFIX = _RULE["default_prefix"]

_IDENTIFIER = re.compile(_RULE["identifier"])
# Every AOTInductor blob exports its loader entry points under this prefix
# (AOTInductorModelContainerCreateWithDevice, ...Run, ...Delete).
MODEL_ENTRY_PREFIX = "AOTInductorModelContainer"


@lru_cache(maxsize=1)
def other_shim_names() -> frozenset[str]:
    """The shim-ABI functions torch's headers declare without the ``aoti_torch_`` marker:
    ``aoti_record_function_*``, and the stable C ABI's ``torch_*`` (stable/c/shim.h)."""
    return frozenset(n for n in shipped_names().names if not n.startswith(SHIM_MARK))


# Every shim-ABI name, prefixed or not, holds one of these: the cheap test before the exact one.
_SPELLINGS = ("aoti_", "torch_")


def may_be_shim_name(name: str) -> bool:
    """The C-fast substring test most names fail; True does not yet mean shim ABI."""
    return "aoti_" in name or "torch_" in name


def _split_at(name: str) -> int | None:
    """Where the shim-ABI name in ``name`` starts behind an identifier prefix (0: unprefixed),
    or None. The first start wins: ``aoti_torch_x`` is unprefixed, never ``aoti_`` + ``torch_x``."""
    others = other_shim_names()
    first: int | None = None
    for spelling in _SPELLINGS:
        at = name.find(spelling)
        while at != -1 and (first is None or at < first):
            rest = name[at:]
            if rest.startswith(SHIM_MARK) or rest in others:
                first = at
                break
            at = name.find(spelling, at + 1)
    if first is None or (first and not _IDENTIFIER.fullmatch(name[:first])):
        return None
    return first


def is_mangled(name: str) -> bool:
    """True for a C++-mangled name (Itanium ABI: ``_Z...``): a shim defined without
    ``extern "C"`` (``_Z20myrt_aoti_torch_xv``) is no C shim name, whatever it holds."""
    return name.startswith("_Z")


def is_shim_name(name: str) -> bool:
    """True for shim ABI, ``aoti_torch_x``, ``aoti_record_function_start`` or a stable C ABI
    ``torch_from_blob``, and any prefixed ``<p>aoti_torch_x``, ``<p>torch_from_blob``...; the
    ``aoti_torch_`` marker counts anywhere in the name (a mangled one too: see is_mangled)."""
    known = _SHIM_NAME_ANSWERS.get(name)
    if known is None:
        known = SHIM_MARK in name or (may_be_shim_name(name) and not is_mangled(name) and _split_at(name) is not None)
        if len(_SHIM_NAME_ANSWERS) < _ANSWERS_KEPT:
            _SHIM_NAME_ANSWERS[name] = known
    return known


# is_shim_name's answers: the binding model and the rules ask it of each import four or five
# times, and every blob imports the same names (libc's, the shim ABI's). Bounded.
_SHIM_NAME_ANSWERS: dict[str, bool] = {}
_ANSWERS_KEPT = 1 << 16


# Every shim-ABI name holds one of these: shim_names' first test, and what a reader searches
# a big string table for before it (check's reading of a library).
SHIM_NAME_NEEDLES = ("aoti_", "torch_")


def shim_names(names: Iterable[str]) -> list[str]:
    """The shim-ABI names of ``names``, in order: the C-fast substring test first (a
    library's 75k exports hold a few hundred candidates), the exact one on what passes.
    The test spells SHIM_NAME_NEEDLES out: a generator over them costs twice as much."""
    return [n for n in names if ("aoti_" in n or "torch_" in n) and is_shim_name(n)]


def is_unprefixed(name: str) -> bool:
    """True for libtorch's own spelling of a shim-ABI name (``aoti_torch_x``,
    ``aoti_record_function_start``, ``torch_from_blob``)."""
    return name.startswith(SHIM_MARK) or name in other_shim_names()


def prefixed(name: str, prefix: str) -> str:
    """The prefixed form of the shim-ABI name ``name``: what the rename header makes of it."""
    return prefix + name


def prefix_of(name: str) -> str | None:
    """The prefix in front of the shim-ABI name in ``name`` ('' when unprefixed), or None
    when ``name`` is no shim name behind an identifier prefix."""
    if is_mangled(name) or not may_be_shim_name(name):
        return None  # mangled: no prefix a C name carries (see is_mangled)
    at = _split_at(name)
    return None if at is None else name[:at]


def validate(prefix: str, source: str | None = None) -> str:
    """``prefix`` when it can go in front of ``aoti_torch_X`` in a C name, else a UsageError.

    Matched in full (``re.fullmatch``): ``'myrt_\\n'`` is refused, as CMake refuses it.
    ``source`` says where the prefix came from (the plugin's ``-C aoti-shim.prefix``,
    ``CMAKE_ARGS``...); None means the ``--prefix`` option.
    """
    given = f"--prefix {prefix!r}" if source is None else f"prefix {prefix!r} from {source}"
    if not isinstance(prefix, str) or not _IDENTIFIER.fullmatch(prefix):
        raise UsageError(f"{given} is not a C identifier prefix (letters, digits, '_'; not empty)")
    if prefix.startswith(SHIM_MARK):
        raise UsageError(f"{given} starts with '{SHIM_MARK}', which libtorch uses itself")
    return prefix


def lacks_separator(prefix: str) -> bool:
    """True for a prefix that does not end in ``_``: legal, but ``myrt`` gives
    ``myrtaoti_torch_x``, which reads as one word; every channel warns of it (CMake's
    resolver keeps its own copy of this rule)."""
    return bool(prefix) and not prefix.endswith("_")


def separator_warning(prefix: str, source: str | None = None) -> str | None:
    """The warning every channel gives for :func:`lacks_separator`, or None; ``source`` as
    for :func:`validate`."""
    if not lacks_separator(prefix):
        return None
    given = f"--prefix {prefix!r}" if source is None else f"prefix {prefix!r} from {source}"
    return (
        f"{given} does not end in '_': shim names become {prefix}{SHIM_MARK}x; "
        f"did you mean {prefix + '_'!r}?"
    )


def carried(names: Iterable[str]) -> dict[str, int]:
    """How many of ``names`` carry each non-empty prefix in front of ``aoti_torch_``."""
    found: dict[str, int] = {}
    for name in names:
        p = prefix_of(name)
        if p:
            found[p] = found.get(p, 0) + 1
    return found


def built_prefix(*libraries: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> str | None:
    """The one prefix the built ``libraries`` export their ``aoti_torch_*`` names with.

    None when they export no prefixed shim name; a UsageError when they carry more than one.
    For a caller that must go by what was built, not by what was asked for. With ``root``,
    each library is a path under it and is named by that path in errors (a wheel's member).
    """
    # Lazy: the rule's other users (the build backend's settings, the CLI) read no ELF file.
    from aoti_shim.checks.elf.image import ElfImage

    names: list[str] = []
    for library in libraries:
        path, display = (os.path.join(root, library), os.fspath(library)) if root is not None else (library, None)
        with ElfImage(path, display=display) as image:
            names += image.exports()
    return infer(names)


def given_or_built(given: str | None, library: str | os.PathLike[str]) -> str | None:
    """The prefix to drive ``library`` with: ``given`` (the ``--prefix`` option) when set, else
    the one it carries (None: it carries none)."""
    return validate(given) if given is not None else built_prefix(library)


def describe(prefixes: Iterable[str]) -> str:
    """``'a_', 'b_'`` for messages."""
    return ", ".join(repr(p) for p in sorted(prefixes))


def infer(names: Iterable[str]) -> str | None:
    """The single prefix in front of ``aoti_torch_`` among ``names``, if any."""
    found = carried(names)
    if not found:
        return None
    if len(found) > 1:
        listed = ", ".join(f"{p!r} ({n})" for p, n in sorted(found.items(), key=lambda kv: -kv[1]))
        raise UsageError(f"the shims use more than one prefix: {listed}; pass --prefix")
    return next(iter(found))
