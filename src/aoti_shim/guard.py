"""Every path a command reads, and every output it appends to, passes one guard first.

- An input is opened with O_NONBLOCK and judged by ``fstat`` of what was opened: a FIFO
  would block ``open()`` until a writer came, a device (``/dev/zero``) never ends, a folder
  is not a file. No ``stat``-then-``open`` race: the opened descriptor is what is judged.
- A folder input must be a folder this process can list.
- Every refusal is one line naming the option and the path (an AotiShimError subclass
  the caller picks, so each command keeps its documented exit status).
- An output is no file of a kernel file system (``/proc``, ``/sys``): one line says so.
- An output must not be any input: (st_dev, st_ino) after following links, so a symbolic
  link or a hard link to an input is the input (:mod:`aoti_shim.atomic` asks here).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable
from typing import BinaryIO

from aoti_shim.errors import AotiShimError, InputError, UsageError

_NONBLOCK_READ = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_NONBLOCK_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words, for the one error line."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _why(path: str, e: OSError) -> str:
    """An OSError of opening ``path`` in words; a dangling link and a link loop by name."""
    if e.errno == errno.ELOOP:
        return "a symbolic link loop"
    if e.errno == errno.ENOENT and os.path.islink(path):
        return f"a dangling symbolic link (to {os.readlink(path)})"
    return f"cannot read: {e.strerror or e}"


def _shown(path: str, what: str) -> str:
    return f"{what} {path}" if what else path


def open_input(path: str | os.PathLike[str], *, what: str = "", error: type[AotiShimError] = InputError) -> BinaryIO:
    """``path`` opened for reading, a regular file, or one line of ``error``; never blocks."""
    given = os.fspath(path)
    try:
        fd = os.open(given, _NONBLOCK_READ)
    except OSError as e:
        raise error(f"{_shown(given, what)}: {_why(given, e)}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise error(f"{_shown(given, what)}: is a folder, not a file")
        if not stat.S_ISREG(mode):
            raise error(f"{_shown(given, what)}: {kind_of(mode)}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def input_file(
    path: str | os.PathLike[str], *, what: str = "", error: type[AotiShimError] = InputError
) -> os.stat_result:
    """Refuse ``path`` unless it is a regular file this process can read; its stat."""
    with open_input(path, what=what, error=error) as f:
        return os.fstat(f.fileno())


def read_input(
    path: str | os.PathLike[str], *, what: str = "", error: type[AotiShimError] = InputError, limit: int | None = None
) -> bytes:
    """The bytes of a regular file (at most ``limit``: more is one line of ``error``)."""
    with open_input(path, what=what, error=error) as f:
        try:
            data = f.read() if limit is None else f.read(limit + 1)
        except OSError as e:
            raise error(f"{_shown(os.fspath(path), what)}: cannot read: {e.strerror or e}") from None
    if limit is not None and len(data) > limit:
        raise error(f"{_shown(os.fspath(path), what)}: larger than {limit} bytes")
    return data


def input_folder(path: str | os.PathLike[str], *, what: str = "", error: type[AotiShimError] = InputError) -> None:
    """Refuse ``path`` unless it is a folder this process can list (stat and scandir never block)."""
    given = os.fspath(path)
    try:
        mode = os.stat(given).st_mode
    except OSError as e:
        raise error(f"{_shown(given, what)}: {_why(given, e)}") from None
    if not stat.S_ISDIR(mode):
        raise error(f"{_shown(given, what)}: {'' if stat.S_ISREG(mode) else kind_of(mode) + ', '}not a folder")
    try:
        with os.scandir(given) as entries:
            next(entries, None)
    except OSError as e:
        raise error(f"{_shown(given, what)}: cannot list: {e.strerror or e}") from None


def input_file_or_folder(
    path: str | os.PathLike[str], *, what: str = "", error: type[AotiShimError] = InputError
) -> None:
    """A folder (listable) or a regular file (readable); anything else is one line of ``error``."""
    given = os.fspath(path)
    try:
        is_dir = stat.S_ISDIR(os.stat(given).st_mode)
    except OSError:
        is_dir = False  # open_input names the reason
    if is_dir:
        input_folder(given, what=what, error=error)
    else:
        input_file(given, what=what, error=error)


def output_folder(path: str | os.PathLike[str], *, what: str, error: type[AotiShimError] = AotiShimError) -> str:
    """A folder to write into: an existing folder this process can write, or a path to create;
    its real path. A dangling link would create its target wherever it points; refused."""
    given = os.fspath(path)
    try:
        mode = os.stat(given).st_mode
    except FileNotFoundError:
        if os.path.islink(given):
            raise error(f"{_shown(given, what)}: a dangling symbolic link (to {os.readlink(given)})") from None
        return os.path.realpath(given)
    except OSError as e:
        raise error(f"{_shown(given, what)}: {_why(given, e).replace('cannot read', 'cannot write')}") from None
    if not stat.S_ISDIR(mode):
        raise error(f"{_shown(given, what)}: {'a file' if stat.S_ISREG(mode) else kind_of(mode)}, not a folder")
    effective = os.access in os.supports_effective_ids
    if not os.access(given, os.W_OK | os.X_OK, effective_ids=effective):
        raise error(f"{_shown(given, what)}: cannot write: Permission denied")
    return os.path.realpath(given)


def the_input(output_stat: os.stat_result, inputs: Iterable[str | os.PathLike[str]]) -> str | None:
    """The input (as given) that ``output_stat`` is, followed links and hard links alike."""
    for item in inputs:
        source = os.fspath(item)
        try:
            if os.path.samestat(output_stat, os.stat(source)):
                return source
        except OSError:
            continue  # not a file (torch, a snapshot name): nothing to protect
    return None


# File systems whose files are the kernel's interfaces (/proc/version, /sys/...), never a report.
_KERNEL_FILE_SYSTEMS = frozenset(
    {"proc", "sysfs", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs", "configfs", "bpf", "pstore",
     "efivarfs", "fusectl", "binfmt_misc", "selinuxfs", "devpts", "mqueue", "nsfs"}
)
_MOUNTINFO_ESCAPE = re.compile(r"\\([0-7]{3})")


def kernel_file_system(path: str) -> str | None:
    """The kernel file system (``proc``, ``sysfs``...) that the mount holding ``path`` is,
    by /proc/self/mountinfo; None for any other, or where that cannot be read."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    best, kind = "", None
    for line in lines:
        fields = line.split(" ")
        sep = fields.index("-") if "-" in fields else -1
        if sep < 5 or sep + 1 >= len(fields):
            continue
        point = _MOUNTINFO_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[4])
        # The deepest mount point holding the path; of two at one point, the later (on top).
        if os.path.isabs(point) and os.path.commonpath([path, point]) == point and len(point) >= len(best):
            best, kind = point, fields[sep + 1]
    return kind if kind in _KERNEL_FILE_SYSTEMS else None


def no_kernel_file(path: str, shown: str) -> None:
    """Refuse an output on a kernel file system: one line that says so, where writing there
    fails with a misleading errno (ENOENT for a new file in /proc, EINVAL for /proc/version)."""
    kernel = kernel_file_system(path)
    if kernel is not None:
        raise AotiShimError(
            f"{shown}: cannot write: a file of the kernel's {kernel} file system (in {os.path.dirname(path)}), "
            "which this command may not write; name a file to write"
        )


def _open_append(given: str, shown: str, inputs: Iterable[str | os.PathLike[str]], *, create: bool) -> int | None:
    """A descriptor to append to ``given``, judged; None when it does not exist and ``create`` is off."""
    no_kernel_file(os.path.realpath(given), shown)
    try:
        os.stat(given)
    except FileNotFoundError:
        if os.path.islink(given):
            # O_CREAT would create the link's target, wherever it points.
            raise AotiShimError(
                f"{shown}: a dangling symbolic link (to {os.readlink(given)}); name a file to write"
            ) from None
        if not create:
            return None
    except OSError:
        pass  # open() below names it
    try:
        # O_NONBLOCK: a FIFO with no reader is ENXIO at once, not a wait for a reader.
        fd = os.open(given, _NONBLOCK_APPEND if create else _NONBLOCK_APPEND & ~os.O_CREAT, 0o644)
    except OSError as e:
        why = "a FIFO (named pipe), not a regular file" if e.errno == errno.ENXIO else _why(given, e)
        raise AotiShimError(f"{shown}: {why.replace('cannot read', 'cannot write')}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise AotiShimError(f"{shown}: {kind_of(st.st_mode)}, not a regular file")
        source = the_input(st, inputs)
        if source is not None:
            raise UsageError(f"{shown}: is also an input ({source}); write it elsewhere")  # as atomic's: exit 2
    except BaseException:
        os.close(fd)
        raise
    return fd


def appendable(path: str | os.PathLike[str], *, what: str, inputs: Iterable[str | os.PathLike[str]] = ()) -> None:
    """Refuse, before any work, what :func:`append_text` would refuse; writes nothing."""
    given = os.fspath(path)
    fd = _open_append(given, f"{what} {given}", tuple(inputs), create=False)
    if fd is not None:
        os.close(fd)


def append_text(
    path: str | os.PathLike[str], text: str, *, what: str, inputs: Iterable[str | os.PathLike[str]] = ()
) -> None:
    """Append ``text`` to a regular file (created if missing) that is none of ``inputs``."""
    given = os.fspath(path)
    shown = f"{what} {given}"
    fd = _open_append(given, shown, tuple(inputs), create=True)
    assert fd is not None
    try:
        os.set_blocking(fd, True)
        with os.fdopen(fd, "a", encoding="utf-8", closefd=False) as f:
            f.write(text)
    except OSError as e:
        raise AotiShimError(f"{shown}: cannot write: {e.strerror or e}") from None
    finally:
        os.close(fd)
