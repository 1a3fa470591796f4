"""checks/elf/symbols.py: the packed form round-trips every binding, type and visibility,
a SymbolTable answers without making Symbols, and a name defined in several versions
keeps an entry for each."""

from __future__ import annotations

from array import array
from pathlib import Path

import pytest

from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.elf.layout import STB_GLOBAL, STB_GNU_UNIQUE, STB_LOCAL, STB_WEAK, STT_FUNC, STT_OBJECT, STT_TLS
from aoti_shim.checks.elf.symbols import INDEX_SHIFT, Symbol, SymbolTable, kind_text, pack_symbol, unpack_symbol
from aoti_shim.checks.elf.versions import NO_VERSIONS
from compile_support import compile_shared
from elf_fixtures import SOURCES


def test_pack_and_unpack_round_trip() -> None:
    for bind in (STB_LOCAL, STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE):
        for type in range(16):
            for visibility in range(4):
                for defined in (False, True):
                    for versioned in (False, True):
                        symbol = Symbol("n", bind, type, visibility, defined, versioned)
                        assert unpack_symbol("n", symbol.pack()) == symbol
                        assert symbol.pack() == pack_symbol(bind, type, visibility, defined, versioned)
    assert kind_text(pack_symbol(STB_WEAK, STT_OBJECT, 0, True, False)) == "WEAK OBJECT"
    assert kind_text(pack_symbol(STB_GNU_UNIQUE, STT_TLS, 0, True, False)) == "UNIQUE TLS"
    assert kind_text(pack_symbol(7, 9, 0, True, False)) == "7 9"


def test_a_table_over_packed_ints() -> None:
    packed = {
        "f": pack_symbol(STB_GLOBAL, STT_FUNC, 0, True, False) | 1 << INDEX_SHIFT,
        "o": pack_symbol(STB_WEAK, STT_OBJECT, 0, True, False) | 2 << INDEX_SHIFT,
    }
    versym = array("H", [0, 1, 2])  # "o" has version index 2: versioned
    table = SymbolTable(packed, versym)
    assert len(table) == 2 and "f" in table and "g" not in table and list(table) == ["f", "o"]
    assert not table["f"].versioned and table["o"].versioned and table.has_versym
    assert table.kinds(["o", "f"]) == ["WEAK OBJECT", "GLOBAL FUNC"] and table.kind("f") == "GLOBAL FUNC"
    assert table.entry("o", NO_VERSIONS).index == 2 and table.entries("g", NO_VERSIONS) == []
    assert dict(table.packed_items()) == packed and repr(table) == "SymbolTable(2 symbols)"


def test_every_version_of_a_name_is_an_entry(tmp_path: Path) -> None:
    lib = tmp_path / "libversioned.so"
    compile_shared(SOURCES / "versioned.c", lib, ("-Wl,--version-script=" + str(SOURCES / "versioned.map"),))
    with ElfImage(lib) as image:
        exports = image.exports()
        entries = exports.entries("elf_versioned", image.versions())
        assert sorted((e.version, e.hidden) for e in entries) == [("ELF_1.0", True), ("ELF_2.0", False)]
        assert exports["elf_versioned"].versioned


def test_symbols_written_out_init_is_the_dataclass_one() -> None:
    # Symbol's __init__ is written out for speed: its parameters must stay its fields, and
    # what it makes must be the frozen record the generated one made.
    import dataclasses
    import inspect

    fields = [f.name for f in dataclasses.fields(Symbol)]
    assert list(inspect.signature(Symbol.__init__).parameters)[1:] == fields
    sym = Symbol("f", STB_WEAK, STT_FUNC, 3, True, False)
    assert [getattr(sym, name) for name in fields] == ["f", STB_WEAK, STT_FUNC, 3, True, False]
    assert sym == Symbol("f", STB_WEAK, STT_FUNC, 3, True, False) and hash(sym) == hash(dataclasses.replace(sym))
    assert sym != dataclasses.replace(sym, versioned=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sym.name = "g"  # type: ignore[misc]  # the point: it is frozen


def test_entries_of_is_entry_of_each_name() -> None:
    versym = array("H", [0, 1, 2, 0x8003])
    table = SymbolTable(
        {"a": pack_symbol(STB_GLOBAL, STT_FUNC, 0, True, False) | 1 << INDEX_SHIFT,
         "b": pack_symbol(STB_GLOBAL, STT_OBJECT, 0, False, False) | 2 << INDEX_SHIFT,
         "c": pack_symbol(STB_WEAK, STT_FUNC, 0, True, False) | 3 << INDEX_SHIFT},
        versym,
    )
    names = ["c", "a", "b"]
    assert table.entries_of(names, NO_VERSIONS) == [table.entry(n, NO_VERSIONS) for n in names]
    assert [e.symbol.versioned for e in table.entries_of(names, NO_VERSIONS)] == [True, False, True]
