"""A Mach-O or PE file's format and kind from its first bytes: what ``collect`` takes besides ELF.

The kind is the ELF reader's word for it: "shared" (a Mach-O dylib or bundle, a DLL), which
a check reads, or "executable" and "object", which a folder walk or a wheel passes over (and
says so). Only headers are read here; the readers (``checks/macho``, ``checks/pe``) check the
rest with their bounds.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

MACHO, PE = "macho", "pe"
# The magics and the DLL flag as <mach-o/loader.h>, <mach-o/fat.h> and winnt.h spell them,
# written here (tests/test_inputs_magic.py holds them to the readers' constants): importing
# the readers' packages loads the whole readers, a sixth of an ELF scan's start-up.
MH_MAGIC, MH_MAGIC_64, FAT_MAGIC, FAT_MAGIC_64 = 0xFEEDFACE, 0xFEEDFACF, 0xCAFEBABE, 0xCAFEBABF
IMAGE_FILE_DLL = 0x2000
# file(1)'s test for a fat header: 0xCAFEBABE is also a Java class file's magic, whose
# second word (its version, 45 and up) reads as the slice count.
_MAX_FAT_SLICES = 20
_THIN = {struct.pack("<I", m) for m in (MH_MAGIC, MH_MAGIC_64)}
_FAT = {struct.pack(">I", m) for m in (FAT_MAGIC, FAT_MAGIC_64)}
_MACHO_KINDS = {6: "shared", 8: "shared", 2: "executable"}  # MH_DYLIB, MH_BUNDLE, MH_EXECUTE


def has_native_magic(head: bytes) -> bool:
    """True when ``head`` (4 bytes or more) may start a Mach-O (thin or fat) or PE file."""
    return head[:4] in _THIN or head[:4] in _FAT or head[:2] == b"MZ"


def native_kind(f: BinaryIO) -> tuple[str, str] | None:
    """(format, kind) of the file open in ``f`` (read from its start), or None when it is no
    Mach-O nor PE file (an ``MZ`` without ``PE\\0\\0``, a Java class file)."""
    f.seek(0)
    head = f.read(64)
    if head[:4] in _THIN:
        return MACHO, _macho_kind(head)
    if head[:4] in _FAT and len(head) >= 24:
        wide = head[:4] == struct.pack(">I", FAT_MAGIC_64)
        count = struct.unpack_from(">I", head, 4)[0]
        if not 0 < count <= _MAX_FAT_SLICES:
            return None
        # Every slice of a universal file is one kind: the first says it.
        offset = struct.unpack_from(">Q" if wide else ">I", head, 16)[0]  # fat_arch[0].offset
        f.seek(offset)
        return MACHO, _macho_kind(f.read(16))
    if head[:2] == b"MZ" and len(head) >= 64:
        (at,) = struct.unpack_from("<I", head, 0x3C)
        f.seek(at)
        coff = f.read(24)
        if len(coff) < 24 or coff[:4] != b"PE\0\0":
            return None
        (characteristics,) = struct.unpack_from("<H", coff, 22)
        return PE, "shared" if characteristics & IMAGE_FILE_DLL else "executable"
    return None


def _macho_kind(header: bytes) -> str:
    """A thin header's kind; a truncated one is "shared", so the reader says what is wrong."""
    if len(header) < 16 or header[:4] not in _THIN:
        return "shared"
    return _MACHO_KINDS.get(struct.unpack_from("<I", header, 12)[0], "object")


def path_kind(path: str) -> tuple[str, str] | None:
    """:func:`native_kind` of the file at ``path``."""
    with open(path, "rb") as f:
        return native_kind(f)
