"""Libraries without section headers are read the dynamic loader's way (PT_DYNAMIC ->
DT_SYMTAB, DT_STRTAB, DT_GNU_HASH or DT_HASH), and agree with pyelftools' dynamic segment.

The fixtures are stripped as ``sstrip`` does it, by a few lines of Python: the file is cut
after its last loaded segment and the ELF header's section header fields are zeroed.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from aoti_shim.checks import CheckSettings, run_check
from aoti_shim.checks.elf.image import ElfImage
from elf_fixtures import compile_fixtures

_BINDS = {"STB_GLOBAL", "STB_WEAK", "STB_GNU_UNIQUE", "STB_LOOS"}


def sstrip(source: Path, target: Path) -> Path:
    """Drop the section headers and everything after the last PT_LOAD, as sstrip does."""
    data = bytearray(source.read_bytes())
    is64 = data[4] == 2
    end = "<" if data[5] == 1 else ">"
    if is64:
        phoff, shoff = struct.unpack_from(end + "QQ", data, 0x20)
        phentsize, phnum = struct.unpack_from(end + "HH", data, 0x36)
        phdr = struct.Struct(end + "IIQQQQQQ")
        fields = (0x28, "Q"), (0x3C, "H"), (0x3E, "H")  # e_shoff, e_shnum, e_shstrndx
    else:
        phoff, shoff = struct.unpack_from(end + "II", data, 0x1C)
        phentsize, phnum = struct.unpack_from(end + "HH", data, 0x2A)
        phdr = struct.Struct(end + "IIIIIIII")
        fields = (0x20, "I"), (0x30, "H"), (0x32, "H")
    last = 0
    for i in range(phnum):
        raw = phdr.unpack_from(data, phoff + i * phentsize)
        p_type, offset, filesz = (raw[0], raw[2], raw[5]) if is64 else (raw[0], raw[1], raw[4])
        if p_type == 1:  # PT_LOAD
            last = max(last, offset + filesz)
    assert 0 < last <= shoff, "section headers are expected after the loaded segments"
    del data[last:]
    for at, fmt in fields:
        struct.pack_into(end + fmt, data, at, 0)
    target.write_bytes(bytes(data))
    return target


def loader_truth(path: Path) -> dict[str, object]:
    """What pyelftools reads from the dynamic segment alone."""
    from elftools.elf.elffile import ELFFile

    exports: dict[str, tuple[str, str]] = {}
    imports: set[str] = set()
    needed: list[str] = []
    soname = build_id = None
    with open(path, "rb") as f:
        elf = ELFFile(f)
        assert elf.num_sections() == 0
        for seg in elf.iter_segments():
            if seg["p_type"] == "PT_DYNAMIC":
                for i, sym in enumerate(seg.iter_symbols()):
                    if i == 0 or not sym.name:
                        continue
                    bind, vis = sym["st_info"]["bind"], sym["st_other"]["visibility"]
                    if sym["st_shndx"] == "SHN_UNDEF":
                        if bind != "STB_LOCAL":
                            imports.add(sym.name)
                    elif bind in _BINDS and vis in ("STV_DEFAULT", "STV_PROTECTED"):
                        # pyelftools names the OS-specific values by their range.
                        kind = (
                            bind.replace("STB_LOOS", "STB_GNU_UNIQUE"),
                            sym["st_info"]["type"].replace("STT_LOOS", "STT_GNU_IFUNC"),
                        )
                        exports.setdefault(sym.name, kind)
                for tag in seg.iter_tags():
                    if tag.entry.d_tag == "DT_NEEDED":
                        needed.append(tag.needed)
                    elif tag.entry.d_tag == "DT_SONAME":
                        soname = tag.soname
            elif seg["p_type"] == "PT_NOTE":
                for note in seg.iter_notes():
                    if note["n_type"] == "NT_GNU_BUILD_ID" and build_id is None:
                        build_id = note["n_desc"]
    return {"exports": exports, "imports": imports, "needed": needed, "soname": soname, "build_id": build_id}


BIND = {1: "STB_GLOBAL", 2: "STB_WEAK", 10: "STB_GNU_UNIQUE"}
TYPE = {0: "STT_NOTYPE", 1: "STT_OBJECT", 2: "STT_FUNC", 6: "STT_TLS", 10: "STT_GNU_IFUNC"}


@pytest.fixture(scope="module")
def stripped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    root = tmp_path_factory.mktemp("sstrip")
    libs = compile_fixtures(root / "built")
    out = {}
    for name in ("kinds", "kinds_sysv", "versioned", "unique", "many", "shim", "tiny32", "many32_sysv"):
        if name in libs:
            out[name] = (libs[name], sstrip(libs[name], root / f"lib{name}_sstripped.so"))
    return out


@pytest.mark.parametrize(
    "name", ["kinds", "kinds_sysv", "versioned", "unique", "many", "shim", "tiny32", "many32_sysv"]
)
def test_no_section_headers_read_the_loaders_way(stripped, name: str) -> None:
    if name not in stripped:
        pytest.skip(f"{name} could not be built here")
    original, path = stripped[name]
    assert path.stat().st_size < original.stat().st_size
    truth = loader_truth(path)
    with ElfImage(path) as image:
        assert image.loader_view
        exports = image.exports()
        assert {n: (BIND[s.bind], TYPE[s.type]) for n, s in exports.items()} == truth["exports"]
        assert set(image.imports()) == truth["imports"]
        assert image.needed == truth["needed"] and image.soname == truth["soname"]
        assert image.build_id == truth["build_id"]
    # The same answers as with the section headers, lookups through the hash table included.
    with ElfImage(original) as full, ElfImage(path) as bare:
        assert dict(full.exports().items()) == dict(bare.exports().items())
        assert dict(full.imports().items()) == dict(bare.imports().items())
        for export in list(full.exports())[:50]:
            assert bare.find_export(export) == full.find_export(export)
        assert bare.find_export("no_such_symbol_anywhere") is None


def test_the_checker_takes_a_library_without_section_headers(checker_libs, tmp_path: Path) -> None:
    bare = sstrip(checker_libs["unprefixed_shim"], tmp_path / "libunprefixed_shim.so")
    report = run_check(CheckSettings(shims=(str(bare),), against=("torch",), prefix="myrt_"))
    rules = {(f.rule, f.symbol) for f in report.findings}
    # Both names read without section headers: each collides, and the one missed-header finding counts them.
    assert {("COLLISION", "aoti_torch_empty_strided"), ("COLLISION", "aoti_torch_get_data_ptr")} <= rules
    (missed,) = [f for f in report.findings if f.rule == "UNPREFIXED_EXPORT"]
    assert "all 2 of its shim names" in missed.message
