"""Decide the prefix: the one given, or the one the shims' exports agree on."""

from __future__ import annotations

import re
from typing import Iterable

from aoti_shim.errors import UsageError

_PREFIXED = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*?)aoti_torch_")
_VALID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def validate(prefix: str, source: str | None = None) -> str:
    """``prefix`` when it can go in front of ``aoti_torch_X`` in a C name, else a UsageError.

    ``source`` says where the prefix came from (the plugin's ``-C aoti-shim.prefix``,
    ``CMAKE_ARGS``...); None means the ``--prefix`` option.
    """
    given = f"--prefix {prefix!r}" if source is None else f"prefix {prefix!r} from {source}"
    if not _VALID.match(prefix):
        raise UsageError(f"{given} is not a C identifier prefix (letters, digits, '_'; not empty)")
    if prefix.startswith("aoti_torch_"):
        raise UsageError(f"{given} starts with 'aoti_torch_', which libtorch uses itself")
    return prefix


def infer(names: Iterable[str]) -> str | None:
    """The single prefix in front of ``aoti_torch_`` among ``names``, if any."""
    found: dict[str, int] = {}
    for name in names:
        m = _PREFIXED.match(name)
        if m:
            found[m.group(1)] = found.get(m.group(1), 0) + 1
    if not found:
        return None
    if len(found) > 1:
        listed = ", ".join(f"{p!r} ({n})" for p, n in sorted(found.items(), key=lambda kv: -kv[1]))
        raise UsageError(f"the shims use more than one prefix: {listed}; pass --prefix")
    return next(iter(found))
