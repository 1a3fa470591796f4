"""The dynamic relocation tables (DT_RELA, DT_REL, DT_JMPREL), read through PT_DYNAMIC for
the .dynsym indexes they name: which imports bind lazily, which symbols any relocation
refers to, and which a copy relocation names."""

from __future__ import annotations

import struct
from array import array

from aoti_shim.checks.elf.dynamic import DynamicSegment, file_offset
from aoti_shim.checks.elf.layout import (
    DF_1_NOW,
    DF_BIND_NOW,
    DT_BIND_NOW,
    DT_FLAGS,
    DT_FLAGS_1,
    DT_JMPREL,
    DT_PLTREL,
    DT_PLTRELSZ,
    DT_REL,
    DT_RELA,
    DT_RELASZ,
    DT_RELSZ,
    Layout,
)
from aoti_shim.checks.elf.view import ByteView

# R_<machine>_COPY by e_machine: i386, ARM, x86-64, PowerPC64, S390, AArch64, RISC-V.
COPY_RELOCATION = {3: 5, 40: 20, 62: 5, 21: 19, 22: 9, 183: 1024, 243: 4}


def relocation_bytes(tags: dict[int, int]) -> int:
    """The size of the dynamic relocation tables (what reading them costs)."""
    return sum(tags.get(t, 0) for t in (DT_RELASZ, DT_RELSZ, DT_PLTRELSZ))


def copy_relocated(view: ByteView, lay: Layout, segment: DynamicSegment, copy: int) -> set[int]:
    """The .dynsym indexes that relocations of type ``copy`` (the machine's R_*_COPY) name.
    A table that cannot be read is an InputError."""
    tags = segment.tags
    is64 = lay.sym.size == 24
    word = struct.Struct(lay.endian + ("Q" if is64 else "I"))
    shift, mask = (32, 0xFFFFFFFF) if is64 else (8, 0xFF)
    found: set[int] = set()
    for tag, size_tag, entsize in ((DT_RELA, DT_RELASZ, 24 if is64 else 12), (DT_REL, DT_RELSZ, 16 if is64 else 8)):
        if tag not in tags:
            continue
        at = file_offset(view, segment, "a relocation table", tags[tag])
        size = tags.get(size_tag, 0)
        data = view.bytes(at, size - size % entsize, "a relocation table")
        for i in range(0, len(data), entsize):
            info = word.unpack_from(data, i + word.size)[0]
            if info & mask == copy:
                found.add(info >> shift)
    return found


def relocated(
    view: ByteView, lay: Layout, segment: DynamicSegment, tags: dict[int, int]
) -> tuple[frozenset[int], frozenset[int]]:
    """(the .dynsym indexes bound lazily, every index some dynamic relocation refers to),
    from ``tags`` (PT_DYNAMIC's, first value of each); the first empty when the library
    binds at load (-z now). A table that cannot be read is an InputError."""
    now = DT_BIND_NOW in tags or tags.get(DT_FLAGS, 0) & DF_BIND_NOW or tags.get(DT_FLAGS_1, 0) & DF_1_NOW
    rela = tags.get(DT_PLTREL, DT_RELA) == DT_RELA
    is64 = lay.sym.size == 24
    shift = 32 if is64 else 8

    def indexes(tag: int, size_tag: int, rela: bool) -> set[int]:
        if tag not in tags:
            return set()
        entsize = (24 if rela else 16) if is64 else (12 if rela else 8)
        at = file_offset(view, segment, "a relocation table", tags[tag])
        size = tags.get(size_tag, 0)
        # The entries as words (r_offset, r_info[, r_addend]): every r_info is one slice.
        words = array("Q" if is64 else "I", view.bytes(at, size - size % entsize, "a relocation table"))
        if lay.swapped:
            words.byteswap()
        return {info >> shift for info in words[1 :: entsize // words.itemsize]}

    plt = indexes(DT_JMPREL, DT_PLTRELSZ, rela)
    eager = indexes(DT_RELA, DT_RELASZ, True) | indexes(DT_REL, DT_RELSZ, False)
    return frozenset() if now else frozenset(plt - eager), frozenset(plt | eager)
