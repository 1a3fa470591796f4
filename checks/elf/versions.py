"""Symbol versions: what ``.gnu.version_d`` and ``.gnu.version_r`` say (:class:`Versions`,
read by :func:`read_versions`, sized by :func:`version_chain_size` when only PT_DYNAMIC
names them) and one ``.dynsym`` entry with its version (:class:`DynamicEntry`), as the
loader matches it."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, NamedTuple

from aoti_shim.checks.elf.layout import (
    MAX_VERSIONS,
    SHT_GNU_VERDEF,
    SHT_GNU_VERNEED,
    TABLE_NAMES,
    VER_FLG_BASE,
    VERSYM_HIDDEN,
    Layout,
)
from aoti_shim.checks.elf.strings import name_at
from aoti_shim.checks.elf.view import ByteView

if TYPE_CHECKING:
    from aoti_shim.checks.elf.sections import SectionTable
    from aoti_shim.checks.elf.symbols import Symbol


class Versions(NamedTuple):
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
        return DynamicEntry(
            symbol, index, word, versions.defined.get(ndx) if ndx >= 2 or ndx in versions.base else None
        )
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

    def __init__(
        self, symbol: Symbol, index: int, versym: int, version: str | None, version_file: str | None = None
    ) -> None:
        # Written out, as Symbol's: one per import of every library, and per definition asked.
        fields = self.__dict__
        fields["symbol"], fields["index"], fields["versym"] = symbol, index, versym
        fields["version"], fields["version_file"] = version, version_file

    @property
    def version_index(self) -> int:
        return self.versym & 0x7FFF

    @property
    def hidden(self) -> bool:
        """A non-default version (``name@V``, not ``name@@V``): no unversioned reference binds to it."""
        return bool(self.versym & VERSYM_HIDDEN)


def version_chain_size(view: ByteView, lay: Layout, at: int, entries: int, verdef: bool, what: str) -> int:
    """The byte size of a verdef/verneed chain of ``entries`` entries at ``at``."""
    if entries > MAX_VERSIONS:
        raise view.fail(f"{what} counts {entries} entries, more than {MAX_VERSIONS}")
    mm = view.map()
    end = at
    pos = at
    fmt = struct.Struct(lay.endian + ("HHHHIII" if verdef else "HHIII"))
    aux = struct.Struct(lay.endian + ("II" if verdef else "IHHII"))
    for _ in range(entries):
        view.check_range(pos, fmt.size, what)
        raw = fmt.unpack_from(mm, pos)
        count, aux_off, nxt = (raw[3], raw[5], raw[6]) if verdef else (raw[1], raw[3], raw[4])
        end = max(end, pos + fmt.size)
        a = pos + aux_off
        for _ in range(min(count, MAX_VERSIONS)):
            view.check_range(a, aux.size, what)
            end = max(end, a + aux.size)
            a_next = aux.unpack_from(mm, a)[-1]
            if not a_next:
                break
            a += a_next
        if not nxt:
            break
        pos += nxt
    return end - at


@cache
def _version_structs(endian: str) -> tuple[struct.Struct, struct.Struct, struct.Struct, struct.Struct]:
    """Verdef, Verdaux, Verneed and Vernaux of one byte order, made once."""
    return (struct.Struct(endian + "HHHHIII"), struct.Struct(endian + "II"), struct.Struct(endian + "HHIII"),
            struct.Struct(endian + "IHHII"))


def read_versions(view: ByteView, lay: Layout, table: SectionTable) -> Versions:
    """The version definitions and needs of a file with a .dynsym, by index (NO_VERSIONS
    without either table)."""
    _, strtab = table.dynsym()
    defined: dict[int, str] = {}
    base: set[int] = set()
    needed: dict[int, tuple[str, str]] = {}
    mm = view.map()
    verdef, vd_aux, verneed, vn_aux = _version_structs(lay.endian)
    for sec in table.all_of(SHT_GNU_VERDEF, SHT_GNU_VERNEED):
        what = TABLE_NAMES[sec.type]
        view.check_range(sec.offset, sec.size, what)
        if sec.info > MAX_VERSIONS:
            raise view.fail(f"{what} counts {sec.info} entries, more than {MAX_VERSIONS}")
        limit = sec.offset + sec.size
        pos = sec.offset
        for _ in range(sec.info):
            if sec.type == SHT_GNU_VERDEF:
                if pos + verdef.size > limit:
                    raise view.fail(f"{what} runs past its section")
                _, flags, ndx, cnt, _, aux_off, nxt = verdef.unpack_from(mm, pos)
                if cnt and pos + aux_off + vd_aux.size <= limit:
                    defined[ndx & 0x7FFF] = name_at(view, strtab, vd_aux.unpack_from(mm, pos + aux_off)[0])
                    if flags & VER_FLG_BASE:
                        base.add(ndx & 0x7FFF)
                elif cnt:
                    raise view.fail(f"{what} runs past its section")
            else:
                if pos + verneed.size > limit:
                    raise view.fail(f"{what} runs past its section")
                _, cnt, file_off, aux_off, nxt = verneed.unpack_from(mm, pos)
                file = name_at(view, strtab, file_off)
                a = pos + aux_off
                for _ in range(min(cnt, MAX_VERSIONS)):
                    if a + vn_aux.size > limit:
                        raise view.fail(f"{what} runs past its section")
                    _, _, other, name_off, a_next = vn_aux.unpack_from(mm, a)
                    needed[other & 0x7FFF] = (name_at(view, strtab, name_off), file)
                    if not a_next:
                        break
                    a += a_next
            if not nxt:
                break
            pos += nxt
    return Versions(defined, frozenset(base), needed) if defined or needed else NO_VERSIONS
