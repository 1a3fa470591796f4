"""The shim ABI marker and the prefix rules: validate, split, infer, what a library carries.

This module is the one home of the ``aoti_torch_`` marker: the checker's rules, the
pip plugin's gate, the smoke's binding reader and the import rewriter all ask here.
"""

from __future__ import annotations

import os
import re
from typing import Iterable

from aoti_shim.errors import UsageError

# Every AOTInductor shim function's name holds this; a private prefix goes in front of it.
SHIM_MARK = "aoti_torch_"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The part in front of the first marker, when it is empty or an identifier prefix.
_PREFIXED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*?)?" + SHIM_MARK)


def is_shim_name(name: str) -> bool:
    """True for ``aoti_torch_x`` and any prefixed ``<p>aoti_torch_x``."""
    return SHIM_MARK in name


def is_unprefixed(name: str) -> bool:
    """True for libtorch's own spelling, ``aoti_torch_x``."""
    return name.startswith(SHIM_MARK)


def prefix_of(name: str) -> str | None:
    """The prefix in front of ``aoti_torch_`` in ``name`` ('' when unprefixed), or None
    when ``name`` holds no marker behind an identifier prefix."""
    m = _PREFIXED.match(name)
    return (m.group(1) or "") if m else None


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


def carried(names: Iterable[str]) -> dict[str, int]:
    """How many of ``names`` carry each non-empty prefix in front of ``aoti_torch_``."""
    found: dict[str, int] = {}
    for name in names:
        p = prefix_of(name)
        if p:
            found[p] = found.get(p, 0) + 1
    return found


def library_prefixes(path: str | os.PathLike[str]) -> frozenset[str]:
    """The prefixes a built shim library really carries: those in front of ``aoti_torch_``
    in its exported names (empty when it exports none). For a gate that must check
    against what was built, not what was asked for."""
    from aoti_shim.checks.elf import ElfImage

    with ElfImage(os.fspath(path)) as image:
        if not image.has_dynsym:
            return frozenset()
        return frozenset(carried(image.exports()))


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
