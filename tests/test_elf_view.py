"""checks/elf/view.py: every read of the bounded byte view is checked against the file's
size first, and anything but a regular ELF-sized file is refused in one InputError line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aoti_shim.checks.elf.view import READ_WHOLE_UP_TO, RELEASE_AFTER, ByteView
from aoti_shim.errors import InputError
from compile_support import compile_shared
from elf_fixtures import SOURCES


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("view") / "libtiny.so"
    compile_shared(SOURCES / "tiny.c", target)
    return target


def test_reads_what_the_file_holds(tiny: Path) -> None:
    data = tiny.read_bytes()
    view = ByteView.open(str(tiny), "tiny")
    try:
        assert view.size == len(data) and not view.sparse
        assert view.bytes(0, 4, "magic") == b"\x7fELF"
        assert view.bytes(len(data) - 16, 16, "tail") == data[-16:]
        view.release(0, view.size)  # pages given back fault in again from the page cache
        assert view.bytes(0, 64, "header") == data[:64]
    finally:
        view.close()


@pytest.mark.parametrize(("offset", "length"), [(-1, 4), (0, -1), (0, 1 << 40), (1 << 40, 0)])
def test_a_range_outside_the_file_names_the_file_and_the_table(tiny: Path, offset: int, length: int) -> None:
    view = ByteView.open(str(tiny), "shown/libtiny.so")
    try:
        with pytest.raises(InputError, match=r"^shown/libtiny\.so: \.dynsym lies outside the file"):
            view.bytes(offset, length, ".dynsym")
    finally:
        view.close()


def test_a_read_after_close_is_an_input_error(tiny: Path) -> None:
    view = ByteView.open(str(tiny), "tiny")
    view.close()
    view.close()  # twice is harmless
    with pytest.raises(InputError, match="read after close"):
        view.bytes(0, 4, "magic")


def test_bytes_over_a_view_of_kept_parts(tiny: Path) -> None:
    data = tiny.read_bytes()[:256]
    view = ByteView("member.so", data, len(data), False)
    assert view.bytes(16, 8, "part") == data[16:24]
    view.release(0, len(data))  # not a file mapping: nothing to give back
    with pytest.raises(InputError, match="lies outside the file"):
        view.bytes(250, 8, "part")
    assert RELEASE_AFTER == 1 << 20


def test_what_is_not_a_regular_elf_sized_file_is_refused(tmp_path: Path) -> None:
    short = tmp_path / "short.so"
    short.write_bytes(b"\x7fELF" + bytes(8))
    with pytest.raises(InputError, match=r"short\.so: not an ELF file \(too short\)"):
        ByteView.open(str(short), str(short))
    with pytest.raises(InputError, match="not a regular file"):
        ByteView.open(str(tmp_path), "folder")
    fifo = tmp_path / "pipe.so"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):  # O_NONBLOCK: never hangs
        ByteView.open(str(fifo), "pipe")
    with pytest.raises(InputError, match="cannot open"):
        ByteView.open(str(tmp_path / "missing.so"), "missing")


def test_a_small_file_is_read_whole_and_a_big_one_mapped(tmp_path: Path, tiny: Path) -> None:
    # Up to READ_WHOLE_UP_TO a file is one read into bytes (no map, no page faults to unmap);
    # past it, a read-only map. Either view reads the same bytes.
    small = tiny.read_bytes()
    assert len(small) <= READ_WHOLE_UP_TO
    big = tmp_path / "big.so"
    big.write_bytes(small + bytes(READ_WHOLE_UP_TO))
    for path, data, mapped in ((tiny, small, False), (big, big.read_bytes(), True)):
        view = ByteView.open(str(path), path.name)
        try:
            assert isinstance(view.data, bytes) is not mapped and view.size == len(data)
            assert view.bytes(0, 64, "header") == data[:64] and view.bytes(len(data) - 8, 8, "tail") == data[-8:]
            view.release(0, view.size)  # a no-op on bytes
            assert view.bytes(0, 4, "magic") == b"\x7fELF"
        finally:
            view.close()
