"""A wheel member's bytes, inflated straight from the wheel's file.

``zipfile.ZipFile.open`` costs a dozen small reads and objects per member, and a
4 KiB read per 4 KiB of compressed data: on torch's 12k-member wheel that is a large
part of a check. :func:`open_member` reads the member's local header and its
compressed bytes with ``os.pread`` (no shared file position, no lock), in large
chunks, and inflates them as zipfile's reader does: the same bytes, the same end
(``Bad CRC-32`` when the member's end is reached with a wrong CRC, ``EOFError`` when
the file ends first). Anything it does not take (another compression, encryption, a
local header that differs from the central one) goes to ``zipfile`` itself, which
says what is wrong in its own words.
"""

from __future__ import annotations

import os
import struct
import zipfile
import zlib
from typing import IO

# Compressed bytes read at once: large enough that the per-read cost vanishes, small
# enough that zlib's unconsumed tail (copied at each bounded call) stays cheap.
CHUNK = 256 << 10
# A skip (seek forward) inflates and drops at most this much at once.
SKIP = 4 << 20
_HEADER = struct.Struct("<4s2B4HL2L2H")
# Local header flags zipfile refuses or needs a password for: encrypted (0), compressed
# patched data (5), strong encryption (6).
_REFUSED_FLAGS = 0x1 | 0x20 | 0x40
_UTF8_NAME = 0x800
# Bytes read with the header, so a member's first bytes usually come in the same read.
_HEAD_READ = 30 + 512


class MemberStream:
    """One stored or deflated member, read forward: ``read(n)``, ``seek(offset)`` (forward
    only, as a stream is read), ``tell()``; a context manager like zipfile's."""

    def __init__(self, fd: int, info: zipfile.ZipInfo, start: int, first: bytes) -> None:
        self._fd = fd
        self._name = info.filename
        self._at = start + len(first)  # the next compressed byte to read from the file
        self._compress_left = info.compress_size - len(first)
        self._pending = first  # compressed bytes read and not yet given to zlib
        self._left = info.file_size
        self._pos = 0
        self._crc = 0
        self._expected_crc = info.CRC
        self._eof = False
        self._inflater = zlib.decompressobj(-zlib.MAX_WBITS) if info.compress_type == zipfile.ZIP_DEFLATED else None

    def __enter__(self) -> MemberStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._pending = b""
        self._inflater = None
        self._eof = True

    def tell(self) -> int:
        return self._pos

    def _compressed(self) -> bytes:
        """The next compressed bytes, up to CHUNK; b"" when the member's are spent."""
        if self._pending:
            data, self._pending = self._pending, b""
            return data
        if self._compress_left <= 0:
            return b""
        data = os.pread(self._fd, min(CHUNK, self._compress_left), self._at)
        if not data:
            raise EOFError  # the file ends inside the member (zipfile's words: none)
        self._at += len(data)
        self._compress_left -= len(data)
        return data

    def _read1(self, n: int) -> bytes:
        """Up to ``n`` bytes (at least one unless at the end): zipfile's ``_read1``."""
        if self._inflater is None:
            data = self._compressed()
            if len(data) > n:
                data, self._pending = data[:n], data[n:]
            self._eof = self._compress_left <= 0 and not self._pending
        else:
            inflater = self._inflater
            source = inflater.unconsumed_tail or self._compressed()
            data = inflater.decompress(source, n)
            self._eof = inflater.eof or (
                self._compress_left <= 0 and not self._pending and not inflater.unconsumed_tail
            )
            if self._eof:
                data += inflater.flush()
        data = data[: self._left]
        self._left -= len(data)
        if self._left <= 0:
            self._eof = True
        self._crc = zlib.crc32(data, self._crc)
        if self._eof and self._crc != self._expected_crc:
            raise zipfile.BadZipFile(f"Bad CRC-32 for file {self._name!r}")
        self._pos += len(data)
        return data

    def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes (all that is left for a negative ``n``), fewer only at the end."""
        if n < 0:
            n = self._left
        parts: list[bytes] = []
        while n > 0 and not self._eof:
            data = self._read1(min(n, SKIP))
            if not data and not self._eof:
                continue  # zlib took input and gave nothing yet
            parts.append(data)
            n -= len(data)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def seek(self, offset: int) -> int:
        """Forward to ``offset``, inflating and dropping what lies between."""
        if offset < self._pos:
            raise ValueError(f"{self._name}: a member stream seeks forward only")
        while self._pos < offset and not self._eof:
            self._read1(min(offset - self._pos, SKIP))
        return self._pos


# What read_member and copy_elf_member read a member through.
MemberReader = IO[bytes] | MemberStream


def open_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> MemberReader:
    """A reader of ``info``'s bytes: a :class:`MemberStream` where it can (a stored or
    deflated member of a zip read from a file, its local header what the central one
    says), else ``zf.open(info)``, which raises what zipfile raises."""
    stream = _fast(zf, info)
    return stream if stream is not None else zf.open(info)


def _fast(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> MemberStream | None:
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) or info.flag_bits & _REFUSED_FLAGS:
        return None
    try:
        fd = zf.fp.fileno() if zf.fp is not None else -1
    except (AttributeError, OSError, ValueError):
        return None  # a zip in memory: zipfile reads it
    if fd < 0:
        return None
    try:
        block = os.pread(fd, _HEAD_READ + len(info.orig_filename) * 4, info.header_offset)
    except OSError:
        return None
    if len(block) < 30:
        return None
    fields = _HEADER.unpack_from(block)
    if fields[0] != b"PK\x03\x04":
        return None
    flags, name_len, extra_len = fields[3], fields[10], fields[11]
    raw = block[30 : 30 + name_len]
    try:
        name = raw.decode("utf-8" if flags & _UTF8_NAME else getattr(zf, "metadata_encoding", None) or "cp437")
    except (UnicodeDecodeError, LookupError):
        return None
    if len(raw) != name_len or name != info.orig_filename:
        return None
    start = info.header_offset + 30 + name_len + extra_len
    end_offset = getattr(info, "_end_offset", None)
    if end_offset is not None and start + info.compress_size > end_offset:
        return None  # overlapped entries: zipfile says so
    first = block[30 + name_len + extra_len :][: info.compress_size]
    return MemberStream(fd, info, start, first)
