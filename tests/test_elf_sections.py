"""checks/elf/sections.py: the ELF header, the section header table and the build ID agree
with pyelftools, and a bad identification or a bad .dynsym link is one InputError."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoti_shim.checks.elf.layout import SHT_DYNSYM, SHT_GNU_HASH, SHT_STRTAB
from aoti_shim.checks.elf.sections import SectionTable, elf_header, section_headers
from aoti_shim.checks.elf.view import ByteView
from aoti_shim.errors import InputError
from compile_support import compile_shared
from elf_fixtures import SOURCES, synth_elf


@pytest.fixture(scope="module")
def kinds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("sections") / "libkinds.so"
    compile_shared(SOURCES / "kinds.c", target, ("-Wl,--build-id",))
    return target


def test_header_and_sections_agree_with_pyelftools(kinds: Path) -> None:
    from elftools.elf.elffile import ELFFile

    view = ByteView.open(str(kinds), "kinds")
    try:
        hdr = elf_header(view)
        sections, phnum = section_headers(view, hdr)
        table = SectionTable(view, hdr.lay, sections)
        with kinds.open("rb") as f:
            elf = ELFFile(f)
            assert (hdr.elf_class, hdr.big_endian, hdr.e_type) == (64, False, 3)  # ET_DYN
            assert (hdr.phoff, hdr.shoff, phnum) == (elf["e_phoff"], elf["e_shoff"], elf["e_phnum"])
            assert [(s.offset, s.size) for s in sections] == [
                (s["sh_offset"], s["sh_size"]) for s in elf.iter_sections()
            ]
            dynsym, dynstr = table.dynsym()
            assert table.dynsym_index == next(i for i, s in enumerate(elf.iter_sections()) if s.name == ".dynsym")
            assert (dynsym.type, dynsym.offset) == (SHT_DYNSYM, elf.get_section_by_name(".dynsym")["sh_offset"])
            assert (dynstr.type, dynstr.offset) == (SHT_STRTAB, elf.get_section_by_name(".dynstr")["sh_offset"])
            gnu = table.first(SHT_GNU_HASH)
            assert gnu is not None and gnu.offset == elf.get_section_by_name(".gnu.hash")["sh_offset"]
            note = next(n for s in elf.iter_sections() if s.name == ".note.gnu.build-id" for n in s.iter_notes())
            assert table.build_id() == note["n_desc"]
    finally:
        view.close()


@pytest.mark.parametrize(
    ("at", "value", "message"),
    [(0, 0x7E, "bad magic"), (4, 3, "unknown ELF class 3"), (5, 0, "unknown ELF data encoding 0")],
)
def test_a_bad_identification_is_refused(kinds: Path, at: int, value: int, message: str) -> None:
    data = bytearray(kinds.read_bytes())
    data[at] = value
    with pytest.raises(InputError, match=message):
        elf_header(ByteView("bad", bytes(data), len(data), False))


@pytest.mark.parametrize(("elf64", "big_endian"), [(True, False), (False, True)])
def test_every_class_and_byte_order(elf64: bool, big_endian: bool) -> None:
    from elf_fixtures import SYNTH_SYMBOLS

    data = synth_elf(SYNTH_SYMBOLS, elf64=elf64, big_endian=big_endian)
    view = ByteView("synth", data, len(data), False)
    hdr = elf_header(view)
    assert (hdr.elf_class, hdr.big_endian) == (64 if elf64 else 32, big_endian)
    table = SectionTable(view, hdr.lay, section_headers(view, hdr)[0])
    sym, _ = table.dynsym()
    assert sym.size // sym.entsize == len(SYNTH_SYMBOLS) + 1  # and the null entry


def test_a_dynsym_that_links_badly_is_refused(kinds: Path) -> None:
    view = ByteView.open(str(kinds), "kinds")
    try:
        hdr = elf_header(view)
        sections, _ = section_headers(view, hdr)
        at = next(i for i, s in enumerate(sections) if s.type == SHT_DYNSYM)
        cases = ((at, "names itself"), (len(sections), "links to missing section"), (0, "not a string table"))
        for link, message in cases:
            bad = list(sections)
            bad[at] = sections[at]._replace(link=link)
            with pytest.raises(InputError, match=message):
                SectionTable(view, hdr.lay, bad).dynsym()
        bad = list(sections)
        bad[at] = sections[at]._replace(entsize=16)
        with pytest.raises(InputError, match="bad .dynsym entry size 16"):
            SectionTable(view, hdr.lay, bad).dynsym()
    finally:
        view.close()


@pytest.mark.parametrize(("elf64", "big_endian"), [(True, False), (False, True)])
def test_the_kept_header_fields_are_the_whole_headers(elf64: bool, big_endian: bool) -> None:
    # The table keeps six fields of each header (Layout.shdr_key) and makes a Section when one
    # is read: each is the whole header's (sh_type, sh_offset, sh_size, sh_link, sh_entsize, sh_info).
    from elf_fixtures import SYNTH_SYMBOLS

    data = synth_elf(SYNTH_SYMBOLS, elf64=elf64, big_endian=big_endian)
    view = ByteView("synth", data, len(data), False)
    hdr = elf_header(view)
    sections, _ = section_headers(view, hdr)
    whole = [hdr.lay.shdr.unpack_from(data, hdr.shoff + i * hdr.shentsize) for i in range(hdr.shnum)]
    assert len(sections) == len(whole) > 3
    assert list(sections) == [(r[1], r[4], r[5], r[6], r[9], r[7]) for r in whole]
    assert sections[-1] is sections[len(whole) - 1] and sections[1:3] == list(sections)[1:3]
    assert sections.types() == [r[1] for r in whole]
    with pytest.raises(IndexError):
        sections[len(whole)]
    table = SectionTable(view, hdr.lay, sections)
    assert table.dynsym_index == [r[1] for r in whole].index(SHT_DYNSYM)
    assert table.all_of(SHT_STRTAB) == [s for s in list(sections) if s.type == SHT_STRTAB]
