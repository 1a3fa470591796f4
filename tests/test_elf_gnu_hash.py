"""checks/elf/gnu_hash.py: the hash, the table's extent and reach, and a lookup's walk agree
with pyelftools over libraries the linker built, and a header that does not fit is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoti_shim.checks.elf import gnu_hash
from aoti_shim.checks.elf.layout import SHT_GNU_HASH, Section
from aoti_shim.checks.elf.sections import SectionTable, elf_header, section_headers
from aoti_shim.checks.elf.view import ByteView
from aoti_shim.errors import InputError
from compile_support import compile_shared
from elf_fixtures import SOURCES


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("gnu_hash") / "libmany.so"
    compile_shared(SOURCES / "many.c", target)
    return target


def test_the_hash_is_the_loaders() -> None:
    from elftools.elf.hash import GNUHashTable

    for name in (b"", b"printf", b"aoti_torch_empty_strided", "elf_café".encode()):
        assert gnu_hash.gnu_hash(name) == GNUHashTable.gnu_hash(name.decode())
    assert gnu_hash.hashed("printf") == (b"printf", gnu_hash.gnu_hash(b"printf"))


def test_every_export_is_found_on_its_chain(many: Path) -> None:
    from elftools.elf.elffile import ELFFile

    with many.open("rb") as f:
        elf = ELFFile(f)
        dynsym = elf.get_section_by_name(".dynsym")
        exports = {s.name: i for i, s in enumerate(dynsym.iter_symbols()) if s["st_shndx"] != "SHN_UNDEF" and s.name}
        count = dynsym.num_symbols()
        gnu_size = elf.get_section_by_name(".gnu.hash")["sh_size"]
    view = ByteView.open(str(many), "many")
    try:
        hdr = elf_header(view)
        table = SectionTable(view, hdr.lay, section_headers(view, hdr)[0])
        sec = table.first(SHT_GNU_HASH)
        assert sec is not None
        t = gnu_hash.read_table(view, hdr.lay, sec, count)
        assert len(exports) >= 1024
        for name, index in exports.items():
            # Every index whose hash matches is read; the one named so is on the chain.
            read: list[int] = []
            assert list(gnu_hash.matches(view, hdr.lay, t, name, count, lambda i: read.append(i))) == []  # noqa: B023 - called here
            assert index in read, name
        assert list(gnu_hash.matches(view, hdr.lay, t, "elf_not_there", count, lambda i: None)) == []
        # Every symbol from symoffset on is hashed: the chains reach the last one.
        assert gnu_hash.reach(view, hdr.lay, t) == count
        assert gnu_hash.extent(view, hdr.lay, sec.offset) == (count, gnu_size)
    finally:
        view.close()


def test_a_header_that_does_not_fit_is_refused(many: Path) -> None:
    view = ByteView.open(str(many), "many")
    try:
        hdr = elf_header(view)
        table = SectionTable(view, hdr.lay, section_headers(view, hdr)[0])
        sec = table.first(SHT_GNU_HASH)
        assert sec is not None
        with pytest.raises(InputError, match="shorter than its header"):
            gnu_hash.read_table(view, hdr.lay, Section(SHT_GNU_HASH, sec.offset, 8, 0, 0), 10)
        with pytest.raises(InputError, match="does not fit its section"):
            gnu_hash.read_table(view, hdr.lay, Section(SHT_GNU_HASH, sec.offset, 20, 0, 0), 10)
        with pytest.raises(InputError, match="past .dynsym"):
            gnu_hash.read_table(view, hdr.lay, sec, 0)
    finally:
        view.close()
