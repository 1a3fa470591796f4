"""Turn command-line inputs (files, folders, wheels) into ELF, Mach-O and PE files on disk.

Wheels are never unpacked whole: only members that start with the ELF magic are
copied, each to a private temp file named by its index (never by the member's
name), under a size cap, so a hostile wheel cannot write outside the workspace or
fill the disk. A Mach-O or PE member (by its name, see NATIVE_SUFFIXES, and its magic) is
copied whole the same way; its ``format`` says which reader reads it.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import shutil
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import PurePosixPath
from typing import IO, Any, BinaryIO

from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.elf.layout import ELF_MAGIC, ET_DYN, PT_DYNAMIC, file_kind, has_elf_magic, segments_of
from aoti_shim.checks.inputs.inflate import MemberReader, open_member
from aoti_shim.checks.inputs.magic import has_native_magic, path_kind
from aoti_shim.errors import InputError

# A member that inflates past this is treated as a decompression bomb.
DEFAULT_MEMBER_LIMIT = 4 << 30
# No folder walk goes deeper than this (a symlinked folder is read once: no loops).
MAX_WALK_DEPTH = 64
# torch's CUDA wheel has 13k members; a zip of millions of empty ones would cost gigabytes to list.
MAX_WHEEL_MEMBERS = 100_000
# Wheel members read as Mach-O or PE when their magic says so: macOS's dylibs and bundles
# (Python extensions are .so bundles there), Windows's DLLs and extensions.
NATIVE_SUFFIXES = (".dylib", ".so", ".bundle", ".dll", ".pyd")


@dataclass(frozen=True)
class Artifact:
    """One ELF file to read: where it is on disk, and how to name it to people. A wheel
    member read as it streamed past has no file: its ``image`` holds what was read."""

    path: str
    display: str
    image: ElfImage | None = None
    # file_kind's answer: "shared", or "executable" for a program that exports dynamic
    # symbols (a runner linked -rdynamic: the process's program, which binds first).
    kind: str = "shared"
    # The wheel a member came from (its path); None for a file given as one.
    wheel: str | None = None
    # "elf", or "macho" / "pe" for a file the native readers read (it has no ElfImage).
    format: str = "elf"
    # real_path, when collect worked it out (its folder resolved once for all its files).
    resolved: str | None = dataclasses.field(default=None, compare=False, repr=False)
    # (st_dev, st_ino) of a named file, from collect's stat of it: what makes it one library.
    file_id: tuple[int, int] | None = dataclasses.field(default=None, compare=False, repr=False)

    def open(self) -> ElfImage:
        return self.image if self.image is not None else ElfImage(self.path, display=self.display)

    @cached_property
    def real_path(self) -> str:
        """Its path with every symlink resolved, asked once (the check keys a library by it
        in several places: a realpath is a stat per folder of the path)."""
        return self.resolved if self.resolved is not None else os.path.realpath(self.path)

    @property
    def file_name(self) -> str:
        """The name a DT_NEEDED entry would use for it: the file's (a member's) base name."""
        # A member streamed into memory has its display as its path: "wheel!member" too.
        if self.path != self.display or self.image is not None:
            return os.path.basename(self.display.rsplit("!", 1)[-1].replace("\\", "/"))
        return os.path.basename(self.path)


# What every executable exports (crt1's and the linker's): exporting only these is no library.
_PROGRAM_EXPORTS = frozenset(
    {"_IO_stdin_used", "_init", "_fini", "_end", "_edata", "__bss_start", "__data_start", "data_start",
     "__dso_handle", "_DYNAMIC", "_GLOBAL_OFFSET_TABLE_", "__libc_csu_init", "__libc_csu_fini", "_start"}
)


def linked_as(kind: str, image: ElfImage) -> str:
    """:func:`file_kind`'s answer from the first bytes, asked of the dynamic section too: an
    ET_DYN file naming an interpreter but not linked as a program (no DF_1_PIE: libc.so.6, a
    library linked -e) is a library, which dlopen loads (scan's judge.read_library, 78d3fc5)."""
    return "shared" if kind == "executable" and image.e_type == ET_DYN and not image.pie else kind


def exports_symbols(image: ElfImage) -> bool:
    """True for an executable that exports dynamic symbols of its own (linked -rdynamic or
    --export-dynamic): its exports bind first in the process, as a library's would."""
    return image.has_dynsym and any(n not in _PROGRAM_EXPORTS for n in image.exports())


class Workspace:
    """A private temp folder for wheel members, removed on exit whatever happens."""

    def __init__(self) -> None:
        self._dir: str | None = None
        self._count = 0
        # ELF files in folders and wheels that are no shared library, as (name, kind).
        self.ignored: list[tuple[str, str]] = []

    def new_file(self) -> tuple[int, str]:
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="aoti-shim-")
        self._count += 1
        path = os.path.join(self._dir, f"member-{self._count}.so")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        return fd, path

    def close(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> Workspace:
        _OPEN_WORKSPACES[0] += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        _OPEN_WORKSPACES[0] -= 1
        if _OPEN_WORKSPACES[0] <= 0:
            _LISTED.clear()


def _walk(
    root: str, workspace: Workspace | None = None, depth: int = 0, seen: set[tuple[int, int]] | None = None
) -> Iterator[str]:
    """Regular files below root. A symlink to a folder is followed (a wheel's or a build's
    lib/ may be one), each real folder read once: a link back up (a loop) or to a folder
    already read is said in ``workspace.ignored``, never skipped silently."""
    if depth > MAX_WALK_DEPTH:
        raise InputError(f"{root}: folder nesting deeper than {MAX_WALK_DEPTH}")
    if seen is None:
        try:
            st = os.stat(root)
        except OSError as e:
            raise InputError(f"{root}: cannot list folder: {e.strerror or e}") from None
        seen = {(st.st_dev, st.st_ino)}
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as e:
        raise InputError(f"{root}: cannot list folder: {e.strerror or e}") from None
    for entry in entries:
        try:
            if entry.is_symlink():
                st = os.stat(entry.path)  # a dangling or looping link is a file we cannot read
                if stat.S_ISDIR(st.st_mode):
                    key = (st.st_dev, st.st_ino)
                    if key in seen:
                        if workspace is not None:
                            workspace.ignored.append(
                                (entry.path, "symlinked folder read already (a loop, or a second link)")
                            )
                        continue
                    seen.add(key)
                    yield from _walk(entry.path, workspace, depth + 1, seen)
                    continue
            elif entry.is_dir(follow_symlinks=False):
                st = entry.stat(follow_symlinks=False)
                seen.add((st.st_dev, st.st_ino))
                yield from _walk(entry.path, workspace, depth + 1, seen)
                continue
            if entry.is_file(follow_symlinks=True):
                yield entry.path
        except OSError as e:
            # Skipping it would check less than was asked for and still say OK.
            raise InputError(f"{entry.path}: cannot read: {e.strerror or e}") from None


def is_elf_strict(path: str) -> bool:
    """``is_elf`` for a file found in a folder: one that cannot be read is an error, not
    'not ELF' (an unreadable library must not drop silently out of the check)."""
    try:
        with open(path, "rb") as f:
            return has_elf_magic(f.read(len(ELF_MAGIC)))
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None


def safe_member_name(name: str) -> bool:
    """True when a wheel member's name stays inside any folder it is unpacked in.

    Refused: an empty or absolute name, a ``..`` part, and a drive (``C:``) in front;
    backslashes count as separators, as Windows zip tools write them. Every reader of
    wheels (the checker, snapshots, the build gate) refuses such a wheel outright.
    """
    parts = _name_parts(name)
    return bool(parts) and not parts[0].startswith("/") and ".." not in parts and ":" not in parts[0]


def _name_parts(name: str) -> list[str]:
    """``PurePosixPath(name).parts`` with backslashes as separators, as string operations
    (a wheel of 24k members is listed twice as fast): empty and ``.`` parts dropped, a
    leading ``/`` (or exactly two, as POSIX allows) the first part."""
    path = name.replace("\\", "/")
    root = ""
    if path.startswith("/"):
        root = "//" if path.startswith("//") and not path.startswith("///") else "/"
    parts = [p for p in path.split("/") if p and p != "."]
    return [root, *parts] if root else parts


def member_key(name: str) -> str:
    """A member's name as two names for one file compare (``a//b``, ``a/./b`` and ``a\\b``
    are ``a/b``): ``PurePosixPath(name).as_posix()`` of a safe name, backslashes as separators."""
    return "/".join(_name_parts(name))


def _declared_member_count(wheel: str) -> int:
    """The member count the end-of-central-directory record declares (zip64 too),
    read before zipfile lists the members; -1 when there is no such record."""
    with open(wheel, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - (22 + 0xFFFF)))
        tail = f.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + 22 > len(tail):
        return -1
    count = int.from_bytes(tail[at + 10 : at + 12], "little")
    if count == 0xFFFF and at >= 20 and tail[at - 20 : at - 16] == b"PK\x06\x07":
        record = int.from_bytes(tail[at - 12 : at - 4], "little")
        if 0 <= record <= size - 56:
            f_count = _read_at(wheel, record, 56)
            if f_count[:4] == b"PK\x06\x06":
                count = int.from_bytes(f_count[32:40], "little")
    return count


def _read_at(path: str, offset: int, length: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(length)


# Bytes one reading of a wheel may inflate in all: a floor for small wheels, else a ratio
# of the wheel's size. Shared libraries deflate about 3:1 (torch 2.13.0's CPU wheel: 182 MiB,
# 666 MiB inflated); a zip bomb's ratio is in the hundreds.
MIN_WHEEL_INFLATE = 256 << 20
WHEEL_INFLATE_RATIO = 16
MAX_WHEEL_INFLATE = 32 << 30


# The central directory of every wheel listed and accepted while a Workspace is open (one
# check's reading), by the file's identity: a check lists a wheel again for the loader's file
# search (check/run.py's _members), and torch's takes 0.1 s to parse and judge. Forgotten
# when the last Workspace closes: a file rewritten in place keeps its inode, and maybe its
# size and mtime (a coarse clock), so nothing outlives the reading.
_LISTED: dict[tuple[int, int, int, int], tuple[list[zipfile.ZipInfo], int, bytes]] = {}
_OPEN_WORKSPACES = [0]


def _identity_of(f: IO[bytes] | None) -> tuple[int, int, int, int] | None:
    try:
        st = os.fstat(f.fileno()) if f is not None else None
    except (OSError, ValueError, AttributeError):
        return None
    return None if st is None else (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class Wheel(zipfile.ZipFile):
    """A wheel whose member names and count were checked, with a budget of inflated bytes
    shared by every member read from it (the checker's, the snapshot's and the build gate's)."""

    path: str = ""
    inflate_budget: int = MAX_WHEEL_INFLATE
    inflate_left: int = MAX_WHEEL_INFLATE
    # True when this file's listing was judged before in this process (and taken from then).
    listed_before: bool = False

    def _RealGetContents(self) -> None:  # zipfile's name: it lists the central directory
        listed = _LISTED.get(_identity_of(self.fp) or (-1, -1, -1, -1))
        if listed is None:
            zipfile.ZipFile._RealGetContents(self)  # type: ignore[attr-defined]  # private: not in the stubs, in 3.10 to 3.14
            return
        infos, self.start_dir, self._comment = listed
        self.filelist = list(infos)
        self.NameToInfo = {info.filename: info for info in infos}
        self.listed_before = True

    def remember(self) -> None:
        """Keep this wheel's listing, judged sound, for the next opening of the same file."""
        key = _identity_of(self.fp)
        if key is not None and _OPEN_WORKSPACES[0] > 0:
            _LISTED[key] = (list(self.filelist), self.start_dir, self._comment)

    def charge(self, n: int, display: str) -> None:
        self.inflate_left -= n
        if self.inflate_left < 0:
            raise InputError(
                f"{display}: the wheel inflates past its budget of {self.inflate_budget >> 20} MiB "
                f"(the larger of {MIN_WHEEL_INFLATE >> 20} MiB and {WHEEL_INFLATE_RATIO}x its size; a zip bomb?)"
            )


def open_wheel(wheel: str, display: str | None = None) -> Wheel:
    """The wheel as a zip: its member count, every member name and their uniqueness
    checked first (pip installs the last of two same-named members, a reader the first:
    such a wheel is refused, as is one with an unsafe name). ``display`` names the wheel
    in messages (default: its path)."""
    shown = display or wheel
    try:
        # Opened for reading, a FIFO (or a device) blocks or never ends: a wheel is a file.
        if not stat.S_ISREG(os.stat(wheel).st_mode):
            raise InputError(f"{shown}: not a regular file")
        declared = _declared_member_count(wheel)
        size = os.path.getsize(wheel)
    except OSError as e:
        raise InputError(f"{shown}: cannot read: {e.strerror or e}") from None
    if declared > MAX_WHEEL_MEMBERS:
        raise InputError(f"{shown}: wheel has {declared} members, more than {MAX_WHEEL_MEMBERS}")
    try:
        zf = Wheel(wheel)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError) as e:
        raise InputError(f"{shown}: not a readable wheel (zip): {e}") from None
    zf.path = wheel
    zf.inflate_budget = zf.inflate_left = min(MAX_WHEEL_INFLATE, max(MIN_WHEEL_INFLATE, WHEEL_INFLATE_RATIO * size))
    if zf.listed_before:
        return zf  # judged when it was first opened: the same file
    try:
        infos = zf.infolist()
        if len(infos) > MAX_WHEEL_MEMBERS:  # the end record can understate the central directory
            raise InputError(f"{shown}: wheel has {len(infos)} members, more than {MAX_WHEEL_MEMBERS}")
        seen: set[str] = set()
        for info in infos:
            if not safe_member_name(info.filename):
                raise InputError(f"{shown}: unsafe member name {info.filename!r} in wheel")
            key = member_key(info.filename)
            if key in seen:
                raise InputError(
                    f"{shown}: two members named {info.filename!r} in wheel "
                    "(a reader sees the first, pip installs the second)"
                )
            seen.add(key)
    except BaseException:
        zf.close()
        raise
    zf.remember()
    return zf


_EXTRACT_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError, RuntimeError)


def copy_elf_member(
    zf: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    display: str,
    open_target: Callable[[], BinaryIO],
    member_limit: int = DEFAULT_MEMBER_LIMIT,
    digest: Any = None,
    accept: Callable[[bytes], bool] = has_elf_magic,
) -> int | None:
    """Stream one member to the file ``open_target()`` gives, under the member cap and the
    wheel's budget; its size, or None (nothing opened) when it is not ELF (``accept`` says
    which first bytes to copy). The one copy of a wheel member every reader uses; ``digest``
    (a hashlib object) sees every byte."""
    if info.is_dir() or info.file_size < len(ELF_MAGIC):
        return None  # too short to start with the magic: skip without inflating
    charge = zf.charge if isinstance(zf, Wheel) else (lambda n, d: None)
    try:
        with open_member(zf, info) as src:
            head = src.read(len(ELF_MAGIC))
            if not accept(bytes(head[:4])):
                return None
            if info.file_size > member_limit:
                raise InputError(f"{display}: member inflates to {info.file_size} bytes, over the limit")
            written = len(head)
            charge(written, display)
            with open_target() as dst:
                dst.write(head)
                if digest is not None:
                    digest.update(head)
                while chunk := src.read(1 << 20):
                    written += len(chunk)
                    if written > member_limit or written > info.file_size:
                        raise InputError(f"{display}: member inflates past its declared size (a zip bomb?)")
                    charge(len(chunk), display)
                    if digest is not None:
                        digest.update(chunk)
                    dst.write(chunk)
    except InputError:
        raise
    except _EXTRACT_ERRORS as e:
        raise InputError(f"{display}: cannot extract: {getattr(e, 'strerror', None) or e}") from None
    return written


def extract_member(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, display: str, workspace: Workspace, member_limit: int,
    accept: Callable[[bytes], bool] = has_elf_magic,
) -> Artifact | None:
    """One member copied to a private temp file, or None when it is not ELF (not what ``accept`` takes)."""
    made: list[str] = []

    def target() -> BinaryIO:
        fd, path = workspace.new_file()
        made.append(path)
        return os.fdopen(fd, "wb")

    if copy_elf_member(zf, info, display, target, member_limit, accept=accept) is None:
        return None
    return Artifact(path=made[0], display=display)


def extract_elf_members(
    wheel: str | os.PathLike[str], dest: str | os.PathLike[str], display: str | None = None, *, native: bool = False
) -> list[str]:
    """Copy every ELF member of ``wheel`` under ``dest`` by its member path (for a gate
    whose report names members, not temp files); those member paths. Same checks and caps
    as the checker's own reading. ``native``: Mach-O dylibs and bundles and DLLs too (by
    NATIVE_SUFFIXES and magic)."""
    members: list[str] = []
    with open_wheel(os.fspath(wheel), display) as zf:
        for info in zf.infolist():
            target = os.path.join(os.fspath(dest), *PurePosixPath(info.filename.replace("\\", "/")).parts)

            def open_target(target: str = target) -> BinaryIO:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                return open(target, "xb")

            shown = f"{display or zf.path}!{info.filename}"
            if copy_elf_member(zf, info, shown, open_target) is not None:
                members.append(info.filename)
            elif native and info.filename.lower().endswith(NATIVE_SUFFIXES):
                if copy_elf_member(zf, info, shown, open_target, accept=has_native_magic) is not None:
                    found = _native_kind(target)
                    if found is not None and found[1] == "shared" and of_platform(os.fspath(wheel), found[0]):
                        members.append(info.filename)
                    else:
                        os.unlink(target)  # a program, another platform's library, or no Mach-O or PE file
    return members


# A streamed member's first bytes are kept up to this much: the loader's tables (.dynsym,
# .dynstr, hash and version tables) sit at the start (libtorch_cpu's end at 8 MiB).
STREAM_HEAD = 32 << 20
# A member up to this size is kept whole while it is read.
SMALL_MEMBER = 4 << 20
# Enough for the ELF header and the program headers of anything a linker writes.
_FIRST_BYTES = 4096


def read_member(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, display: str, workspace: Workspace, member_limit: int
) -> tuple[str, Artifact | None]:
    """(kind, artifact) of one member: kind is "not-elf" or :func:`file_kind`'s answer,
    and a shared library comes back read, the way the loader reads it.

    Nothing goes to disk: the member is inflated as it streams, its first bytes kept (up
    to STREAM_HEAD), the rest skipped up to PT_DYNAMIC, which is read, and the stream is
    left where the loader's tables end (PT_DYNAMIC says where they are): the member's CRC is
    checked only where the stream reaches the member's end (as zipfile checks it), the loader
    never reads it. Only a library whose tables lie past STREAM_HEAD and before PT_DYNAMIC is
    copied to a temp file.
    """
    if info.is_dir() or info.file_size < len(ELF_MAGIC):
        return "not-elf", None  # too short to start with the magic: skip without inflating
    # Every byte inflated counts against the wheel's budget, kept or skipped over.
    charge = zf.charge if isinstance(zf, Wheel) else (lambda n, d: None)
    try:
        with open_member(zf, info) as src:
            head = bytearray(src.read(_FIRST_BYTES))
            charge(len(head), display)
            if not has_elf_magic(head):
                return "not-elf", None
            if info.file_size > member_limit:
                raise InputError(f"{display}: member inflates to {info.file_size} bytes, over the limit")
            kind = file_kind(head)
            if kind not in ("shared", "executable"):
                return kind, None
            segments = segments_of(head) or []
            dynamic = next(((off, size) for p_type, off, size in segments if p_type == PT_DYNAMIC), None)
            if dynamic is None:
                return kind, Artifact(
                    path=display, display=display, image=ElfImage.from_loaded_parts(display, head, b"")
                )
            if dynamic[0] + dynamic[1] > info.file_size:
                raise InputError(f"{display}: PT_DYNAMIC lies outside the member")
            image = _streamed_image(src, info, display, head, dynamic, charge)
            if image is None:
                return kind, extract_member(zf, info, display, workspace, member_limit)
    except _EXTRACT_ERRORS as e:
        raise InputError(f"{display}: cannot extract: {e}") from None
    return kind, Artifact(path=display, display=display, image=image)


def _fill(src: MemberReader, head: bytearray, upto: int, display: str, charge: Callable[[int, str], None]) -> None:
    """Read ``src`` on into ``head`` until it holds ``upto`` bytes (or the member ends)."""
    while len(head) < upto:
        chunk = src.read(min(upto - len(head), 1 << 22))
        if not chunk:
            break
        charge(len(chunk), display)
        head += chunk


def _streamed_image(
    src: MemberReader, info: zipfile.ZipInfo, display: str, head: bytearray, dynamic: tuple[int, int],
    charge: Callable[[int, str], None],
) -> ElfImage | None:
    """The loader's view of a member whose first bytes are ``head``; None when a table lies
    in what the stream skipped (only a second pass, a temp copy, can read it)."""
    dyn_off, dyn_size = dynamic
    small = info.file_size <= SMALL_MEMBER
    # A small library is kept up to where its tables end (they may follow PT_DYNAMIC); a big
    # one up to PT_DYNAMIC, where linkers put them, at most STREAM_HEAD of it.
    _fill(src, head, dyn_off if small else min(dyn_off, STREAM_HEAD), display, charge)
    if dyn_off + dyn_size <= len(head):
        dyn = bytes(head[dyn_off : dyn_off + dyn_size])
        at = len(head)
    elif dyn_off <= len(head):
        charge(dyn_off + dyn_size - len(head), display)
        dyn = bytes(head[dyn_off:]) + src.read(dyn_off + dyn_size - len(head))
        at = dyn_off + dyn_size
        if small:
            head += dyn[len(head) - dyn_off :]
    else:
        charge(dyn_off + dyn_size - len(head), display)
        src.seek(dyn_off)  # inflates and drops what lies between
        dyn = src.read(dyn_size)
        at = dyn_off + dyn_size
    if small:
        _fill(src, head, _tables_end(display, head, dyn, info.file_size), display, charge)
    try:
        return ElfImage.from_loaded_parts(display, head, dyn)
    except InputError:
        if small and len(head) < info.file_size:
            # What the tables' extents did not cover: the whole member, read as it was before.
            _fill(src, head, info.file_size, display, charge)
            return ElfImage.from_loaded_parts(display, head, dyn)
        if len(head) >= info.file_size:
            raise
        # A table lies past what was kept: fetch the tables ahead of the stream, or
        # read the whole file when one was already passed.
        sparse = _tables_ahead(src, info, display, head, dyn, at, charge)
        return None if sparse is None else ElfImage.from_loaded_parts(display, sparse, dyn)


def _tables_end(display: str, head: bytearray, dyn: bytes, size: int) -> int:
    """Where the last of the loader's tables ends in a member of ``size`` bytes (at least
    the end of ``head``, which holds PT_DYNAMIC), from its program headers and PT_DYNAMIC;
    the member's end when they cannot say."""
    try:
        extents = ElfImage.loader_table_extents(display, head, dyn)
    except InputError:
        return size  # the image says what is wrong, from the whole member
    return min(size, max([len(head), *(end for _, end in extents)]))


def _tables_ahead(
    src: MemberReader, info: zipfile.ZipInfo, display: str, head: bytearray, dyn: bytes, at: int,
    charge: Callable[[int, str], None],
) -> mmap.mmap | None:
    """The member's loader view as a sparse anonymous map (its size, only the kept head and
    the PT_LOAD ranges holding the loader's tables written), read forward from ``at``, where
    the stream stands; None when a table lies in what the stream already skipped.

    patchelf puts a rewritten .dynstr and .gnu.hash in a segment at the end of the file (torch
    2.14.1's libtorch_cpu.so and libtorch_cuda.so): the stream reaches them without a temp copy."""
    wanted: list[tuple[int, int]] = []
    for start, end in ElfImage.loader_table_extents(display, head, dyn):
        end = min(end, info.file_size)
        if end <= len(head):
            continue  # kept already
        start = max(start, len(head))
        if start < at:
            return None  # skipped over: only a second pass can read it
        wanted.append((start, end))
    if not wanted:
        return None
    sparse = mmap.mmap(-1, info.file_size)
    sparse[: len(head)] = head
    for start, end in _merged(wanted):
        if start > at:
            charge(start - at, display)
            src.seek(start)  # inflates and drops what lies between
        start = max(start, at)
        if end > start:
            charge(end - start, display)
            data = src.read(end - start)
            sparse[start : start + len(data)] = data
            at = start + len(data)
    return sparse


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def wheel_platform_format(wheel: str) -> str | None:
    """The native format a wheel's platform tag (PEP 425, its last) names: "macho" for macosx,
    "pe" for win, None for any other (linux: ELF, read as before; any; a file not named so)."""
    name = os.path.basename(wheel)
    tags = name[:-4].split("-")[-1].split(".") if name.endswith(".whl") and name.count("-") >= 4 else []
    if any(t.startswith("macosx") for t in tags):
        return "macho"
    return "pe" if any(t.startswith("win") for t in tags) else None


def of_platform(wheel: str, fmt: str) -> bool:
    """Whether a native member of format ``fmt`` is a library of the wheel's platform: not in a
    Linux wheel, nor in a macOS wheel a DLL (a wheel of no known platform takes any)."""
    platform = wheel_platform_format(wheel)
    linux = platform is None and "linux" in os.path.basename(wheel).rsplit("-", 1)[-1]
    return not linux and platform in (None, fmt)


def _wheel_members(wheel: str, workspace: Workspace, member_limit: int) -> Iterator[Artifact]:
    with open_wheel(wheel) as zf:
        for info in zf.infolist():
            display = f"{wheel}!{info.filename}"
            kind, art = read_member(zf, info, display, workspace, member_limit)
            if kind == "not-elf" and info.filename.lower().endswith(NATIVE_SUFFIXES):
                art = native_member(zf, info, display, workspace, member_limit)
                if art is not None and not of_platform(wheel, art.format):
                    # A dylib or DLL a Linux wheel carries (a tool's, a test's): no library it loads.
                    workspace.ignored.append((display, f"{art.format} library, not of the wheel's platform"))
                elif art is not None:
                    yield dataclasses.replace(art, wheel=wheel)
                continue
            if art is not None:
                art = dataclasses.replace(art, wheel=wheel)
            if art is not None and kind == "executable":
                image = art.open()
                if linked_as(kind, image) == "shared":
                    if art.image is None:
                        image.close()
                    yield art
                    continue
                if exports_symbols(image):
                    yield dataclasses.replace(art, kind=kind)
                    continue
                if art.image is None:
                    image.close()
                workspace.ignored.append((display, kind))
            elif art is not None:
                yield art
            elif kind != "not-elf":
                workspace.ignored.append((display, kind))


def native_member(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, display: str, workspace: Workspace, member_limit: int
) -> Artifact | None:
    """A Mach-O or PE member copied whole to a temp file, or None; one that is no dylib,
    bundle nor DLL is said in ``workspace.ignored``."""
    art = extract_member(zf, info, display, workspace, member_limit, accept=has_native_magic)
    found = None if art is None else _native_kind(art.path)
    if art is None or found is None:
        return None
    if found[1] != "shared":
        workspace.ignored.append((display, found[1]))
        return None
    return dataclasses.replace(art, format=found[0])


def _native_kind(path: str) -> tuple[str, str] | None:
    """:func:`path_kind` of a file; one that cannot be read is an error, as for ELF."""
    try:
        return path_kind(path)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None


def _program_exports(path: str) -> bool:
    with ElfImage(path) as image:
        return exports_symbols(image)


def _read_head(path: str) -> bytes:
    """A file's first bytes, which every kind test reads (read once: a check of 128 blobs
    opened each three times before its reader did); one that cannot be read is an error (an
    unreadable library must not drop out of the check)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))  # no buffered file object: one read
        try:
            head = os.read(fd, _FIRST_BYTES)
            while len(head) < _FIRST_BYTES and (more := os.read(fd, _FIRST_BYTES - len(head))):
                head += more  # a short read (as f.read would go on)
            return head
        finally:
            os.close(fd)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None


def _elf_kind(path: str, head: bytes) -> str | None:
    """file_kind of a file whose first bytes are ``head``, or None when it is not ELF."""
    if not has_elf_magic(head):
        return None
    kind = file_kind(head)
    if kind != "executable":
        return kind
    with ElfImage(path) as image:
        return linked_as(kind, image)


def _folder_kind(path: str) -> str | None:
    """file_kind of a file found in a folder, or None when it is not ELF."""
    return _elf_kind(path, _read_head(path))


def collect(
    inputs: tuple[str, ...] | list[str],
    workspace: Workspace,
    *,
    member_limit: int = DEFAULT_MEMBER_LIMIT,
) -> list[Artifact]:
    """Every ELF file named by ``inputs``. A named file that is not ELF is an error."""
    seen: set[str] = set()
    out: list[Artifact] = []
    folders: dict[str, str] = {}  # each named file's folder, resolved once this call

    def add(art: Artifact, key: str) -> None:
        if key not in seen:
            seen.add(key)
            out.append(art)

    for raw in inputs:
        try:
            st = os.stat(raw)
        except OSError as e:
            raise InputError(f"{raw}: cannot read: {e.strerror or e}") from None
        if stat.S_ISDIR(st.st_mode):
            # A build folder holds programs and objects too: only shared libraries count.
            for path in _walk(raw, workspace):
                kind = _folder_kind(path)
                if kind == "shared":
                    add(Artifact(path=path, display=path), os.path.realpath(path))
                elif kind == "executable" and _program_exports(path):
                    add(Artifact(path=path, display=path, kind=kind), os.path.realpath(path))
                elif kind is not None:
                    workspace.ignored.append((path, kind))
                elif (native := _native_kind(path)) is not None:
                    if native[1] == "shared":
                        add(Artifact(path=path, display=path, format=native[0]), os.path.realpath(path))
                    else:
                        workspace.ignored.append((path, native[1]))
        elif not stat.S_ISREG(st.st_mode):
            raise InputError(f"{raw}: not a regular file or folder")
        elif not os.access(raw, os.R_OK):
            raise InputError(f"{raw}: cannot read: permission denied")
        elif raw.endswith(".whl") or (head := _read_head(raw)).startswith(b"PK\x03\x04"):
            for art in _wheel_members(raw, workspace, member_limit):
                add(art, art.display)
        elif (kind := _elf_kind(raw, head)) is not None:
            real = _real_path(raw, folders)  # the check keys the library by it again
            add(Artifact(path=raw, display=raw, kind="executable" if kind == "executable" else "shared",
                         resolved=real, file_id=(st.st_dev, st.st_ino)), real)
        elif (native := _native_kind(raw)) is not None:
            add(Artifact(path=raw, display=raw, format=native[0]), os.path.realpath(raw))
        else:
            raise InputError(f"{raw}: not an ELF file, folder or wheel (nor a Mach-O or PE file)")
    return out


def _real_path(path: str, folders: dict[str, str]) -> str:
    """``os.path.realpath(path)``, its folder resolved once per ``folders`` (128 blobs of one
    folder: one realpath of it, and a link test of each name, not a stat per folder each)."""
    folder, name = os.path.split(path)
    if name in ("", ".", ".."):
        return os.path.realpath(path)
    real_folder = folders.get(folder)
    if real_folder is None:
        real_folder = folders[folder] = os.path.realpath(folder or os.curdir)
    joined = os.path.join(real_folder, name)
    return os.path.realpath(path) if os.path.islink(joined) else joined


def display_name(path: str) -> str:
    """A short stable name for reports: relative to the current folder when inside it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


