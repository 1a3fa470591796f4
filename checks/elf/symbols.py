"""The dynamic symbols as the checker holds them: :class:`Symbol`, the packed int a
:class:`SymbolTable` keeps per name (and snapshots write), and the ``BIND TYPE`` text of
messages. A table answers membership, iteration and ``len`` without making a Symbol."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from aoti_shim.checks.elf.layout import STB_GLOBAL, STB_GNU_UNIQUE, STB_LOCAL, STB_WEAK, STV_DEFAULT, STV_PROTECTED
from aoti_shim.checks.elf.versions import DynamicEntry, Versions, entry_of_word

BIND_NAMES = {STB_LOCAL: "LOCAL", STB_GLOBAL: "GLOBAL", STB_WEAK: "WEAK", STB_GNU_UNIQUE: "UNIQUE"}
TYPE_NAMES = {0: "NOTYPE", 1: "OBJECT", 2: "FUNC", 3: "SECTION", 4: "FILE", 5: "COMMON", 6: "TLS", 10: "IFUNC"}

_EXPORT_BINDS = frozenset((STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE))
_EXPORT_VISIBILITIES = frozenset((STV_DEFAULT, STV_PROTECTED))
# Every st_info byte whose binding can be bound to from outside (any type).
_EXPORT_INFOS = frozenset(b << 4 | t for b in _EXPORT_BINDS for t in range(16))
_IMPORT_INFOS = frozenset(i for i in range(256) if i >> 4 != STB_LOCAL)
# The same, as the low ten bits of st_info | st_other << 8 (visibility in the top two).
EXPORT_WORDS = frozenset(i | v << 8 for i in _EXPORT_INFOS for v in _EXPORT_VISIBILITIES)
IMPORT_WORDS = _IMPORT_INFOS

# Packed symbol facts: st_info in bits 0-7, visibility in 8-9, defined 16, versioned 17,
# and from bit 18 the .dynsym index (0 when unknown) to read .gnu.version lazily.
DEFINED_BIT = 1 << 16
VERSIONED_BIT = 1 << 17
INDEX_SHIFT = 18


@dataclass(frozen=True)
class Symbol:
    """One dynamic symbol, as the dynamic linker sees it."""

    name: str
    bind: int
    type: int
    visibility: int
    defined: bool
    versioned: bool

    def __init__(self, name: str, bind: int, type: int, visibility: int, defined: bool, versioned: bool) -> None:
        # Written out: the generated frozen __init__ sets each field through object.__setattr__
        # (10k instructions a Symbol, callgrind), and every import of every library makes one.
        fields = self.__dict__
        fields["name"], fields["bind"], fields["type"] = name, bind, type
        fields["visibility"], fields["defined"], fields["versioned"] = visibility, defined, versioned

    @property
    def bind_name(self) -> str:
        return BIND_NAMES.get(self.bind, str(self.bind))

    @property
    def type_name(self) -> str:
        return TYPE_NAMES.get(self.type, str(self.type))

    @property
    def is_export(self) -> bool:
        return self.defined and self.bind in _EXPORT_BINDS and self.visibility in _EXPORT_VISIBILITIES

    @property
    def is_import(self) -> bool:
        return not self.defined and self.bind != STB_LOCAL and bool(self.name)

    def pack(self) -> int:
        """The compact form :class:`SymbolTable` stores (and snapshots write)."""
        return pack_symbol(self.bind, self.type, self.visibility, self.defined, self.versioned)


def pack_symbol(bind: int, type: int, visibility: int, defined: bool, versioned: bool) -> int:
    return (
        ((bind & 0xF) << 4 | (type & 0xF))
        | (visibility & 0x3) << 8
        | (DEFINED_BIT if defined else 0)
        | (VERSIONED_BIT if versioned else 0)
    )


def unpack_symbol(name: str, packed: int) -> Symbol:
    # (name, bind, type, visibility, defined, versioned), positional: made for every import read.
    return Symbol(
        name, (packed >> 4) & 0xF, packed & 0xF, (packed >> 8) & 0x3, bool(packed & DEFINED_BIT),
        bool(packed & VERSIONED_BIT),
    )


class SymbolTable(Mapping[str, Symbol]):
    """A read-only ``name -> Symbol`` mapping over packed ints.

    Membership, iteration and ``len`` never build a :class:`Symbol`; one is made
    only when a value is read, so a 75k-entry table stays cheap.
    """

    __slots__ = ("_packed", "_versym", "_more")

    def __init__(
        self, packed: dict[str, int], versym: array[int] | None = None, more: dict[str, list[int]] | None = None
    ) -> None:
        self._packed = packed
        self._versym = versym
        # Names defined more than once (one entry per version, foo@V1 and foo@@V2): every
        # packed entry after the first, which ``packed`` holds.
        self._more = more or {}

    def __getitem__(self, name: str) -> Symbol:
        packed = self._packed[name]
        index = packed >> INDEX_SHIFT
        if index and self._versym is not None and (self._versym[index] & 0x7FFF) >= 2:
            packed |= VERSIONED_BIT
        return unpack_symbol(name, packed)

    def __contains__(self, name: object) -> bool:
        return name in self._packed

    def __iter__(self) -> Iterator[str]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)

    def __repr__(self) -> str:
        return f"SymbolTable({len(self._packed)} symbols)"

    @property
    def has_versym(self) -> bool:
        return self._versym is not None

    def _entry_of(self, name: str, packed: int, versions: Versions) -> DynamicEntry:
        return self._entries_of(((name, packed),), versions)[0]

    def _entries_of(self, pairs: Iterable[tuple[str, int]], versions: Versions) -> list[DynamicEntry]:
        """The entry of each (name, packed), in one loop: every import of every checked library
        is made one, and a call per step of each cost more than the records."""
        versym = self._versym
        count = len(versym) if versym is not None else 0
        out = []
        for name, packed in pairs:
            index = packed >> INDEX_SHIFT
            word = versym[index] if versym is not None and index < count else 1
            if (word & 0x7FFF) >= 2:
                packed |= VERSIONED_BIT
            symbol = Symbol(
                name, (packed >> 4) & 0xF, packed & 0xF, (packed >> 8) & 0x3, bool(packed & DEFINED_BIT),
                bool(packed & VERSIONED_BIT),
            )  # unpack_symbol's, inline
            out.append(entry_of_word(symbol, index, word, versions))
        return out

    def entry(self, name: str, versions: Versions) -> DynamicEntry:
        """The (first) entry of ``name`` with its version."""
        return self._entry_of(name, self._packed[name], versions)

    def entries_of(self, names: Iterable[str], versions: Versions) -> list[DynamicEntry]:
        """:meth:`entry` of each of ``names``."""
        return self._entries_of(zip(names, map(self._packed.__getitem__, names)), versions)

    def entries(self, name: str, versions: Versions) -> list[DynamicEntry]:
        """Every entry of ``name`` (one per version); empty when it has none."""
        packed = self._packed.get(name)
        if packed is None:
            return []
        return self._entries_of(((name, p) for p in (packed, *self._more.get(name, ()))), versions)

    def packed_items(self) -> Iterator[tuple[str, int]]:
        """(name, packed) pairs: binding in bits 4-7, type in bits 0-3, no Symbol made."""
        return iter(self._packed.items())

    def kind(self, name: str) -> str:
        """'GLOBAL FUNC' and the like, for messages, without making a Symbol."""
        return kind_text(self._packed[name])

    def kinds(self, names: list[str]) -> list[str]:
        """:meth:`kind` of many names at once."""
        infos = [p & 0xFF for p in map(self._packed.__getitem__, names)]
        for info in set(infos).difference(_KIND_TEXT):
            kind_text(info)  # fills _KIND_TEXT
        return list(map(_KIND_TEXT.__getitem__, infos))


def kind_text(packed: int) -> str:
    info = packed & 0xFF
    found = _KIND_TEXT.get(info)
    if found is None:
        found = _KIND_TEXT[info] = (
            f"{BIND_NAMES.get(info >> 4, str(info >> 4))} {TYPE_NAMES.get(info & 0xF, str(info & 0xF))}"
        )
    return found


_KIND_TEXT: dict[int, str] = {}
