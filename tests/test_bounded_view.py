"""checks/bounded/view.py: every read checks its range against the view, numbers and names
decode as the Mach-O and PE formats write them, and only a regular, non-empty file is
mapped. The readers built on it: tests/test_macho_reader.py, tests/test_pe_reader.py."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from aoti_shim.checks.bounded.view import MAX_NAME_LEN, View, close, open_view, view_of_bytes
from aoti_shim.errors import InputError

DATA = struct.pack("<HIQ", 0x1234, 0x89ABCDEF, 0x0102030405060708) + struct.pack(">IQ", 0xCAFEBABE, 7)


def test_integers_read_in_their_byte_order() -> None:
    v = view_of_bytes(DATA, "f.dylib")
    assert (v.u8(0, "b"), v.u16(0, "h"), v.u32(2, "i"), v.u64(6, "q")) == (0x34, 0x1234, 0x89ABCDEF, 0x0102030405060708)
    assert (v.be32(14, "magic"), v.be64(18, "n")) == (0xCAFEBABE, 7)


@pytest.mark.parametrize(
    ("read", "said"),
    [
        (lambda v: v.u32(len(DATA) - 3, "the count"), "the count at offset 0x17 (+0x4) lies past the end (0x1a)"),
        (lambda v: v.u8(-1, "a byte"), "a byte at offset -0x1 (+0x1) lies past the end"),
        (lambda v: v.raw(0, len(DATA) + 1, "the table"), "the table at offset 0x0 (+0x1b) lies past the end"),
        (lambda v: v.sub(4, -1, "a slice"), "a slice at offset 0x4 (+-0x1) lies past the end"),
    ],
)
def test_a_read_past_the_end_is_one_error_naming_the_file_and_what(read: Callable[[View], object], said: str) -> None:
    with pytest.raises(InputError) as caught:
        read(view_of_bytes(DATA, "f.dylib"))
    assert str(caught.value).startswith(f"f.dylib: {said}"), caught.value


def test_a_sub_view_reads_relative_to_its_start_and_ends_at_its_end() -> None:
    sub = view_of_bytes(DATA, "f").sub(2, 4, "the word")
    assert (sub.start, sub.end, sub.size) == (2, 6, 4)
    assert sub.u32(0, "w") == 0x89ABCDEF and sub.raw(0, 4, "w") == DATA[2:6]
    with pytest.raises(InputError, match="past the end"):
        sub.u8(4, "beyond")


@pytest.mark.parametrize(
    ("data", "value"),
    [(b"\x00", 0), (b"\x7f", 127), (b"\xe5\x8e\x26", 624485), (b"\xff" * 9 + b"\x01", (1 << 64) - 1)],
)
def test_uleb_reads_up_to_64_bits_and_says_where_it_ends(data: bytes, value: int) -> None:
    assert view_of_bytes(b"\x00" + data + b"\x00", "f").uleb(1, "n") == (value, 1 + len(data))


@pytest.mark.parametrize(("data", "value"), [(b"\x02", 2), (b"\x7e", -2), (b"\xc0\xbb\x78", -123456)])
def test_sleb_reads_negative_numbers_by_their_sign_bit(data: bytes, value: int) -> None:
    assert view_of_bytes(data, "f").sleb(0, "n") == (value, len(data))


@pytest.mark.parametrize("data", [b"\xff" * 9 + b"\x02", b"\x80" * 10 + b"\x00", b"\x80" * 3])
def test_a_leb_longer_than_64_bits_or_past_the_end_is_refused(data: bytes) -> None:
    with pytest.raises(InputError, match="^f: (n: a LEB128 number at offset 0x0 is longer than 64 bits|n at offset)"):
        view_of_bytes(data, "f").uleb(0, "n")


def test_a_name_ends_at_its_nul_and_bad_bytes_stay_visible() -> None:
    v = view_of_bytes(b"_main\0lib\xff.so\0tail", "f")
    assert v.cstring(0, "name") == ("_main", 6)
    assert v.cstring(6, "name") == ("lib\\xff.so", 14)
    with pytest.raises(InputError, match="f: name at offset 0xe has no terminating NUL within bounds"):
        v.cstring(14, "name")
    # A caller's limit ends the search before the view does.
    with pytest.raises(InputError, match="no terminating NUL"):
        v.cstring(0, "name", limit=5)


def test_a_name_longer_than_the_limit_is_refused_even_with_a_nul_after_it() -> None:
    v = view_of_bytes(b"a" * (MAX_NAME_LEN + 1) + b"\0", "f")
    with pytest.raises(InputError, match="no terminating NUL"):
        v.cstring(0, "name")
    assert view_of_bytes(b"a" * MAX_NAME_LEN + b"\0", "f").cstring(0, "name")[1] == MAX_NAME_LEN + 1


def test_a_regular_file_is_mapped_and_anything_else_refused(tmp_path: Path) -> None:
    f = tmp_path / "lib.dylib"
    f.write_bytes(DATA)
    v = open_view(f, display="pkg/lib.dylib")
    assert (v.display, v.size, v.u16(0, "h")) == ("pkg/lib.dylib", len(DATA), 0x1234)
    close(v)
    close(view_of_bytes(b"x", "mem"))  # nothing to release
    (tmp_path / "empty").write_bytes(b"")
    os.mkfifo(tmp_path / "fifo")
    for name, said in (("empty", "empty file"), ("fifo", "not a regular file"), ("absent", "cannot open: ")):
        with pytest.raises(InputError, match=f"^{tmp_path / name}: {said}"):
            open_view(tmp_path / name)
    with pytest.raises(InputError, match=": not a regular file"):
        open_view(tmp_path)
