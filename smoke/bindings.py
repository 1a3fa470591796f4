"""Where the dynamic linker bound a blob's shim imports, read from ``LD_DEBUG``.

The proof is the linker's own record, not a guess from symbol tables: the child
runs with ``LD_DEBUG=bindings`` and ``LD_BIND_NOW=1`` (every reference is bound at
load, address-taken ones included), and each line
``binding file A [0] to B [0]: normal symbol `name' [VER]`` is parsed here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from aoti_shim.checks.abi.prefix import is_shim_name

_BINDING = re.compile(r"binding file (?P<src>.+?) \[\d+\] to (?P<dst>.+?) \[\d+\]: \w+ symbol `(?P<name>[^']+)'")

SHIMS = "shims"
LIBTORCH = "libtorch"
SELF = "blob"
OTHER = "other"


@dataclass(frozen=True)
class Binding:
    source: str
    target: str
    symbol: str


@dataclass(frozen=True)
class BindingReport:
    """The blob's ``aoti_torch_*`` imports, grouped by where they were bound."""

    by_place: dict[str, tuple[str, ...]] = field(default_factory=dict)
    targets: dict[str, str] = field(default_factory=dict)  # symbol -> library path

    @property
    def summary(self) -> str:
        """``shims``, ``libtorch``, ``none`` or e.g. ``mixed: 20 shims, 3 libtorch``."""
        places = {k: v for k, v in self.by_place.items() if v}
        if not places:
            return "none"
        if len(places) == 1:
            return next(iter(places))
        return "mixed: " + ", ".join(f"{len(v)} {k}" for k, v in sorted(places.items()))

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.by_place.values())


def parse_bindings(lines: Iterable[str]) -> Iterator[Binding]:
    for line in lines:
        if "binding file" not in line:
            continue
        match = _BINDING.search(line)
        if match:
            yield Binding(match["src"], match["dst"], match["name"])


def is_shim_symbol(name: str) -> bool:
    """True for ``aoti_torch_x`` and any prefixed ``<p>aoti_torch_x``."""
    return is_shim_name(name)


def _place(target: str, blob_path: str, shim_library: str | None, libtorch_dir: str | None) -> str:
    real = os.path.realpath(target) if target.startswith("/") and not target.startswith("/proc/") else target
    if target == blob_path:
        return SELF
    if shim_library and real == os.path.realpath(shim_library):
        return SHIMS
    name = os.path.basename(real)
    if name.startswith("libtorch") or (libtorch_dir and os.path.dirname(real) == os.path.realpath(libtorch_dir)):
        return LIBTORCH
    return OTHER


def classify(
    bindings: Iterable[Binding], blob_path: str, shim_library: str | None, libtorch_dir: str | None = None
) -> BindingReport:
    """Classify every shim-name binding made *from* the blob (``blob_path`` is the
    path the blob was dlopen'd by, e.g. ``/proc/self/fd/4``)."""
    groups: dict[str, set[str]] = {}
    targets: dict[str, str] = {}
    for b in bindings:
        if b.source != blob_path or not is_shim_symbol(b.symbol):
            continue
        place = _place(b.target, blob_path, shim_library, libtorch_dir)
        groups.setdefault(place, set()).add(b.symbol)
        targets[b.symbol] = b.target
    return BindingReport({k: tuple(sorted(v)) for k, v in groups.items()}, targets)


def read_debug_output(directory: Path) -> Iterator[str]:
    """Lines of every ``LD_DEBUG_OUTPUT`` file (named ``<stem>.<pid>``) in ``directory``."""
    for path in sorted(directory.iterdir()):
        with open(path, errors="replace") as stream:
            yield from stream
