"""Symbol versions: what ``.gnu.version_d`` and ``.gnu.version_r`` say (:class:`Versions`)
and one ``.dynsym`` entry with its version (:class:`DynamicEntry`), as the loader matches it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from aoti_shim.checks.elf.layout import VERSYM_HIDDEN

if TYPE_CHECKING:
    from aoti_shim.checks.elf.symbols import Symbol


@dataclass(frozen=True)
class Versions:
    """What ``.gnu.version_d`` and ``.gnu.version_r`` say, by version index (the numbers
    ``.gnu.version`` holds): the versions a library defines (its base version, named after
    the library, among them) and the versions it needs, each from a file."""

    defined: Mapping[int, str]
    base: frozenset[int]
    needed: Mapping[int, tuple[str, str]]  # index -> (version name, the file it is needed from)

    def known(self, index: int) -> bool:
        """True when the index names a version (the loader then holds a hash for it)."""
        return index in self.defined or index in self.needed


NO_VERSIONS = Versions({}, frozenset(), {})


def entry_of_word(symbol: Symbol, index: int, word: int, versions: Versions) -> DynamicEntry:
    ndx = word & 0x7FFF
    if symbol.defined:
        return DynamicEntry(symbol, index, word, versions.defined.get(ndx) if ndx >= 2 or ndx in versions.base else None)
    need = versions.needed.get(ndx) if ndx >= 2 else None
    return DynamicEntry(symbol, index, word, need[0] if need else None, need[1] if need else None)


@dataclass(frozen=True)
class DynamicEntry:
    """One ``.dynsym`` entry with its version, as the loader matches it."""

    symbol: Symbol
    index: int
    # The raw .gnu.version word (1 when the file has none: unversioned, global).
    versym: int
    # The version's name: a definition's own (its base version included) or the one an
    # import needs; None for index 0 and 1 (no version).
    version: str | None
    # For an import: the file its version is needed from (vn_file).
    version_file: str | None = None

    @property
    def version_index(self) -> int:
        return self.versym & 0x7FFF

    @property
    def hidden(self) -> bool:
        """A non-default version (``name@V``, not ``name@@V``): no unversioned reference binds to it."""
        return bool(self.versym & VERSYM_HIDDEN)
