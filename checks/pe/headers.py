"""A PE file's headers, data directories and sections, and RVA-to-file-offset mapping.

Field offsets are those of Microsoft's "PE Format" page (IMAGE_DOS_HEADER.e_lfanew at
0x3C, the COFF file header after "PE\\0\\0", then the optional header, PE32 or PE32+).
"""

from __future__ import annotations

from dataclasses import dataclass

from aoti_shim.checks.bounded.view import View

PE32, PE32_PLUS = 0x10B, 0x20B
DIRECTORY_EXPORT, DIRECTORY_IMPORT, DIRECTORY_DELAY_IMPORT = 0, 1, 13
IMAGE_FILE_DLL = 0x2000
MACHINES = {0x14C: "i386", 0x8664: "x86_64", 0x1C0: "arm", 0x1C4: "armnt", 0xAA64: "arm64", 0xA641: "arm64ec",
            0x5064: "riscv64"}
# The COFF header's NumberOfSections is 16 bits; the loader itself caps it at 96.
_MAX_SECTIONS = 96
_MAX_DIRECTORIES = 16


@dataclass(frozen=True)
class Section:
    name: str
    rva: int
    virtual_size: int
    file_offset: int
    file_size: int


@dataclass(frozen=True)
class Headers:
    machine: int
    characteristics: int
    plus: bool  # PE32+: 64-bit thunks and image base
    image_base: int
    directories: tuple[tuple[int, int], ...]  # (rva, size) by index
    sections: tuple[Section, ...]

    def directory(self, index: int) -> tuple[int, int] | None:
        if index >= len(self.directories) or not self.directories[index][0]:
            return None
        return self.directories[index]


def parse(view: View) -> Headers:
    if view.raw(0, 2, "the DOS header") != b"MZ":
        raise view.fail("not a PE file (no MZ header)")
    pe = view.u32(0x3C, "e_lfanew")
    if view.raw(pe, 4, "the PE signature") != b"PE\0\0":
        raise view.fail("not a PE file (no PE signature at e_lfanew)")
    coff = pe + 4
    machine, count = view.u16(coff, "the COFF machine"), view.u16(coff + 2, "NumberOfSections")
    optional_size, characteristics = view.u16(coff + 16, "SizeOfOptionalHeader"), view.u16(coff + 18, "Characteristics")
    if count > _MAX_SECTIONS:
        raise view.fail(f"{count} sections (more than {_MAX_SECTIONS})")
    optional = view.sub(coff + 20, optional_size, "the optional header")
    magic = optional.u16(0, "the optional header magic")
    if magic not in (PE32, PE32_PLUS):
        raise view.fail(f"unknown optional header magic {magic:#x}")
    plus = magic == PE32_PLUS
    image_base = optional.u64(24, "ImageBase") if plus else optional.u32(28, "ImageBase")
    rva_count_at = 108 if plus else 92
    rva_count = min(optional.u32(rva_count_at, "NumberOfRvaAndSizes"), _MAX_DIRECTORIES)
    directories = tuple((optional.u32(rva_count_at + 4 + 8 * i, "a data directory"),
                         optional.u32(rva_count_at + 8 + 8 * i, "a data directory")) for i in range(rva_count))
    table = coff + 20 + optional_size
    sections = tuple(_section(view, table + 40 * i) for i in range(count))
    return Headers(machine, characteristics, plus, image_base, directories, sections)


def _section(view: View, at: int) -> Section:
    name = view.raw(at, 8, "a section header").rstrip(b"\0").decode("utf-8", "backslashreplace")
    virtual_size, rva = view.u32(at + 8, "a section's VirtualSize"), view.u32(at + 12, "a section's VirtualAddress")
    size, offset = view.u32(at + 16, "a section's SizeOfRawData"), view.u32(at + 20, "a section's PointerToRawData")
    return Section(name, rva, virtual_size, offset, size)


def rva_offset(view: View, headers: Headers, rva: int, what: str) -> int:
    """The file offset of ``rva``: inside a section's raw data, or the headers before the first.

    Bytes of a section past its raw data are zero-filled by the loader; nothing the reader
    looks up (names, thunks, directories) is meaningful there, so such an RVA is refused.
    """
    for section in headers.sections:
        if section.rva <= rva < section.rva + max(section.virtual_size, section.file_size):
            delta = rva - section.rva
            if delta >= section.file_size:
                raise view.fail(f"{what} (RVA {rva:#x}) lies in {section.name!r} past its file data")
            return section.file_offset + delta
    first = min((s.rva for s in headers.sections), default=0)
    if rva < first or not headers.sections:
        view.check(rva, 1, what)
        return rva
    raise view.fail(f"{what} (RVA {rva:#x}) lies in no section")


def rva_string(view: View, headers: Headers, rva: int, what: str) -> str:
    name: str = view.cstring(rva_offset(view, headers, rva, what), what)[0]
    return name
