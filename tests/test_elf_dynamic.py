"""checks/elf/dynamic.py: the view through PT_DYNAMIC agrees with pyelftools' dynamic
segment, the sections made from it match the section headers, and section headers that
describe another symbol table than the loader's are refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from aoti_shim.checks.elf import gnu_hash
from aoti_shim.checks.elf.dynamic import (
    dynamic_strings,
    file_offset,
    load_extent,
    loader_sections,
    read_segment,
    verify_sections,
)
from aoti_shim.checks.elf.gnu_hash import GnuHash
from aoti_shim.checks.elf.layout import (
    DT_NEEDED,
    DT_SONAME,
    DT_SYMTAB,
    SHT_DYNSYM,
    SHT_GNU_HASH,
    SHT_STRTAB,
    Layout,
    Section,
)
from aoti_shim.checks.elf.sections import SectionTable, elf_header, section_headers
from aoti_shim.checks.elf.view import ByteView
from aoti_shim.errors import InputError
from compile_support import compile_shared
from elf_fixtures import SOURCES


@pytest.fixture(scope="module")
def kinds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("dynamic") / "libkinds.so"
    compile_shared(SOURCES / "kinds.c", target, ("-Wl,-soname,libkinds.so.1", "-Wl,--no-as-needed", "-lm"))
    return target


def _truth(path: Path) -> tuple[dict[int, int], dict[str, tuple[int, int]]]:
    from elftools.elf.elffile import ELFFile
    from elftools.elf.enums import ENUM_D_TAG

    with path.open("rb") as f:
        elf = ELFFile(f)
        tags: dict[int, int] = {}
        for tag in elf.get_section_by_name(".dynamic").iter_tags():
            if tag.entry.d_tag == "DT_NULL":
                break
            name = tag.entry.d_tag
            tags.setdefault(ENUM_D_TAG[name] if isinstance(name, str) else name, tag.entry.d_val)
        sections = {s.name: (s["sh_offset"], s["sh_size"]) for s in elf.iter_sections()}
        return tags, sections


def test_the_segment_and_the_sections_made_from_it(kinds: Path) -> None:
    tags, sections = _truth(kinds)
    view = ByteView.open(str(kinds), "kinds")
    try:
        hdr = elf_header(view)
        segment = read_segment(view, hdr.lay, hdr.phoff, hdr.phentsize, hdr.phnum, None)
        assert segment is not None and segment.tags == tags
        assert file_offset(view, segment, "DT_SYMTAB", tags[DT_SYMTAB]) == sections[".dynsym"][0]
        offset, end = load_extent(view, segment, "DT_SYMTAB", tags[DT_SYMTAB])
        assert offset < end <= view.size
        with pytest.raises(InputError, match="points outside the file's loaded segments"):
            file_offset(view, segment, "DT_BOGUS", 1 << 60)
        made = loader_sections(view, hdr.lay, hdr.phoff, hdr.phentsize, hdr.phnum, None)
        by_type = {s.type: s for s in made}
        assert (by_type[SHT_DYNSYM].offset, by_type[SHT_DYNSYM].size) == sections[".dynsym"]
        assert (by_type[SHT_STRTAB].offset, by_type[SHT_STRTAB].size) == sections[".dynstr"]
        assert (by_type[SHT_GNU_HASH].offset, by_type[SHT_GNU_HASH].size) == sections[".gnu.hash"]
        table = SectionTable(view, hdr.lay, made)
        assert dynamic_strings(view, hdr.lay, table, DT_SONAME, None) == ["libkinds.so.1"]
        assert "libm.so.6" in dynamic_strings(view, hdr.lay, table, DT_NEEDED, None)
        # The same strings through the section headers, and from a stream's PT_DYNAMIC bytes.
        real = SectionTable(view, hdr.lay, section_headers(view, hdr)[0])
        needed = dynamic_strings(view, hdr.lay, table, DT_NEEDED, None)
        assert dynamic_strings(view, hdr.lay, real, DT_NEEDED, segment.data) == needed
    finally:
        view.close()


def test_no_program_headers_means_nothing_binds(kinds: Path) -> None:
    view = ByteView.open(str(kinds), "kinds")
    try:
        hdr = elf_header(view)
        assert read_segment(view, hdr.lay, 0, hdr.phentsize, hdr.phnum, None) is None
        assert loader_sections(view, hdr.lay, hdr.phoff, hdr.phentsize, 0, None) == []
        with pytest.raises(InputError, match="bad program header size 7"):
            read_segment(view, hdr.lay, hdr.phoff, 7, hdr.phnum, None)
    finally:
        view.close()


def _checked(view: ByteView, lay: Layout, sections: list[Section]) -> tuple[SectionTable, Callable[[], GnuHash | None]]:
    """The table, and a reader of its checked .gnu.hash (what the image keeps)."""
    table = SectionTable(view, lay, sections)

    def gnu_table() -> GnuHash | None:
        sec = table.first(SHT_GNU_HASH)
        sym, _ = table.dynsym()
        return None if sec is None else gnu_hash.read_table(view, lay, sec, sym.size // sym.entsize)

    return table, gnu_table


def test_section_headers_that_hide_the_loaders_table_are_refused(kinds: Path) -> None:
    view = ByteView.open(str(kinds), "kinds")
    try:
        hdr = elf_header(view)
        segment = read_segment(view, hdr.lay, hdr.phoff, hdr.phentsize, hdr.phnum, None)
        sections, _ = section_headers(view, hdr)
        verify_sections(view, hdr.lay, segment, *_checked(view, hdr.lay, sections))
        at = next(i for i, s in enumerate(sections) if s.type == SHT_DYNSYM)
        moved = list(sections)
        sym = sections[at]
        moved[at] = sym._replace(offset=sym.offset + sym.entsize, size=sym.size - sym.entsize)
        with pytest.raises(InputError, match="section headers disagree with the dynamic segment about .dynsym"):
            verify_sections(view, hdr.lay, segment, *_checked(view, hdr.lay, moved))
        shorter = list(sections)
        shorter[at] = sections[at]._replace(size=sections[at].size - sections[at].entsize)
        with pytest.raises(InputError, match="hidden symbols"):
            verify_sections(view, hdr.lay, segment, *_checked(view, hdr.lay, shorter))
        hidden = [s._replace(type=0) if s.type == SHT_DYNSYM else s for s in sections]
        with pytest.raises(InputError, match="the sections hide it"):
            verify_sections(view, hdr.lay, segment, *_checked(view, hdr.lay, hidden))
    finally:
        view.close()
