"""checks/elf/layout.py: what a file's first bytes say (ELF or not, its kind, its program
headers) agrees with pyelftools for a library, a program and an object, with no image open."""

from __future__ import annotations

from pathlib import Path

from aoti_shim.checks.elf.layout import PT_DYNAMIC, file_kind, has_elf_magic, header_facts, is_elf, layout, segments_of
from compile_support import compile_object, compile_program, compile_shared
from elf_fixtures import SOURCES, SYNTH_SYMBOLS, synth_elf


def test_kinds_from_the_first_bytes(tmp_path: Path) -> None:
    lib, program, obj = tmp_path / "libtiny.so", tmp_path / "main", tmp_path / "tiny.o"
    compile_shared(SOURCES / "tiny.c", lib)
    (tmp_path / "main.c").write_text("int main(void) { return 0; }\n")
    compile_program(tmp_path / "main.c", program)
    compile_object(SOURCES / "tiny.c", obj)
    heads = {p: p.read_bytes()[:4096] for p in (lib, program, obj)}
    assert [file_kind(heads[p]) for p in (lib, program, obj)] == ["shared", "executable", "object"]
    assert file_kind(b"#!/bin/sh\n" + bytes(60)) == "other" and file_kind(heads[lib][:40]) == "other"
    assert all(is_elf(p) and has_elf_magic(heads[p]) for p in heads)
    (tmp_path / "text.so").write_text("INPUT(libc.so.6)\n")
    assert not is_elf(tmp_path / "text.so") and not is_elf(tmp_path / "missing.so")


def test_program_headers_agree_with_pyelftools(tmp_path: Path) -> None:
    from elftools.elf.elffile import ELFFile

    lib = tmp_path / "libtiny.so"
    compile_shared(SOURCES / "tiny.c", lib)
    head = lib.read_bytes()[:4096]
    with lib.open("rb") as f:
        elf = ELFFile(f)
        truth = [(s["p_type"], s["p_offset"], s["p_filesz"]) for s in elf.iter_segments()]
        e_type, phoff, phentsize, phnum, is64 = header_facts(head)
        assert (e_type, phoff, phentsize, phnum, is64) == (3, elf["e_phoff"], elf["e_phentsize"], elf["e_phnum"], True)
    segments = segments_of(head)
    assert segments is not None and [(o, s) for _, o, s in segments] == [(o, s) for _, o, s in truth]
    assert any(t == PT_DYNAMIC for t, _, _ in segments)
    assert segments_of(head[: phoff + 8]) is None  # the table is not within what was read


def test_layouts_fit_every_class_and_byte_order() -> None:
    for elf_class, sizes in ((1, (52, 40, 32, 16, 8)), (2, (64, 64, 56, 24, 16))):
        for endian in "<>":
            lay = layout(elf_class, endian)
            assert (lay.ehdr.size, lay.shdr.size, lay.phdr.size, lay.sym.size, lay.dyn.size) == sizes
            assert lay.sym_key.size == lay.sym.size
    data = synth_elf(SYNTH_SYMBOLS, elf64=False, big_endian=True)
    facts = header_facts(data)
    assert facts is not None and facts[4] is False
