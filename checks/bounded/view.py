"""A file's bytes behind reads that check every offset, so a hostile file ends in one InputError.

The Mach-O and PE readers parse files that anyone can submit. Every integer, string and
table they read goes through :class:`View`, which refuses a range past the file's end
(or past a caller's own limit) with an :class:`InputError` naming the file and what was
being read. Nothing here loops over input-controlled counts: callers bound their loops.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from dataclasses import dataclass

from aoti_shim.errors import InputError

# A Mach-O slice's or a DLL's tables are a few MiB at most; the whole file is mapped, not
# read, so this only refuses what no linker writes (and keeps a slice offset in range).
MAX_FILE_SIZE = 8 << 30
# The longest name either reader accepts: torch's longest symbol is about 2 KB.
MAX_NAME_LEN = 64 << 10

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_BE32 = struct.Struct(">I")
_BE64 = struct.Struct(">Q")


@dataclass(frozen=True)
class View:
    """A window ``[start, end)`` of a file's bytes; offsets given to reads are relative to ``start``."""

    display: str
    data: bytes | mmap.mmap
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start

    def fail(self, why: str) -> InputError:
        return InputError(f"{self.display}: {why}")

    def check(self, offset: int, length: int, what: str) -> int:
        """The absolute offset of ``length`` bytes at ``offset``, or an InputError."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise self.fail(f"{what} at offset {offset:#x} (+{length:#x}) lies past the end ({self.size:#x})")
        return self.start + offset

    def raw(self, offset: int, length: int, what: str) -> bytes:
        at = self.check(offset, length, what)
        return bytes(self.data[at : at + length])

    def sub(self, offset: int, length: int, what: str) -> View:
        at = self.check(offset, length, what)
        return View(self.display, self.data, at, at + length)

    def u8(self, offset: int, what: str) -> int:
        return self.data[self.check(offset, 1, what)]

    def u16(self, offset: int, what: str) -> int:
        return int(_U16.unpack_from(self.data, self.check(offset, 2, what))[0])

    def u32(self, offset: int, what: str) -> int:
        return int(_U32.unpack_from(self.data, self.check(offset, 4, what))[0])

    def u64(self, offset: int, what: str) -> int:
        return int(_U64.unpack_from(self.data, self.check(offset, 8, what))[0])

    def be32(self, offset: int, what: str) -> int:
        return int(_BE32.unpack_from(self.data, self.check(offset, 4, what))[0])

    def be64(self, offset: int, what: str) -> int:
        return int(_BE64.unpack_from(self.data, self.check(offset, 8, what))[0])

    def uleb(self, offset: int, what: str) -> tuple[int, int]:
        """An unsigned LEB128 at ``offset``: (value, offset after it). At most 10 bytes (64 bits)."""
        value = shift = 0
        for i in range(10):
            byte = self.u8(offset + i, what)
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if value >> 64:
                    break
                return value, offset + i + 1
            shift += 7
        raise self.fail(f"{what}: a LEB128 number at offset {offset:#x} is longer than 64 bits")

    def sleb(self, offset: int, what: str) -> tuple[int, int]:
        """A signed LEB128 at ``offset``: (value, offset after it)."""
        value = shift = 0
        for i in range(10):
            byte = self.u8(offset + i, what)
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                if byte & 0x40:
                    value -= 1 << shift
                return value, offset + i + 1
        raise self.fail(f"{what}: a LEB128 number at offset {offset:#x} is longer than 64 bits")

    def cstring(self, offset: int, what: str, limit: int | None = None) -> tuple[str, int]:
        """A NUL-terminated name at ``offset`` that ends before ``limit`` (default: the view's end):
        (name, offset after the NUL). Names are decoded as UTF-8 with escapes for bad bytes."""
        stop = self.size if limit is None else min(limit, self.size)
        self.check(offset, 0, what)
        at = self.start + offset
        window_end = self.start + min(stop, offset + MAX_NAME_LEN + 1)
        nul = self.data.find(b"\0", at, window_end)
        if nul < 0:
            raise self.fail(f"{what} at offset {offset:#x} has no terminating NUL within bounds")
        name = bytes(self.data[at:nul]).decode("utf-8", "backslashreplace")
        return str(name), int(nul) - self.start + 1


def open_view(path: str | os.PathLike[str], display: str | None = None) -> View:
    """Map a regular file read-only; anything else (a FIFO, a device, a directory) is refused."""
    shown = display if display is not None else os.fspath(path)
    try:
        # O_NONBLOCK: a FIFO must not hang the reader before fstat refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise InputError(f"{shown}: cannot open: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{shown}: not a regular file")
        if st.st_size == 0:
            raise InputError(f"{shown}: empty file")
        if st.st_size > MAX_FILE_SIZE:
            raise InputError(f"{shown}: larger than {MAX_FILE_SIZE >> 30} GiB")
        try:
            data = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError, OverflowError) as e:
            raise InputError(f"{shown}: cannot map: {e}") from None
    finally:
        os.close(fd)
    return View(shown, data, 0, len(data))


def close(view: View) -> None:
    """Unmap a view's file (a view of bytes in memory has nothing to release)."""
    if isinstance(view.data, mmap.mmap):
        view.data.close()


def view_of_bytes(data: bytes, display: str) -> View:
    """A view of bytes in memory (tests, a wheel member read whole)."""
    return View(display, data, 0, len(data))
