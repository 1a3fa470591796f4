"""The ELF header and the tables it leads to: :func:`elf_header` checks the identification
and unpacks the header, :func:`section_headers` reads the section header table, and
:class:`SectionTable` answers which table is which (``.dynsym`` and its strings checked
once) over sections read from the headers or made from PT_DYNAMIC (see dynamic.py)."""

from __future__ import annotations

import struct
from functools import partial
from operator import itemgetter

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


# sh_type, sh_offset, sh_size, sh_link, sh_entsize, sh_info of a raw section header.
_SECTION_FIELDS = itemgetter(1, 4, 5, 6, 9, 7)
_new_section = partial(tuple.__new__, Section)
_SECTION_TYPE = itemgetter(0)


def section_headers(view: ByteView, hdr: ElfHeader) -> tuple[list[Section], int]:
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
    raw_sections = list(lay.shdr.iter_unpack(table))
    # Section(type, offset, size, link, entsize, info) of each, made in C loops: a small
    # library's 30 headers cost more than the rest of its ELF header's reading in Python.
    sections: list[Section] = list(map(_new_section, map(_SECTION_FIELDS, raw_sections)))
    if phnum == PN_XNUM and raw_sections:
        phnum = raw_sections[0][7]  # extended numbering: section 0's sh_info
    return sections, phnum


class SectionTable:
    """The sections the readers use, found by type; ``.dynsym`` and its string table
    checked against the file once, on first use."""

    __slots__ = ("view", "lay", "sections", "dynsym_index", "_dynsym", "_first")

    def __init__(self, view: ByteView, lay: Layout, sections: list[Section]) -> None:
        self.view = view
        self.lay = lay
        self.sections = sections
        types = list(map(_SECTION_TYPE, sections))
        # The first section of each type, found once (a reader asks for four or five).
        self._first = dict(zip(reversed(types), reversed(sections)))
        self.dynsym_index = types.index(SHT_DYNSYM) if SHT_DYNSYM in self._first else None
        self._dynsym: tuple[Section, Section] | None = None

    def section(self, index: int, what: str) -> Section:
        if not 0 <= index < len(self.sections):
            raise self.view.fail(f"{what} links to missing section {index}")
        return self.sections[index]

    def first(self, sh_type: int) -> Section | None:
        return self._first.get(sh_type)

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
        for sec in self.sections:
            if sec.type != SHT_NOTE or sec.size > MAX_NOTE_SECTION:
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
