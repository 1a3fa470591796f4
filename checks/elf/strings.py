"""String tables: one name at an offset, a whole table decoded once, and many names cut
out of it in chunks, each bounded by the caps on a name's length and on all names' bytes."""

from __future__ import annotations

import mmap

from aoti_shim.checks.elf.layout import MAX_NAME_BYTES, MAX_NAME_LEN, Section
from aoti_shim.checks.elf.view import RELEASE_AFTER, ByteView


def decode(raw: bytes) -> str:
    # Names are bytes to the linker; undecodable ones must still print and serialise.
    return raw.decode("utf-8", "backslashreplace")


def name_at(view: ByteView, strtab: Section, offset: int) -> str:
    """The NUL-terminated name at ``offset`` of ``strtab``."""
    if not 0 <= offset < strtab.size:
        raise view.fail(f"name offset {offset} is past its string table")
    mm = view.map()
    start = strtab.offset + offset
    end = mm.find(b"\0", start, min(strtab.offset + strtab.size, start + MAX_NAME_LEN))
    if end < 0:
        raise view.fail("unterminated or overlong name in a string table")
    return decode(mm[start:end])


def string_table(view: ByteView, strtab: Section) -> bytes | str:
    """The string table, decoded once when it is ASCII (slices are then names)."""
    view.check_range(strtab.offset, strtab.size, ".dynstr")
    mm = view.map()
    if isinstance(mm, mmap.mmap) and not view.sparse and strtab.size >= RELEASE_AFTER:
        # Decoded straight from the mapping: no bytes copy beside the text (libtorch_cpu's
        # table is 5 MiB), and its pages given back after.
        with memoryview(mm) as whole, whole[strtab.offset : strtab.offset + strtab.size] as part:
            ends_in_nul = part[-1] == 0
            try:
                text: str | None = str(part, "ascii")
            except UnicodeDecodeError:
                text = None
        view.release(strtab.offset, strtab.size)
        if not ends_in_nul:
            raise view.fail(".dynstr does not end in a NUL byte (unterminated name)")
        if text is not None:
            return text
    raw = view.bytes(strtab.offset, strtab.size, ".dynstr")
    if raw[-1:] != b"\0":
        raise view.fail(".dynstr does not end in a NUL byte (unterminated name)")
    return raw.decode("ascii") if raw.isascii() else raw


def cut_names(
    view: ByteView, strings: bytes | str | mmap.mmap, offsets: list[int], used: int, base: int = 0
) -> tuple[list[str], int]:
    """The names at ``offsets``, in chunks, so a hostile table is refused early: each
    name is looked for only within MAX_NAME_LEN bytes, and all of them together (``used``
    so far, returned grown) may not pass MAX_NAME_BYTES. ``strings``: the table, or (with
    ``base``, the table's start in it) the file's bytes holding a NUL-terminated table."""
    out: list[str] = []
    nul: bytes | str = "\0" if isinstance(strings, str) else b"\0"
    find = strings.find
    for first in range(0, len(offsets), 4096):
        chunk = [o + base for o in offsets[first : first + 4096]] if base else offsets[first : first + 4096]
        ends = [find(nul, o, o + MAX_NAME_LEN) for o in chunk]  # type: ignore[arg-type]  # nul matches strings' type
        if -1 in ends:
            raise view.fail(f"a symbol name is longer than {MAX_NAME_LEN >> 10} KiB")
        used += sum(ends) - sum(chunk)
        if used > MAX_NAME_BYTES:
            raise view.fail(f"symbol names add up to more than {MAX_NAME_BYTES >> 20} MiB")
        if isinstance(strings, str):
            out.extend([strings[o:e] for o, e in zip(chunk, ends)])
        else:
            out.extend([decode(strings[o:e]) for o, e in zip(chunk, ends)])
    return out, used
