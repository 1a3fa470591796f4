"""checks/elf/relocations.py: the .dynsym indexes the dynamic relocation tables name agree
with pyelftools, lazy binding follows -z now, and a program's copy relocations are found."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoti_shim.checks.elf.dynamic import read_segment
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.elf.relocations import COPY_RELOCATION, copy_relocated, relocated, relocation_bytes
from aoti_shim.checks.elf.sections import elf_header
from aoti_shim.checks.elf.view import ByteView
from compile_support import compile_program, compile_shared
from elf_fixtures import SOURCES


def _truth(path: Path) -> tuple[set[int], set[int]]:
    """(indexes .rela.plt names, indexes .rela.dyn names), by pyelftools."""
    from elftools.elf.elffile import ELFFile

    with path.open("rb") as f:
        elf = ELFFile(f)
        named = {}
        for name in (".rela.plt", ".rela.dyn"):
            sec = elf.get_section_by_name(name)
            named[name] = {r["r_info_sym"] for r in sec.iter_relocations()} if sec is not None else set()
        return named[".rela.plt"], named[".rela.dyn"]


def _read(path: Path) -> tuple[frozenset[int], frozenset[int]]:
    view = ByteView.open(str(path), path.name)
    try:
        hdr = elf_header(view)
        segment = read_segment(view, hdr.lay, hdr.phoff, hdr.phentsize, hdr.phnum, None)
        assert segment is not None
        return relocated(view, hdr.lay, segment, segment.tags)
    finally:
        view.close()


@pytest.mark.parametrize("now", [False, True])
def test_lazy_and_referenced_indexes_agree_with_pyelftools(tmp_path: Path, now: bool) -> None:
    lib = tmp_path / "libmany.so"
    compile_shared(SOURCES / "many.c", lib, ("-Wl,-z,now",) if now else ("-Wl,-z,lazy",))
    plt, dyn = _truth(lib)
    lazy, referenced = _read(lib)
    assert referenced == plt | dyn and len(plt) >= 1024  # 1024 imports, each called
    assert lazy == (frozenset() if now else frozenset(plt - dyn))
    with ElfImage(lib) as image:
        assert image.relocated_symbol_indexes() == (lazy, referenced)
        assert 0 < relocation_bytes(image.dynamic_tags()) == image.relocation_bytes() <= lib.stat().st_size


def test_a_programs_copy_relocations(tmp_path: Path) -> None:
    lib = tmp_path / "libdata.so"
    (tmp_path / "data.c").write_text("int shared_data = 7; int other_data = 8;\n")
    compile_shared(tmp_path / "data.c", lib)
    (tmp_path / "main.c").write_text("extern int shared_data; int main(void) { return shared_data; }\n")
    program = tmp_path / "main"
    compile_program(tmp_path / "main.c", program, ("-fno-pie", "-no-pie", "-Wl,--no-as-needed", str(lib)))
    with ElfImage(program) as image:
        assert image.machine in COPY_RELOCATION
        copied = image.copy_relocated_indexes()
        names = {i: s.name for i, s in enumerate(image.symbols(), 1)}
        view = ByteView.open(str(program), "main")
        try:
            hdr = elf_header(view)
            segment = read_segment(view, hdr.lay, hdr.phoff, hdr.phentsize, hdr.phnum, None)
            assert segment is not None
            assert copy_relocated(view, hdr.lay, segment, COPY_RELOCATION[image.machine]) == set(copied)
        finally:
            view.close()
    assert {names[i] for i in copied} == {"shared_data"}
    with ElfImage(lib) as image:
        assert image.copy_relocated_indexes() == frozenset()  # a library asks for no copies
