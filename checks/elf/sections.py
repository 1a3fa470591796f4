"""The ELF header and the tables it leads to: :func:`elf_header` checks the identification
and unpacks the header, :func:`section_headers` reads the section header table, and
:class:`SectionTable` answers which table is which (``.dynsym`` and its strings checked
once) over sections read from the headers or made from PT_DYNAMIC (see dynamic.py)."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import overload

from aoti_shim.checks.elf.layout import (
    ELF_MAGIC,
    MAX_NOTE_SECTION,
    MAX_SECTIONS,
    MAX_SYMBOLS,
    NT_GNU_BUILD_ID,
    PN_XNUM,
    SHT_DYNSYM,
    SHT_NOTE,
    SHT_STRTAB,
    Layout,
    Section,
    layout,
)
from aoti_shim.checks.elf.view import ByteView


class ElfHeader:
    """The ELF header's fields the readers use, with the layout its class and byte order pick.
    A plain slotted class: it is made each time a header is read (a few times per image)."""

    __slots__ = ("lay", "elf_class", "big_endian", "e_type", "machine", "phoff", "shoff", "phentsize", "phnum",
                 "shentsize", "shnum")

    def __init__(self, lay: Layout, elf_class: int, big_endian: bool, fields: tuple[int, ...]) -> None:
        self.lay = lay
        self.elf_class = elf_class  # 32 or 64
        self.big_endian = big_endian
        (_, self.e_type, self.machine, _, _, self.phoff, self.shoff, _, _, self.phentsize, self.phnum,
         self.shentsize, self.shnum, _) = fields


def elf_header(view: ByteView) -> ElfHeader:
    """The ELF header, its identification checked (class and byte order known)."""
    ident = view.map()[:16]
    if ident[:4] != ELF_MAGIC:
        raise view.fail("not an ELF file (bad magic)")
    if ident[4] not in (1, 2):
        raise view.fail(f"unknown ELF class {ident[4]}")
    if ident[5] not in (1, 2):
        raise view.fail(f"unknown ELF data encoding {ident[5]}")
    big_endian = ident[5] == 2
    lay = layout(ident[4], ">" if big_endian else "<")
    fields = lay.ehdr.unpack(view.bytes(0, lay.ehdr.size, "ELF header"))
    return ElfHeader(lay, 64 if ident[4] == 2 else 32, big_endian, fields)


class SectionHeaders(Sequence[Section]):
    """The section header table's Sections, each made when first read: a blob's 26 headers
    cost more as objects than the rest of its headers' reading, and the readers read five."""

    __slots__ = ("_raw", "_made")

    def __init__(self, raw: list[tuple[int, int, int, int, int, int]]) -> None:
        self._raw = raw  # (type, offset, size, link, info, entsize) of each: Layout.shdr_key's
        self._made: dict[int, Section] = {}

    def __len__(self) -> int:
        return len(self._raw)

    @overload
    def __getitem__(self, index: int) -> Section: ...

    @overload
    def __getitem__(self, index: slice) -> list[Section]: ...

    def __getitem__(self, index: int | slice) -> Section | list[Section]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._raw)))]
        if index < 0:
            index += len(self._raw)  # (one Section for -1 and the last)
        made = self._made.get(index)
        if made is None:
            sh_type, offset, size, link, info, entsize = self._raw[index]  # an IndexError past either end
            made = self._made[index] = Section(sh_type, offset, size, link, entsize, info)
        return made

    def types(self) -> list[int]:
        """Each section's type, in order, no Section made."""
        return [raw[0] for raw in self._raw]


def section_headers(view: ByteView, hdr: ElfHeader) -> tuple[SectionHeaders, int]:
    """The section header table, and the program header count (PN_XNUM resolved from
    section 0's sh_info, extended numbering)."""
    lay = hdr.lay
    shnum, phnum = hdr.shnum, hdr.phnum
    if hdr.shentsize != lay.shdr.size:
        raise view.fail(f"bad section header size {hdr.shentsize}")
    if shnum == 0:
        # Extended numbering: the real count lives in section 0's sh_size.
        shnum = lay.shdr.unpack(view.bytes(hdr.shoff, lay.shdr.size, "section header 0"))[5]
    if shnum > MAX_SECTIONS:
        raise view.fail(f"implausible section count {shnum}")
    table = view.bytes(hdr.shoff, shnum * lay.shdr.size, "section header table")
    raw_sections: list[tuple[int, int, int, int, int, int]] = list(lay.shdr_key.iter_unpack(table))
    if phnum == PN_XNUM and raw_sections:
        phnum = raw_sections[0][4]  # extended numbering: section 0's sh_info
    return SectionHeaders(raw_sections), phnum


class SectionTable:
    """The sections the readers use, found by type; ``.dynsym`` and its string table
    checked against the file once, on first use."""

    __slots__ = ("view", "lay", "sections", "dynsym_index", "_dynsym", "_types", "_first")

    def __init__(self, view: ByteView, lay: Layout, sections: Sequence[Section]) -> None:
        self.view = view
        self.lay = lay
        self.sections = sections
        self._types = sections.types() if type(sections) is SectionHeaders else [s.type for s in sections]
        # The index of the first section of each type, found once (a reader asks for five).
        self._first = dict(zip(reversed(self._types), reversed(range(len(self._types)))))
        self.dynsym_index = self._first.get(SHT_DYNSYM)
        self._dynsym: tuple[Section, Section] | None = None

    def section(self, index: int, what: str) -> Section:
        if not 0 <= index < len(self.sections):
            raise self.view.fail(f"{what} links to missing section {index}")
        return self.sections[index]

    def first(self, sh_type: int) -> Section | None:
        at = self._first.get(sh_type)
        return None if at is None else self.sections[at]

    def all_of(self, *sh_types: int) -> list[Section]:
        """Every section of one of ``sh_types``, in order."""
        return [self.sections[i] for i, t in enumerate(self._types) if t in sh_types]

    def dynsym(self) -> tuple[Section, Section]:
        """(``.dynsym``, its string table), both checked against the file."""
        if self._dynsym is not None:
            return self._dynsym
        view = self.view
        if self.dynsym_index is None:
            raise view.fail("has no dynamic symbol table")
        sym = self.sections[self.dynsym_index]
        if sym.entsize != self.lay.sym.size:
            raise view.fail(f"bad .dynsym entry size {sym.entsize}")
        if sym.size % sym.entsize:
            raise view.fail(f".dynsym size {sym.size} is not a multiple of its entry size")
        if sym.size // sym.entsize > MAX_SYMBOLS:
            raise view.fail(f".dynsym holds {sym.size // sym.entsize} symbols, more than {MAX_SYMBOLS}")
        view.check_range(sym.offset, sym.size, ".dynsym")
        if sym.link == self.dynsym_index:
            raise view.fail(".dynsym names itself as its string table")
        strtab = self.section(sym.link, ".dynsym")
        if strtab.type != SHT_STRTAB:
            raise view.fail(f".dynsym links to section {sym.link}, which is not a string table")
        view.check_range(strtab.offset, strtab.size, ".dynstr")
        if strtab.size == 0:
            raise view.fail(".dynstr is empty")
        self._dynsym = (sym, strtab)
        return sym, strtab

    def build_id(self) -> str | None:
        """The GNU build ID note's bytes, in hex; None without one."""
        endian = self.lay.endian
        for sec in self.all_of(SHT_NOTE):
            if sec.size > MAX_NOTE_SECTION:
                continue
            data = self.view.bytes(sec.offset, sec.size, "note section")
            pos = 0
            while pos + 12 <= len(data):
                namesz, descsz, ntype = struct.unpack_from(endian + "III", data, pos)
                name_end = pos + 12 + ((namesz + 3) & ~3)
                desc_end = name_end + ((descsz + 3) & ~3)
                if desc_end > len(data):
                    break
                if ntype == NT_GNU_BUILD_ID and data[pos + 12 : pos + 12 + namesz].rstrip(b"\0") == b"GNU":
                    return data[name_end : name_end + descsz].hex()
                pos = desc_end
        return None
