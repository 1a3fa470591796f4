"""checks/elf/strings.py: names cut from a string table agree with pyelftools, and the caps
on one name's length and on all names' bytes refuse a hostile table early."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoti_shim.checks.elf import strings
from aoti_shim.checks.elf.layout import SHT_STRTAB, Section
from aoti_shim.checks.elf.strings import cut_names, name_at, string_table
from aoti_shim.checks.elf.view import ByteView
from aoti_shim.errors import InputError
from compile_support import compile_shared
from elf_fixtures import SOURCES


@pytest.fixture(scope="module")
def kinds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("strings") / "libkinds.so"
    compile_shared(SOURCES / "kinds.c", target)
    return target


def _dynstr_and_names(path: Path) -> tuple[Section, dict[int, str]]:
    from elftools.elf.elffile import ELFFile

    with path.open("rb") as f:
        elf = ELFFile(f)
        dynsym = elf.get_section_by_name(".dynsym")
        dynstr = elf.get_section_by_name(".dynstr")
        sec = Section(SHT_STRTAB, dynstr["sh_offset"], dynstr["sh_size"], 0, 0)
        return sec, {s["st_name"]: s.name for s in dynsym.iter_symbols() if s["st_name"]}


def test_names_agree_with_pyelftools(kinds: Path) -> None:
    strtab, truth = _dynstr_and_names(kinds)
    view = ByteView.open(str(kinds), "kinds")
    try:
        assert {off: name_at(view, strtab, off) for off in truth} == truth
        table = string_table(view, strtab)
        # kinds.c exports elf_café: the table is not ASCII, so it stays bytes.
        assert isinstance(table, bytes) and "elf_café" in truth.values()
        cut, used = cut_names(view, table, list(truth), 0)
        assert cut == list(truth.values()) and used == sum(len(n.encode()) for n in truth.values())
        with pytest.raises(InputError, match="past its string table"):
            name_at(view, strtab, strtab.size)
    finally:
        view.close()


def test_an_ascii_table_is_decoded_once_and_sliced() -> None:
    data = b"\0alpha\0beta\0"
    view = ByteView("t", data, len(data), False)
    table = string_table(view, Section(SHT_STRTAB, 0, len(data), 0, 0))
    assert table == "\0alpha\0beta\0"
    assert cut_names(view, table, [1, 7, 3], 0) == (["alpha", "beta", "pha"], 12)


def test_a_table_without_a_final_nul_is_refused() -> None:
    data = b"\0alpha\0beta"
    view = ByteView("t", data, len(data), False)
    with pytest.raises(InputError, match="does not end in a NUL byte"):
        string_table(view, Section(SHT_STRTAB, 0, len(data), 0, 0))


def test_the_caps_refuse_long_and_many_names(monkeypatch: pytest.MonkeyPatch) -> None:
    view = ByteView("t", b"", 0, False)
    monkeypatch.setattr(strings, "MAX_NAME_LEN", 4)
    with pytest.raises(InputError, match="longer than"):
        cut_names(view, "\0abcdefgh\0", [1], 0)
    monkeypatch.setattr(strings, "MAX_NAME_LEN", 64)
    monkeypatch.setattr(strings, "MAX_NAME_BYTES", 10)
    # One 8-byte name pointed at twice: 16 bytes of names, over the cap.
    with pytest.raises(InputError, match="add up to more than"):
        cut_names(view, "\0abcdefgh\0", [1, 1], 0)
    assert cut_names(view, "\0abcdefgh\0", [1], 0) == (["abcdefgh"], 8)
