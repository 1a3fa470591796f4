"""What an ELF file's bytes mean: the constants, the struct layouts of one class and byte
order, the section record the readers share, the caps that bound a hostile file, and the
facts a file's first bytes give (its kind, its program headers) without opening an image."""

from __future__ import annotations

import os
import struct
import sys
from functools import cache
from operator import itemgetter
from typing import NamedTuple

ELF_MAGIC = b"\x7fELF"

# Symbol binding, type and visibility (st_info, st_other).
STB_LOCAL, STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE = 0, 1, 2, 10
STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_TLS, STT_GNU_IFUNC = 0, 1, 2, 6, 10
STV_DEFAULT, STV_INTERNAL, STV_HIDDEN, STV_PROTECTED = 0, 1, 2, 3
SHN_UNDEF, SHN_ABS = 0, 0xFFF1

SHT_STRTAB, SHT_DYNAMIC, SHT_NOTE, SHT_NOBITS, SHT_DYNSYM = 3, 6, 7, 8, 11
SHT_GNU_HASH, SHT_GNU_VERSYM, SHT_GNU_VERDEF, SHT_GNU_VERNEED = 0x6FFFFFF6, 0x6FFFFFFF, 0x6FFFFFFD, 0x6FFFFFFE
DT_NULL, DT_NEEDED, DT_HASH, DT_STRTAB, DT_SYMTAB, DT_STRSZ, DT_SYMENT, DT_SONAME = 0, 1, 4, 5, 6, 10, 11, 14
DT_RPATH, DT_RUNPATH = 15, 29
DT_SYMBOLIC, DT_FLAGS = 16, 30
DT_GNU_HASH, DT_VERSYM, DT_FLAGS_1 = 0x6FFFFEF5, 0x6FFFFFF0, 0x6FFFFFFB
DT_VERDEF, DT_VERDEFNUM, DT_VERNEED, DT_VERNEEDNUM = 0x6FFFFFFC, 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF
DT_PLTRELSZ, DT_RELA, DT_RELASZ, DT_REL, DT_RELSZ, DT_PLTREL, DT_JMPREL, DT_BIND_NOW = 2, 7, 8, 17, 18, 20, 23, 24
DF_SYMBOLIC, DF_BIND_NOW, DF_1_NOW = 0x2, 0x8, 0x1
DF_1_NODEFLIB = 0x800
DF_1_PIE = 0x08000000
# -z nodlopen: dlopen refuses the object (itself or as a dependency of what it opens).
DF_1_NOOPEN = 0x40
# -f / -F (auxiliary and standard filters): the loader looks a name up in the filtee first.
DT_AUXILIARY, DT_FILTER = 0x7FFFFFFD, 0x7FFFFFFF
# A .gnu.version entry: the version index in the low 15 bits, "hidden" (a non-default
# version, name@V rather than name@@V) in the top one. Index 0 is local, 1 global (no version).
VERSYM_HIDDEN = 0x8000
VER_FLG_BASE = 0x1
PT_LOAD, PT_DYNAMIC, PT_INTERP, PT_NOTE = 1, 2, 3, 4
ET_REL, ET_EXEC, ET_DYN = 1, 2, 3
PN_XNUM = 0xFFFF
NT_GNU_BUILD_ID = 3

# Caps that keep a hostile header from costing unbounded time or memory.
MAX_SECTIONS = 1 << 16
MAX_DYNAMIC_ENTRIES = 1 << 16
MAX_NOTE_SECTION = 1 << 20
MAX_VERSIONS = 1 << 15
# libtorch_cpu has 75k dynamic symbols and 5 MiB of names; a table far past these is an attack
# (many symbols pointing at one huge name would otherwise cost gigabytes).
MAX_SYMBOLS = 1 << 21
MAX_NAME_BYTES = 64 << 20
MAX_NAME_LEN = 64 << 10  # the longest in torch 2.14.1 is 2 KB

TABLE_NAMES = {
    SHT_STRTAB: ".dynstr", SHT_DYNSYM: ".dynsym", SHT_GNU_HASH: ".gnu.hash", SHT_GNU_VERSYM: ".gnu.version",
    SHT_GNU_VERDEF: ".gnu.version_d", SHT_GNU_VERNEED: ".gnu.version_r", SHT_NOTE: "a note segment",
}


class Layout(NamedTuple):
    """struct formats for one ELF class and byte order."""

    ehdr: struct.Struct
    shdr: struct.Struct
    # (sh_type, sh_offset, sh_size, sh_link, sh_info, sh_entsize) of a section header, the rest skipped.
    shdr_key: struct.Struct
    phdr: struct.Struct
    # (p_type, p_offset, p_vaddr, p_filesz) of a program header, the rest skipped.
    phdr_key: struct.Struct
    sym: struct.Struct
    # (st_name, st_info, st_other, st_shndx) of one symbol, the rest skipped.
    sym_key: struct.Struct
    dyn: struct.Struct
    word: struct.Struct
    bloom_word: struct.Struct
    endian: str

    @property
    def swapped(self) -> bool:
        """The file's byte order is not this machine's: an array of its words needs a byteswap."""
        return (self.endian == ">") != (sys.byteorder == "big")


@cache
def layout(elf_class: int, endian: str) -> Layout:
    """The struct formats of one class and byte order, made once a process (four layouts at
    most: a check of 128 blobs made them 128 times)."""
    if elf_class == 2:
        return Layout(
            ehdr=struct.Struct(endian + "16sHHIQQQIHHHHHH"),
            shdr=struct.Struct(endian + "IIQQQQIIQQ"),
            shdr_key=struct.Struct(endian + "4xI16xQQII8xQ"),
            phdr=struct.Struct(endian + "IIQQQQQQ"),
            phdr_key=struct.Struct(endian + "I4xQQ8xQ16x"),
            sym=struct.Struct(endian + "IBBHQQ"),
            sym_key=struct.Struct(endian + "IBBH16x"),
            dyn=struct.Struct(endian + "qQ"),
            word=struct.Struct(endian + "I"),
            bloom_word=struct.Struct(endian + "Q"),
            endian=endian,
        )
    return Layout(
        ehdr=struct.Struct(endian + "16sHHIIIIIHHHHHH"),
        shdr=struct.Struct(endian + "IIIIIIIIII"),
        shdr_key=struct.Struct(endian + "4xI8xIIII4xI"),
        phdr=struct.Struct(endian + "IIIIIIII"),
        phdr_key=struct.Struct(endian + "III4xI12x"),
        sym=struct.Struct(endian + "IIIBBH"),
        sym_key=struct.Struct(endian + "I8xBBH"),
        dyn=struct.Struct(endian + "iI"),
        word=struct.Struct(endian + "I"),
        bloom_word=struct.Struct(endian + "I"),
        endian=endian,
    )


class Section(NamedTuple):
    """One table the readers use: from a section header, or made from what PT_DYNAMIC
    names when the file is read the loader's way."""

    type: int
    offset: int
    size: int
    link: int
    entsize: int
    info: int = 0  # sh_info: the entry count of .gnu.version_d / .gnu.version_r


def has_elf_magic(head: bytes) -> bool:
    """True when ``head`` (the first bytes of a file or wheel member) is the ELF magic."""
    return head.startswith(ELF_MAGIC)


def header_facts(head: bytes | bytearray) -> tuple[int, int, int, int, bool] | None:
    """(e_type, e_phoff, e_phentsize, e_phnum, 64-bit) from an ELF file's first 64 bytes,
    or None when they are not a readable ELF header."""
    if len(head) < 52 or head[:4] != ELF_MAGIC or head[4] not in (1, 2) or head[5] not in (1, 2):
        return None
    end = "<" if head[5] == 1 else ">"
    if head[4] == 2:
        if len(head) < 64:
            return None
        e_type, phoff, phentsize, phnum = (
            struct.unpack_from(end + "H", head, 16)[0],
            struct.unpack_from(end + "Q", head, 0x20)[0],
            *struct.unpack_from(end + "HH", head, 0x36),
        )
        return e_type, phoff, phentsize, phnum, True
    e_type = struct.unpack_from(end + "H", head, 16)[0]
    phoff = struct.unpack_from(end + "I", head, 0x1C)[0]
    phentsize, phnum = struct.unpack_from(end + "HH", head, 0x2A)
    return e_type, phoff, phentsize, phnum, False


def segments_of(head: bytes | bytearray) -> list[tuple[int, int, int]] | None:
    """(p_type, p_offset, p_filesz) of every program header, read from a file's first
    bytes; None when the table is not within ``head``."""
    facts = header_facts(head)
    if facts is None:
        return None
    _, phoff, phentsize, phnum, is64 = facts
    if phnum == PN_XNUM or phentsize != (56 if is64 else 32) or phoff + phnum * phentsize > len(head):
        return None
    end = "<" if head[5] == 1 else ">"
    phdr = struct.Struct(end + ("IIQQQQQQ" if is64 else "IIIIIIII"))
    fields = itemgetter(0, 2, 5) if is64 else itemgetter(0, 1, 4)
    return list(map(fields, phdr.iter_unpack(head[phoff : phoff + phnum * phentsize])))


def file_kind(head: bytes | bytearray) -> str:
    """"shared" (a shared library), "executable" (PIE ones too: they name an interpreter),
    "object" (a .o) or "other", from a file's first bytes (4 KiB hold the program headers
    of anything a linker wrote)."""
    facts = header_facts(head)
    if facts is None:
        return "other"
    e_type = facts[0]
    if e_type == ET_REL:
        return "object"
    if e_type == ET_EXEC:
        return "executable"
    if e_type != ET_DYN:
        return "other"
    segments = segments_of(head)
    if segments is not None and any(p_type == PT_INTERP for p_type, _, _ in segments):
        return "executable"
    return "shared"


def is_elf(path: str | os.PathLike[str]) -> bool:
    """True when the file starts with the ELF magic (names are not trusted)."""
    try:
        with open(path, "rb") as f:
            return has_elf_magic(f.read(len(ELF_MAGIC)))
    except OSError:
        return False
