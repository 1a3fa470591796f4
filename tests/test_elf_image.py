"""The mmap ELF reader against pyelftools, on compiled, synthetic and libtorch files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.elf.layout import (
    STB_GLOBAL,
    STB_GNU_UNIQUE,
    STB_WEAK,
    STT_FUNC,
    STT_GNU_IFUNC,
    STT_OBJECT,
    STT_TLS,
    STV_PROTECTED,
    is_elf,
)
from aoti_shim.checks.elf.symbols import Symbol
from aoti_shim.errors import InputError
from elf_fixtures import SYNTH_SYMBOLS, compile_fixtures, nm_exports, pyelftools_truth, synth_elf


@pytest.fixture(scope="session")
def elf_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return compile_fixtures(tmp_path_factory.mktemp("elf-fixtures"))


@pytest.fixture(scope="session")
def synth_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("elf-synth")
    files = {}
    for elf64 in (True, False):
        for big in (False, True):
            name = f"synth{64 if elf64 else 32}{'be' if big else 'le'}"
            path = out / f"lib{name}.so"
            path.write_bytes(synth_elf(SYNTH_SYMBOLS, elf64=elf64, big_endian=big))
            files[name] = path
    return files


PYELFTOOLS_BINDS = {STB_GLOBAL: {"STB_GLOBAL"}, STB_WEAK: {"STB_WEAK"}, STB_GNU_UNIQUE: {"STB_GNU_UNIQUE", "STB_LOOS"}}
PYELFTOOLS_TYPES = {
    0: {"STT_NOTYPE"},
    STT_OBJECT: {"STT_OBJECT"},
    STT_FUNC: {"STT_FUNC"},
    STT_TLS: {"STT_TLS"},
    STT_GNU_IFUNC: {"STT_GNU_IFUNC", "STT_LOOS"},
}


def assert_matches_pyelftools(path: Path) -> None:
    truth = pyelftools_truth(path)
    with ElfImage(path) as image:
        exports, imports = image.exports(), image.imports()
        assert set(exports) == truth.exports
        assert set(imports) == truth.imports
        assert image.export_names() == truth.exports
        assert image.needed == truth.needed
        assert image.soname == truth.soname
        assert image.build_id == truth.build_id
        for name, (bind, kind) in truth.kinds.items():
            sym = exports[name]
            assert sym.is_export and sym.defined
            assert bind in PYELFTOOLS_BINDS[sym.bind], name
            assert kind in PYELFTOOLS_TYPES[sym.type], name
        # symbols() sees the same table entry by entry.
        listed = list(image.symbols())
        assert {s.name for s in listed if s.is_export and s.name} == truth.exports
        assert {s.name for s in listed if s.is_import} == truth.imports
    # A fresh image answers through .gnu.hash (or the scan without one), never differently.
    with ElfImage(path) as fresh:
        for name in truth.exports:
            found = fresh.find_export(name)
            assert found is not None and found.name == name and found.is_export, name
        for name in truth.imports | {"no_such_symbol", "aoti_torch_no_such_shim", ""}:
            if name not in truth.exports:
                assert fresh.find_export(name) is None, name


@pytest.mark.parametrize(
    "name",
    ["kinds", "kinds_sysv", "kinds_stripped", "versioned", "many", "shim", "model", "tiny", "unique"]
    + ["tiny32", "many32", "many32_sysv"],
)
def test_compiled_fixture_matches_pyelftools(elf_libs: dict[str, Path], name: str) -> None:
    if name not in elf_libs:
        pytest.skip(f"{name} could not be built here")
    assert_matches_pyelftools(elf_libs[name])


@pytest.mark.parametrize("name", ["synth64le", "synth64be", "synth32le", "synth32be"])
def test_every_class_and_byte_order_matches_pyelftools(synth_files: dict[str, Path], name: str) -> None:
    path = synth_files[name]
    assert_matches_pyelftools(path)
    with ElfImage(path) as image:
        assert image.elf_class == int(name[5:7])
        assert image.big_endian == name.endswith("be")
        exports = image.exports()
        assert "synth_hidden" not in exports
        assert exports["synth_protected"].visibility == STV_PROTECTED
        assert exports["synth_unique"].bind == STB_GNU_UNIQUE
        assert exports["synth_tls"].type == STT_TLS
        assert exports["synth_versioned"].versioned and not exports["aoti_torch_get_dim"].versioned
        assert image.imports()["synth_weak_import"].bind == STB_WEAK
        assert image.build_id == bytes(range(20)).hex()
    with ElfImage(path) as fresh:
        assert fresh.find_export("synth_versioned") == Symbol("synth_versioned", STB_GLOBAL, STT_FUNC, 0, True, True)
        assert fresh.find_export("synth_hidden") is None


def test_kinds_are_classified(elf_libs: dict[str, Path]) -> None:
    with ElfImage(elf_libs["kinds"]) as image:
        exports, imports = image.exports(), image.imports()
        assert exports["elf_global_func"].bind == STB_GLOBAL and exports["elf_global_func"].type == STT_FUNC
        assert exports["elf_global_object"].type == STT_OBJECT
        assert exports["elf_weak_func"].bind == STB_WEAK
        assert exports["elf_protected_func"].visibility == STV_PROTECTED
        assert exports["elf_tls_object"].type == STT_TLS
        assert exports["elf_ifunc"].type == STT_GNU_IFUNC
        assert "elf_hidden_func" not in exports
        assert "elf_café" in exports  # UTF-8 names decode
        assert {"elf_needed_func", "elf_needed_object", "elf_maybe_func"} <= set(imports)
        assert imports["elf_maybe_func"].bind == STB_WEAK
        assert imports["__tls_get_addr"].versioned
    with ElfImage(elf_libs["unique"]) as image:
        unique = [s for s in image.exports().values() if s.bind == STB_GNU_UNIQUE]
        assert unique and unique[0].bind_name == "UNIQUE"


def test_versioned_exports(elf_libs: dict[str, Path]) -> None:
    with ElfImage(elf_libs["versioned"]) as image:
        exports = image.exports()
        assert exports["elf_versioned"].versioned and exports["elf_versioned_plain"].versioned
    with ElfImage(elf_libs["versioned"]) as fresh:
        found = fresh.find_export("elf_versioned")
        assert found is not None and found.versioned


def test_sysv_only_library_falls_back_to_a_scan(elf_libs: dict[str, Path]) -> None:
    with ElfImage(elf_libs["kinds_sysv"]) as image:
        assert image._symbols.gnu_table() is None
        assert image.find_export("elf_global_func") is not None
        assert image.find_export("elf_needed_func") is None


def test_mapping_is_read_only_and_lazy(elf_libs: dict[str, Path]) -> None:
    with ElfImage(elf_libs["many"]) as image:
        exports = image.exports()
        assert len(exports) == 1024 and "elf_many_a0000" in exports
        assert exports.get("nope") is None
        with pytest.raises(TypeError):
            exports["x"] = None
        assert image.exports() is exports  # one scan per image
        assert len(image.imports()) >= 1024


def test_close_is_idempotent_and_reads_after_close_fail_cleanly(elf_libs: dict[str, Path]) -> None:
    image = ElfImage(elf_libs["tiny"])
    image.close()
    image.close()
    with pytest.raises(InputError):
        image.exports()


def test_dynamic_strings_are_read_once_and_handed_out_as_copies(torch_lib: Path) -> None:
    # A library's needs, soname and filtees are asked several times per check: .dynamic is
    # read once, each tag's names once; a caller changing its list changes no later answer.
    with ElfImage(torch_lib / "libtorch.so") as image:
        needed = image.needed
        assert "libtorch_cpu.so" in needed and image.soname == "libtorch.so"
        needed.clear()
        assert "libtorch_cpu.so" in image.needed and image.filtees == [] and image.runpath
        assert image._segment() is image._segment()  # the program headers parsed once
    image.close()
    with pytest.raises(InputError):
        image._segment()  # a closed image still fails


def test_is_elf(elf_libs: dict[str, Path], tmp_path: Path) -> None:
    assert is_elf(elf_libs["tiny"])
    (tmp_path / "x.so").write_bytes(b"MZ\0\0")
    assert not is_elf(tmp_path / "x.so")
    assert not is_elf(tmp_path / "missing.so")


def test_libtorch_cpu_matches_pyelftools_and_exports_329_plain_shims(torch_lib: Path) -> None:
    lib = torch_lib / "libtorch_cpu.so"
    truth = pyelftools_truth(lib)
    with ElfImage(lib) as image:
        exports, imports = image.exports(), image.imports()
        assert set(exports) == truth.exports and set(imports) == truth.imports
        shims = {n: exports[n] for n in exports if n.startswith("aoti_torch_")}
        # binutils counts them too; and torch 2.13.0 (the test extra's pin) has 329 (2.11 had 318).
        assert set(shims) == {n for n in nm_exports(lib) if n.startswith("aoti_torch_")}
        if "'2.13.0" in (lib.parent.parent / "version.py").read_text():
            assert len(shims) == 329
        assert shims and all(s.bind == STB_GLOBAL and s.type == STT_FUNC and not s.versioned for s in shims.values())
        assert not any(n.startswith("aoti_torch_") for n in imports)
    with ElfImage(lib) as fresh:
        # .gnu.hash lookups on a 75k-symbol table agree with the scan, and never scan.
        for name in sorted(shims)[:50]:
            assert fresh.find_export(name) == shims[name]
        assert fresh.find_export("myrt_aoti_torch_empty_strided") is None
        assert fresh._symbols.tables is None


def test_every_torch_library_opens(torch_lib: Path) -> None:
    count = 0
    for entry in sorted(os.scandir(torch_lib), key=lambda e: e.name):
        if entry.is_file() and is_elf(entry.path):
            with ElfImage(entry.path) as image:
                assert image.has_dynsym
                assert image.soname is not None and image.build_id
                # What each library exports, as binutils' nm reads it.
                assert set(image.exports()) == set(nm_exports(Path(entry.path))), entry.name
            count += 1
    assert count >= 5
