""".dynsym's entry count when only PT_DYNAMIC names the table (no section headers, or a
wheel member's parts): the table has no size of its own, and glibc never needs one (it
looks names up by hash; a relocation names its symbol by index). So the count is the most
the loader's own work reaches: ``.gnu.hash``'s chains, DT_HASH's nchain, and one past the
highest index a dynamic relocation (DT_RELA, DT_REL, DT_JMPREL) names.

``.gnu.hash`` alone misses imports: a library exporting nothing has every bucket empty, and
GNU ld then writes ``symoffset`` as 1, so its undefined symbols (indexes 1..N, before the
hashed ones) would never be read. ``.gnu.version`` gives no count: it has no size either,
and the room up to the next table PT_DYNAMIC names may hold padding or another table, whose
words read as entries would size .dynsym past its end (garbage symbols, false findings).
A symbol that no hash table reaches and no relocation names is never looked up: missing it
misses no binding."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass

from aoti_shim.checks.elf import gnu_hash
from aoti_shim.checks.elf.layout import (
    DT_GNU_HASH,
    DT_HASH,
    DT_JMPREL,
    DT_PLTREL,
    DT_PLTRELSZ,
    DT_REL,
    DT_RELA,
    DT_RELASZ,
    DT_RELSZ,
    DT_SYMENT,
    DT_SYMTAB,
    MAX_SYMBOLS,
    Layout,
)
from aoti_shim.checks.elf.view import ByteView

# (file offset of an address PT_DYNAMIC names, end of the PT_LOAD file range holding it).
Locate = Callable[[str, int], tuple[int, int]]

# Relocations read per pass: bounds the memory a huge (or hostile) table costs.
_CHUNK_ENTRIES = 1 << 16


@dataclass(frozen=True)
class SymbolCount:
    """.dynsym's entry count, and where ``.gnu.hash`` lies (file offset, byte size) if named."""

    count: int
    gnu_hash: tuple[int, int] | None


def relocation_tables(lay: Layout, tags: dict[int, int]) -> list[tuple[int, str, int, int]]:
    """(tag, name, size in bytes, entry size) of each dynamic relocation table that names
    symbols; DT_RELR, whose entries are relative (no symbol), is none of them."""
    is64 = lay.sym.size == 24
    rela, rel = (24, 16) if is64 else (12, 8)
    plt = rela if tags.get(DT_PLTREL, DT_RELA) == DT_RELA else rel
    found = [
        (DT_RELA, "DT_RELA", DT_RELASZ, rela),
        (DT_REL, "DT_REL", DT_RELSZ, rel),
        (DT_JMPREL, "DT_JMPREL", DT_PLTRELSZ, plt),
    ]
    return [(tag, what, tags.get(size_tag, 0), entsize) for tag, what, size_tag, entsize in found if tag in tags]


def highest_named(view: ByteView, lay: Layout, tags: dict[int, int], locate: Locate) -> int:
    """The highest .dynsym index any dynamic relocation names (0: none names a symbol)."""
    is64 = lay.sym.size == 24
    typecode, shift = ("Q", 32) if is64 else ("I", 8)  # r_info: symbol index above the type
    top = 0
    for tag, what, size, entsize in relocation_tables(lay, tags):
        at = locate(what, tags[tag])[0]
        size -= size % entsize
        view.check_range(at, size, what)
        step = entsize * _CHUNK_ENTRIES
        for start in range(at, at + size, step):
            words = array(typecode, view.bytes(start, min(step, at + size - start), what))
            if lay.swapped:
                words.byteswap()
            # r_info is the second word of REL and RELA entries alike; max() runs in C, and the
            # symbol index rises with r_info, so the top r_info holds the top index.
            infos = words[1 :: entsize // words.itemsize]
            if infos:
                top = max(top, max(infos) >> shift)
    return top


def dynsym_count(view: ByteView, lay: Layout, tags: dict[int, int], locate: Locate) -> SymbolCount:
    """The count of a segment's symbol table (see the module's docstring), checked to lie
    in the PT_LOAD file range holding DT_SYMTAB where a relocation sets it."""
    gnu: tuple[int, int] | None = None
    count = 0
    if DT_GNU_HASH in tags:
        at = locate("DT_GNU_HASH", tags[DT_GNU_HASH])[0]
        count, size = gnu_hash.extent(view, lay, at)
        gnu = (at, size)
    if DT_HASH in tags:
        at = locate("DT_HASH", tags[DT_HASH])[0]
        view.check_range(at, 8, "DT_HASH")
        count = max(count, lay.word.unpack_from(view.map(), at + 4)[0])  # nchain = the symbol count
    if gnu is None and DT_HASH not in tags:
        raise view.fail("PT_DYNAMIC has no DT_GNU_HASH or DT_HASH: the dynamic symbol count is unknown")
    if count > MAX_SYMBOLS:
        raise view.fail(f"its hash table counts {count} symbols, more than {MAX_SYMBOLS}")
    named = highest_named(view, lay, tags, locate)
    if named >= count:
        symtab, end = locate("DT_SYMTAB", tags[DT_SYMTAB])
        held = (end - symtab) // max(tags.get(DT_SYMENT, lay.sym.size), 1)
        if named >= held:
            raise view.fail(f"a relocation names symbol {named}, past the {held} its segment holds")
        if named >= MAX_SYMBOLS:
            raise view.fail(f"a relocation names symbol {named}, more than {MAX_SYMBOLS}")
        count = named + 1
    return SymbolCount(count, gnu)
