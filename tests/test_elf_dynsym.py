"""checks/elf/dynsym.py: the .dynsym columns, the tables built from them, the symbols in
table order and one symbol by index agree with pyelftools, and a lookup through .gnu.hash
finds what the scan finds."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoti_shim.checks.elf.dynsym import DynamicSymbols
from aoti_shim.checks.elf.sections import SectionTable, elf_header, section_headers
from aoti_shim.checks.elf.view import ByteView
from aoti_shim.errors import InputError
from compile_support import compile_shared
from elf_fixtures import SOURCES, SYNTH_SYMBOLS, SynthSymbol, pyelftools_truth, synth_elf


def _symbols(view: ByteView) -> DynamicSymbols:
    hdr = elf_header(view)
    return DynamicSymbols(view, hdr.lay, SectionTable(view, hdr.lay, section_headers(view, hdr)[0]))


@pytest.fixture(scope="module")
def kinds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("dynsym") / "libkinds.so"
    compile_shared(SOURCES / "kinds.c", target)
    return target


def test_tables_agree_with_pyelftools(kinds: Path) -> None:
    truth = pyelftools_truth(kinds)
    view = ByteView.open(str(kinds), "kinds")
    try:
        symbols = _symbols(view)
        exports, imports = symbols.build_tables()
        assert set(exports) == truth.exports and set(imports) == truth.imports
        assert symbols.build_tables() is symbols.tables  # built once
        every = list(symbols.symbols())
        assert len(every) == symbols.count() - 1 == len(symbols.keys())
        assert [symbols.symbol_at(i) for i in range(1, symbols.count())] == every
        names, infos = symbols.columns()
        assert len(names) == len(infos) == len(every)
        fresh = DynamicSymbols(view, symbols.lay, symbols.table)
        chunks = list(fresh.export_name_chunks(3))
        assert max(map(len, chunks)) == 3 and {n for c in chunks for n in c} == truth.exports
        assert fresh.tables is None  # scanned in chunks, no table kept
    finally:
        view.close()


def test_a_lookup_through_gnu_hash_finds_what_the_scan_finds(kinds: Path) -> None:
    view = ByteView.open(str(kinds), "kinds")
    try:
        symbols = _symbols(view)
        table = symbols.gnu_table()
        assert table is not None
        index = {s.name: i for i, s in enumerate(symbols.symbols(), 1)}
        exports = symbols.build_tables()[0]
        for name in exports:
            assert [(i, s.name) for i, s in symbols.exports_named(table, name)] == [(index[name], name)]
        assert list(symbols.exports_named(table, "elf_needed_func")) == []  # an import, not an export
        # A function defined here is taken by glibc's lookup; an undefined import has value 0.
        assert symbols.loader_takes(index["elf_global_func"])
        assert not symbols.loader_takes(index["elf_needed_func"])
    finally:
        view.close()


def test_tables_holding_picks_by_needle_and_prefix() -> None:
    data = synth_elf(SYNTH_SYMBOLS)
    view = ByteView("synth", data, len(data), False)
    symbols = _symbols(view)
    exports, imports = symbols.tables_holding(("aoti_torch_",), ("synth_many_1",))
    assert set(exports) == {"aoti_torch_empty_strided", "aoti_torch_get_dim"} | {
        f"synth_many_{i}" for i in range(40) if str(i).startswith("1")
    }
    assert set(imports) == {"myrt_aoti_torch_get_dim"}
    assert symbols.tables is None  # a partial table is not kept
    assert symbols.versym() is not None and symbols.build_tables()[0]["synth_versioned"].versioned


@pytest.mark.parametrize("count", [1, len(SYNTH_SYMBOLS)])
def test_tables_holding_refuses_a_name_offset_past_dynstr(count: int) -> None:
    # The picking gathers a mask over .dynstr at every name offset: one past it is an
    # InputError, in the one-symbol table (no gather) as in a longer one.
    clean = synth_elf(SYNTH_SYMBOLS[:count])
    sym = _symbols(ByteView("synth", clean, len(clean), False)).table.dynsym()[0]
    data = bytearray(clean)
    last = sym.offset + sym.size - sym.entsize
    data[last : last + 4] = (0xFFFFFF00).to_bytes(4, "little")
    view = ByteView("synth", bytes(data), len(data), False)
    with pytest.raises(InputError, match=r"a symbol name offset is past .dynstr"):
        _symbols(view).tables_holding(("aoti_",), ("synth_",))
    fine = _symbols(ByteView("synth", clean, len(clean), False))
    exports, _ = fine.tables_holding(("aoti_",), ("synth_",))
    assert set(exports) == {n for n in fine.build_tables()[0] if n.startswith(("aoti_", "synth_"))} != set()


def test_tables_holding_reads_a_non_ascii_table_as_the_whole_table_does() -> None:
    # The search runs over the table's bytes where it lies; only picked names are decoded,
    # as the whole table's reader decodes each (UTF-8, undecodable bytes escaped).
    names = ["aoti_torch_é", "torch_ü_x", "caf\u00e9", "__cxa_ö", "plain"]
    data = synth_elf([SynthSymbol(n) for n in names])
    symbols = _symbols(ByteView("synth", data, len(data), False))
    exports, _ = symbols.tables_holding(("aoti_", "torch_"), ("__cxa_",))
    whole = _symbols(ByteView("synth", data, len(data), False)).build_tables()[0]
    assert set(exports) == {n for n in whole if "aoti_" in n or "torch_" in n or n.startswith("__cxa_")}
    assert set(exports) == {"aoti_torch_é", "torch_ü_x", "__cxa_ö"}


def test_tables_holding_finds_tail_merged_names_as_the_whole_table_does(tmp_path: Path) -> None:
    """ld stores a name that ends another one inside it (``cudaFoo`` in ``my_cudaFoo``): a
    name's offset need not follow a NUL. Every needle and prefix the scan searches for, and
    some that cut names in half, pick exactly what filtering the whole tables picks."""
    from aoti_shim.checks.scan.judge import _SEARCHED_CONTAINS, _SEARCHED_STARTS

    names = [
        "cudaFoo",
        "my_cudaFoo",
        "__cxa_thing",
        "pre__cxa_thing",
        "aoti_torch_x",
        "myrt_aoti_torch_x",
        "_ZTVN10__cxxabiv117__class_type_infoX",
        "torch_y",
        "x_Znwm_y",
        "Znwm",
    ]
    source = tmp_path / "tails.c"
    source.write_text(
        "".join(f"void {n}(void) {{}}\nextern void u{n}(void);\n" for n in names)
        + "void use(void) {"
        + "".join(f"u{n}();" for n in names)
        + "}\n"
    )
    target = tmp_path / "libtails.so"
    compile_shared(source, target)
    data = target.read_bytes()
    view = ByteView(str(target), data, len(data), False)
    symbols = _symbols(view)
    exports, imports = symbols.build_tables()
    strtab = symbols.table.dynsym()[1]
    dynstr = data[strtab.offset : strtab.offset + strtab.size]
    offsets, _ = symbols.columns()
    assert any(o and dynstr[o - 1] != 0 for o in offsets), "ld merged no tails: the test proves nothing"
    cases = [(_SEARCHED_CONTAINS, _SEARCHED_STARTS), (("aoti_",), ()), ((), ("cuda", "Znwm")), (("_Zn",), ("my_",))]
    for contains, starts in cases:

        got_exports, got_imports = _symbols(view).tables_holding(contains, starts)
        for got, table in ((got_exports, exports), (got_imports, imports)):
            wanted = {n for n in table if any(c in n for c in contains) or n.startswith(starts)}
            assert set(got) == wanted, (contains, starts)


def test_the_scans_search_is_a_superset_of_what_it_asks() -> None:
    """The judge searches fewer, shorter needles than the names it reads (and filters
    again): each asked prefix starts with a searched one or holds a searched needle."""
    from aoti_shim.checks.scan import judge

    assert set(judge._ASKED_CONTAINS) <= set(judge._SEARCHED_CONTAINS)
    for start in judge._ASKED_STARTS:
        assert start.startswith(judge._SEARCHED_STARTS) or any(c in start for c in judge._SEARCHED_CONTAINS), start
