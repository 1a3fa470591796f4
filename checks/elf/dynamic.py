"""The view through PT_DYNAMIC, as the loader reads a file: the program headers, the
dynamic segment's tags, the file offset of an address it names, the sections made from it
when a file is read the loader's way (no section headers, or a stream's parts), its
strings (DT_NEEDED, DT_RUNPATH...), and the cross-check that refuses section headers
describing another symbol table than the one the loader loads."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from aoti_shim.checks.elf import gnu_hash
from aoti_shim.checks.elf.gnu_hash import GnuHash
from aoti_shim.checks.elf.layout import (
    DT_GNU_HASH,
    DT_HASH,
    DT_NULL,
    DT_STRSZ,
    DT_STRTAB,
    DT_SYMENT,
    DT_SYMTAB,
    DT_VERDEF,
    DT_VERDEFNUM,
    DT_VERNEED,
    DT_VERNEEDNUM,
    DT_VERSYM,
    MAX_DYNAMIC_ENTRIES,
    MAX_SECTIONS,
    PN_XNUM,
    PT_DYNAMIC,
    PT_LOAD,
    PT_NOTE,
    SHT_DYNAMIC,
    SHT_DYNSYM,
    SHT_GNU_HASH,
    SHT_GNU_VERDEF,
    SHT_GNU_VERNEED,
    SHT_GNU_VERSYM,
    SHT_NOTE,
    SHT_STRTAB,
    Layout,
    Section,
)
from aoti_shim.checks.elf.sections import SectionTable
from aoti_shim.checks.elf.strings import name_at
from aoti_shim.checks.elf.symbol_count import dynsym_count
from aoti_shim.checks.elf.versions import version_chain_size
from aoti_shim.checks.elf.view import ByteView
from aoti_shim.errors import InputError


class DynamicSegment(NamedTuple):
    """What the dynamic loader reads: the PT_LOAD extents (vaddr, offset, size), the PT_NOTEs
    (offset, size), and PT_DYNAMIC's place, whole entries and tags up to DT_NULL."""

    loads: list[tuple[int, int, int]]
    notes: list[tuple[int, int]]
    offset: int
    data: bytes
    tags: dict[int, int]


def read_segment(
    view: ByteView, lay: Layout, phoff: int, phentsize: int, phnum: int, dynamic_data: bytes | None
) -> DynamicSegment | None:
    """The program headers read as the loader reads them; None for a file that is not
    loadable or is statically linked (no dynamic symbol binds to it). ``dynamic_data``:
    a streamed member's PT_DYNAMIC, read ahead (else it is read from the file)."""
    if phoff == 0 or phnum == 0:
        return None
    if phentsize != lay.phdr.size:
        raise view.fail(f"bad program header size {phentsize}")
    if phnum > MAX_SECTIONS:
        raise view.fail(f"implausible program header count {phnum}")
    loads: list[tuple[int, int, int]] = []
    notes: list[tuple[int, int]] = []
    dynamic: tuple[int, int] | None = None
    for p_type, offset, vaddr, filesz in lay.phdr_key.iter_unpack(
        view.bytes(phoff, phnum * lay.phdr.size, "program header table")
    ):
        if p_type == PT_LOAD:
            loads.append((vaddr, offset, filesz))
        elif p_type == PT_DYNAMIC and dynamic is None:
            dynamic = (offset, filesz)
        elif p_type == PT_NOTE:
            notes.append((offset, filesz))
    if dynamic is None:
        return None
    if dynamic_data is not None:
        data = dynamic_data
    else:
        count = min(dynamic[1] // lay.dyn.size, MAX_DYNAMIC_ENTRIES)
        data = view.bytes(dynamic[0], count * lay.dyn.size, "PT_DYNAMIC")
    data = data[: min(len(data) // lay.dyn.size, MAX_DYNAMIC_ENTRIES) * lay.dyn.size]
    return DynamicSegment(loads, notes, dynamic[0], data, _first_tags(lay, data))


def _first_tags(lay: Layout, data: bytes) -> dict[int, int]:
    """Each tag's first value, up to DT_NULL (C loops: a blob's 30 entries were a fifth of
    reading its headers)."""
    entries = list(lay.dyn.iter_unpack(data))
    try:
        entries = entries[: [tag for tag, _ in entries].index(DT_NULL)]
    except ValueError:
        pass  # no DT_NULL: every entry counts
    return dict(reversed(entries))  # the first of a tag given twice wins


def load_extent(view: ByteView, segment: DynamicSegment, what: str, vaddr: int) -> tuple[int, int]:
    """(file offset of ``vaddr``, end of the PT_LOAD file range that holds it)."""
    for base, offset, size in segment.loads:
        if base <= vaddr < base + size:
            return offset + vaddr - base, offset + size
    raise view.fail(f"{what} points outside the file's loaded segments")


def file_offset(view: ByteView, segment: DynamicSegment, what: str, vaddr: int) -> int:
    """Where an address the dynamic segment names lies in the file."""
    return load_extent(view, segment, what, vaddr)[0]


def loader_sections(
    view: ByteView, lay: Layout, phoff: int, phentsize: int, phnum: int, dynamic_data: bytes | None
) -> list[Section]:
    """The sections the rest of the reader uses, made from what the loader reads:
    PT_DYNAMIC's DT_SYMTAB, DT_STRTAB/DT_STRSZ, DT_VERSYM, and for the symbol count (the
    dynamic symbol table has no size of its own) DT_GNU_HASH or DT_HASH and the dynamic
    relocations (symbol_count.py)."""
    if phoff == 0 or phnum == 0:
        return []  # not loadable: nothing binds to it
    if phnum == PN_XNUM:
        raise view.fail("extended program header numbering needs section 0, and there are no section headers")
    segment = read_segment(view, lay, phoff, phentsize, phnum, dynamic_data)
    if segment is None:
        return []
    tags = segment.tags
    # Index 0 is the null section, as in a real table; 1 the strings, 2 the symbols.
    sections = [Section(0, 0, 0, 0, 0)]
    if DT_STRTAB not in tags or DT_STRSZ not in tags:
        if DT_SYMTAB in tags:
            raise view.fail("PT_DYNAMIC names a symbol table but no string table (DT_STRTAB, DT_STRSZ)")
        return []
    strtab = file_offset(view, segment, "DT_STRTAB", tags[DT_STRTAB])
    sections.append(Section(SHT_STRTAB, strtab, tags[DT_STRSZ], 0, 0))
    if DT_SYMTAB in tags:
        sections.extend(_symbol_sections(view, lay, segment))
    sections.append(Section(SHT_DYNAMIC, segment.offset, len(segment.data), 1, lay.dyn.size))
    sections.extend(Section(SHT_NOTE, offset, size, 0, 0) for offset, size in segment.notes)
    return sections


def _symbol_sections(view: ByteView, lay: Layout, segment: DynamicSegment) -> list[Section]:
    """.dynsym (sized by symbol_count.dynsym_count: hash tables and relocations), .gnu.hash,
    .gnu.version and the version tables, from the tags of a segment that names DT_SYMTAB."""
    tags = segment.tags
    syment = tags.get(DT_SYMENT, lay.sym.size)
    symtab = file_offset(view, segment, "DT_SYMTAB", tags[DT_SYMTAB])
    counted = dynsym_count(view, lay, tags, lambda what, vaddr: load_extent(view, segment, what, vaddr))
    count, gnu = counted.count, counted.gnu_hash
    sections = [Section(SHT_DYNSYM, symtab, count * syment, 1, syment)]
    if gnu is not None:
        sections.append(Section(SHT_GNU_HASH, gnu[0], gnu[1], 2, 0))
    if DT_VERSYM in tags:
        sections.append(
            Section(SHT_GNU_VERSYM, file_offset(view, segment, "DT_VERSYM", tags[DT_VERSYM]), count * 2, 2, 2)
        )
    for sh_type, tag, num, what in (
        (SHT_GNU_VERDEF, DT_VERDEF, DT_VERDEFNUM, "DT_VERDEF"),
        (SHT_GNU_VERNEED, DT_VERNEED, DT_VERNEEDNUM, "DT_VERNEED"),
    ):
        if tag in tags:
            at = file_offset(view, segment, what, tags[tag])
            entries = tags.get(num, 0)
            size = version_chain_size(view, lay, at, entries, sh_type == SHT_GNU_VERDEF, what)
            sections.append(Section(sh_type, at, size, 1, 0, entries))
    return sections


def verify_sections(
    view: ByteView,
    lay: Layout,
    segment: DynamicSegment | None,
    table: SectionTable,
    gnu_table: Callable[[], GnuHash | None],
) -> None:
    """Refuse a file whose section headers describe another symbol table than the
    one the dynamic linker loads (it reads PT_DYNAMIC, never sections): otherwise a
    shim could hide exports from the checker and still bind at run time. ``gnu_table``
    reads (and keeps) the checked ``.gnu.hash``."""
    if segment is None:
        return  # not loadable, or statically linked: nothing binds to it
    tags = segment.tags
    if DT_SYMTAB not in tags:
        return

    def disagree(what: str) -> InputError:
        return view.fail(f"section headers disagree with the dynamic segment about {what}")

    if table.dynsym_index is None:
        raise disagree(".dynsym (the loader has one, the sections hide it)")
    sym, strtab = table.dynsym()
    if file_offset(view, segment, "DT_SYMTAB", tags[DT_SYMTAB]) != sym.offset:
        raise disagree(".dynsym")
    if DT_STRTAB in tags and file_offset(view, segment, "DT_STRTAB", tags[DT_STRTAB]) != strtab.offset:
        raise disagree(".dynstr")
    if tags.get(DT_STRSZ, 0) > strtab.size:
        raise disagree("the size of .dynstr")
    reachable = 0
    if DT_HASH in tags:
        at = file_offset(view, segment, "DT_HASH", tags[DT_HASH])
        view.check_range(at, 8, "DT_HASH")
        reachable = lay.word.unpack_from(view.map(), at + 4)[0]  # nchain = the symbol count
    if DT_GNU_HASH in tags:
        at = file_offset(view, segment, "DT_GNU_HASH", tags[DT_GNU_HASH])
        sec = table.first(SHT_GNU_HASH)
        if sec is None or sec.offset != at:
            raise disagree(".gnu.hash")
        gnu = gnu_table()
        if gnu is not None:
            reachable = max(reachable, gnu_hash.reach(view, lay, gnu))
    held = sym.size // sym.entsize
    if reachable > held:
        raise view.fail(f"its hash tables reach {reachable} symbols but .dynsym holds {held} (hidden symbols)")


def dynamic_strings(
    view: ByteView, lay: Layout, table: SectionTable, tag: int, dynamic_data: bytes | None
) -> list[str]:
    """The strings of every ``tag`` entry of .dynamic (DT_NEEDED, DT_RUNPATH...), in order."""
    found = dynamic_entries(view, lay, table, dynamic_data)
    if found is None:
        return []
    strtab, values = found
    return [name_at(view, strtab, v) for v in values.get(tag, ())]


def dynamic_entries(
    view: ByteView, lay: Layout, table: SectionTable, dynamic_data: bytes | None
) -> tuple[Section, dict[int, list[int]]] | None:
    """.dynamic's string table and its entries' values by tag, in order (up to DT_NULL): one
    pass serves every tag asked (a library's needs, sonames, run paths and filtees); None
    without a .dynamic."""
    sec = table.first(SHT_DYNAMIC)
    if sec is None or sec.size == 0:
        return None
    strtab = table.section(sec.link, ".dynamic")
    if strtab.type != SHT_STRTAB:
        raise view.fail(f".dynamic links to section {sec.link}, which is not a string table")
    view.check_range(strtab.offset, strtab.size, ".dynamic's string table")
    entsize = lay.dyn.size
    count = min(sec.size // entsize, MAX_DYNAMIC_ENTRIES)
    if dynamic_data is not None:
        data = dynamic_data[: count * entsize]
    else:
        data = view.bytes(sec.offset, count * entsize, ".dynamic")
    values: dict[int, list[int]] = {}
    for d_tag, d_val in lay.dyn.iter_unpack(data):
        if d_tag == DT_NULL:
            break
        values.setdefault(d_tag, []).append(d_val)
    return strtab, values
