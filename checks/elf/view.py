"""The bounded byte view every reader goes through: one file's bytes (a read-only map, or
the parts a stream kept), each read checked against their size first, so a bad offset ends
in one :class:`InputError` line naming the file."""

from __future__ import annotations

import mmap
import os
import stat

from aoti_shim.errors import InputError

# A copied range at least this long has its mapped pages released right away.
RELEASE_AFTER = 1 << 20
# A file up to this size is read whole instead of mapped: one read costs less than the map,
# its page faults and the unmap (a model blob of a few KiB: a tenth of reading its tables).
READ_WHOLE_UP_TO = 64 << 10


class ByteView:
    """``data`` (None once closed) of ``size`` bytes, named ``display`` in errors. ``sparse``:
    an anonymous map of a stream's parts, whose pages are the data (never released)."""

    __slots__ = ("display", "data", "size", "sparse")

    def __init__(self, display: str, data: mmap.mmap | bytes | bytearray | None, size: int, sparse: bool) -> None:
        self.display = display
        self.data = data
        self.size = size
        self.sparse = sparse

    @classmethod
    def open(cls, path: str, display: str) -> ByteView:
        """A read-only map of the regular file at ``path``."""
        view = cls(display, None, 0, False)
        try:
            # O_NONBLOCK: a FIFO must not hang the checker; it is refused below.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as e:
            raise view.fail(f"cannot open: {e.strerror or e}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise view.fail("not a regular file")
            size = st.st_size
            if size < 16:
                raise view.fail("not an ELF file (too short)")
            if size <= READ_WHOLE_UP_TO:
                view.data = _read_whole(view, fd, size)
                size = len(view.data)
            else:
                try:
                    view.data = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
                except (OSError, ValueError, OverflowError) as e:
                    raise view.fail(f"cannot map: {e}") from None
        finally:
            os.close(fd)
        view.size = size
        return view

    def fail(self, why: str) -> InputError:
        return InputError(f"{self.display}: {why}")

    def map(self) -> mmap.mmap:
        if self.data is None:
            raise self.fail("read after close")
        return self.data  # type: ignore[return-value]  # bytes-like either way: mmap or bytes

    def check_range(self, offset: int, length: int, what: str) -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise self.fail(f"{what} lies outside the file (offset {offset}, size {length})")

    def bytes(self, offset: int, length: int, what: str) -> bytes:
        self.check_range(offset, length, what)
        mm = self.map()
        data = mm[offset : offset + length]
        if length >= RELEASE_AFTER:
            # The copy is what is used: give the mapped pages back, or a big table counts
            # twice in the peak memory (libtorch_cpu's .dynstr is 5 MiB).
            self.release(offset, length)
        return data

    def release(self, offset: int, length: int) -> None:
        """Give back the mapped pages of a file range (they fault back in from the page
        cache if read again); a no-op for what is not a file mapping."""
        mm = self.data
        if not isinstance(mm, mmap.mmap) or self.sparse or length <= 0:
            return
        start = offset - offset % mmap.PAGESIZE
        try:
            mm.madvise(mmap.MADV_DONTNEED, start, min(offset + length, self.size) - start)
        except (OSError, ValueError, AttributeError):
            pass

    def close(self) -> None:
        if self.data is not None:
            if isinstance(self.data, mmap.mmap):
                self.data.close()
            self.data = None


def _read_whole(view: ByteView, fd: int, size: int) -> bytes:
    """A small file's bytes, as many as it holds now (one read, more for a short one)."""
    try:
        data = os.read(fd, size)
        while len(data) < size:
            more = os.read(fd, size - len(data))
            if not more:
                break
            data += more
    except OSError as e:
        raise view.fail(f"cannot read: {e.strerror or e}") from None
    if len(data) < 16:
        raise view.fail("not an ELF file (too short)")
    return data
