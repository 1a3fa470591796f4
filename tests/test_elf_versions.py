"""Symbol versions read by checks/elf/versions.py (struct code) agree with pyelftools, for a
library's definitions (default and hidden versions, its base version) and imports (the
version and the file each is needed from), read from its sections, the loader's way (no
section headers) and streamed from a wheel."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerSymSection

from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.elf.layout import STB_GLOBAL, STT_FUNC, STV_DEFAULT
from aoti_shim.checks.elf.symbols import Symbol
from aoti_shim.checks.elf.versions import DynamicEntry, Versions, entry_of_word
from aoti_shim.checks.inputs import collect as inputs
from compile_support import compile_shared


@pytest.fixture(scope="module")
def versioned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("versions")
    (out / "shim.map").write_text(
        "MYRT_1 { global: myrt_aoti_torch_a; myrt_aoti_torch_b; myrt_aoti_torch_c; local: *; };\nMYRT_2 { global: "
        "myrt_aoti_torch_c; } MYRT_1;\n"
    )
    (out / "shim.c").write_text(
        '#define E __attribute__((visibility("default")))\n'
        "E int myrt_aoti_torch_a(void) { return 1; }\nE int myrt_aoti_torch_b(void) { return 2; }\n"
        "E int c_new(void) { return 3; }\n"
        "E int c_old(void) { return 4; }\n"
        '__asm__(".symver c_new, myrt_aoti_torch_c@@MYRT_2");\n'
        '__asm__(".symver c_old, myrt_aoti_torch_c@MYRT_1");\n'
    )
    shim = out / "libshim.so"
    compile_shared(out / "shim.c", shim, ("-Wl,-soname,libshim.so", f"-Wl,--version-script={out / 'shim.map'}"))
    (out / "blob.c").write_text(
        "extern int myrt_aoti_torch_a(void); extern int myrt_aoti_torch_c(void);\n"
        '__attribute__((visibility("default"))) int run(void) { return myrt_aoti_torch_a() + myrt_aoti_torch_c(); }\n'
    )
    blob = out / "libblob.so"
    compile_shared(out / "blob.c", blob, (str(shim),))
    return {"shim": shim, "blob": blob}


def _pyelftools(path: Path) -> dict[tuple[str, bool], tuple[str | None, bool]]:
    """(name, defined) -> (version name, hidden) as pyelftools reads them."""
    with open(path, "rb") as f:
        elf = ELFFile(f)
        dynsym = elf.get_section_by_name(".dynsym")
        versym = next(s for s in elf.iter_sections() if isinstance(s, GNUVerSymSection))
        names: dict[int, str] = {}
        for sec in elf.iter_sections():
            if sec.name == ".gnu.version_d":
                for verdef, aux in sec.iter_versions():
                    names[verdef["vd_ndx"]] = next(aux).name
            if sec.name == ".gnu.version_r":
                for _, auxes in sec.iter_versions():
                    for aux in auxes:
                        names[aux["vna_other"]] = aux.name
        out: dict[tuple[str, bool], tuple[str | None, bool]] = {}
        for i, sym in enumerate(dynsym.iter_symbols()):
            if i == 0 or not sym.name:
                continue
            word = versym.get_symbol(i)["ndx"]
            ndx = word if isinstance(word, int) else {"VER_NDX_LOCAL": 0, "VER_NDX_GLOBAL": 1}[word]
            hidden = bool(ndx & 0x8000) if isinstance(ndx, int) else False
            ndx &= 0x7FFF
            defined = sym["st_shndx"] != "SHN_UNDEF"
            out.setdefault(
                (sym.name, defined), (names.get(ndx) if ndx >= 2 or (defined and ndx in names) else None, hidden)
            )
        return out


def _ours(image: ElfImage) -> dict[tuple[str, bool], tuple[str | None, bool]]:
    out: dict[tuple[str, bool], tuple[str | None, bool]] = {}
    for e in image.dynamic_entries():
        if e.symbol.name:
            out.setdefault((e.symbol.name, e.symbol.defined), (e.version, e.hidden))
    return out


@pytest.mark.parametrize("lib", ["shim", "blob"])
def test_versions_match_pyelftools(versioned: dict[str, Path], lib: str) -> None:
    with ElfImage(versioned[lib]) as image:
        assert _ours(image) == _pyelftools(versioned[lib])


def test_the_fixture_has_what_it_is_for(versioned: dict[str, Path]) -> None:
    with ElfImage(versioned["shim"]) as image:
        c = image.find_definitions("myrt_aoti_torch_c")
        assert sorted((e.version, e.hidden) for e in c) == [("MYRT_1", True), ("MYRT_2", False)]
        assert {"libshim.so", "MYRT_1", "MYRT_2"} <= set(image.versions().defined.values())
    with ElfImage(versioned["blob"]) as image:
        needs = {e.symbol.name: (e.version, e.version_file) for e in image.dynamic_entries() if e.symbol.is_import}
        assert needs["myrt_aoti_torch_a"] == ("MYRT_1", "libshim.so")
        assert needs["myrt_aoti_torch_c"] == ("MYRT_2", "libshim.so")


@pytest.mark.parametrize("lib", ["shim", "blob"])
def test_the_loaders_view_and_a_streamed_member_read_the_same_versions(
    versioned: dict[str, Path], lib: str, tmp_path: Path
) -> None:
    data = versioned[lib].read_bytes()
    # No section headers: what sstrip leaves, read from PT_DYNAMIC's DT_VERSYM/DT_VERDEF/DT_VERNEED.
    stripped = bytearray(data)
    stripped[0x28:0x30] = bytes(8)  # e_shoff
    stripped[0x3C:0x40] = bytes(4)  # e_shnum, e_shstrndx
    (tmp_path / "stripped.so").write_bytes(bytes(stripped))
    with ElfImage(tmp_path / "stripped.so") as image, ElfImage(versioned[lib]) as full:
        assert image.loader_view and _ours(image) == _ours(full)
    wheel = tmp_path / "v-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(versioned[lib], "v/lib.so")
    with inputs.Workspace() as ws, inputs.open_wheel(str(wheel)) as zf, ElfImage(versioned[lib]) as full:
        _, art = inputs.read_member(zf, zf.getinfo("v/lib.so"), "w!v/lib.so", ws, inputs.DEFAULT_MEMBER_LIMIT)
        assert art is not None and art.image is not None
        assert _ours(art.image) == _ours(full)


# -- a .gnu.version word, as a function --------------------------------------------------------

_VERSIONS = Versions({1: "libshim.so", 2: "MYRT_1", 3: "MYRT_2"}, frozenset({1}), {4: ("GLIBC_2.34", "libc.so.6")})


def _symbol(defined: bool) -> Symbol:
    return Symbol("f", STB_GLOBAL, STT_FUNC, STV_DEFAULT, defined, True)


def test_a_definitions_word_names_its_version_and_its_hidden_bit() -> None:
    default = entry_of_word(_symbol(True), 7, 3, _VERSIONS)
    assert (default.index, default.version, default.version_index, default.hidden) == (7, "MYRT_2", 3, False)
    hidden = entry_of_word(_symbol(True), 7, 0x8002, _VERSIONS)
    assert (hidden.version, hidden.version_index, hidden.hidden) == ("MYRT_1", 2, True)
    # Index 1 is global, unversioned, unless the library's base version is defined there.
    assert entry_of_word(_symbol(True), 7, 1, _VERSIONS).version == "libshim.so"
    assert entry_of_word(_symbol(True), 7, 1, Versions({}, frozenset(), {})).version is None
    assert entry_of_word(_symbol(True), 7, 0, _VERSIONS).version is None


def test_an_imports_word_names_the_version_and_the_file_it_is_needed_from() -> None:
    need = entry_of_word(_symbol(False), 9, 4, _VERSIONS)
    assert (need.version, need.version_file) == ("GLIBC_2.34", "libc.so.6")
    # An index below 2, or one no entry of .gnu.version_r names: no version asked.
    assert entry_of_word(_symbol(False), 9, 1, _VERSIONS).version is None
    unknown = entry_of_word(_symbol(False), 9, 5, _VERSIONS)
    assert (unknown.version, unknown.version_file) == (None, None)


def test_a_known_index_is_one_defined_or_needed() -> None:
    assert [i for i in range(6) if _VERSIONS.known(i)] == [1, 2, 3, 4]


def test_dynamic_entrys_written_out_init_is_the_dataclass_one() -> None:
    import dataclasses
    import inspect

    fields = dataclasses.fields(DynamicEntry)
    params = list(inspect.signature(DynamicEntry.__init__).parameters.values())[1:]
    assert [(p.name, p.default) for p in params] == [
        (f.name, inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default) for f in fields
    ]
    e = DynamicEntry(_symbol(False), 9, 4, "GLIBC_2.34", "libc.so.6")
    assert (e.symbol, e.index, e.versym, e.version, e.version_file) == (_symbol(False), 9, 4, "GLIBC_2.34", "libc.so.6")
    assert e == dataclasses.replace(e) and DynamicEntry(_symbol(False), 9, 4, None).version_file is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.index = 1  # type: ignore[misc]  # the point: it is frozen
