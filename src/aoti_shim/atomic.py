"""Replace a file in one step, so neither a reader nor a failure ever sees half of it.

Every file the tool writes (reports, snapshots, the rename header) goes through here,
so they share one set of rules: a temp file in the target's own folder (a rename
across file systems is not atomic), the temp file removed on any failure, an existing
device node or FIFO never replaced by a plain file, and every OSError a one-line
AotiShimError that names what was being written.
"""

from __future__ import annotations

import os
import stat
import tempfile
from contextlib import contextmanager
from typing import Callable, Iterator

from aoti_shim.errors import AotiShimError


def _refuse_special_target(shown: str, path: str) -> None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return  # nothing there yet (or a dangling link, which the rename replaces)
    except OSError as e:
        raise AotiShimError(f"{shown}: cannot write: {e.strerror or e}") from None
    # The rename would put a plain file where /dev/stdout or a FIFO was. A folder is left to
    # the rename, which refuses it with "Is a directory".
    if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        raise AotiShimError(f"{shown}: not a regular file; name a file to write")


def write_bytes_atomically(
    path: str | os.PathLike[str], data: bytes, *, what: str, mode: int = 0o644, fsync: bool = False
) -> None:
    """Write ``data`` to ``path`` through a temp file and ``os.replace``.

    ``what`` names the file in errors (``--output``, ``snapshot``): ``"<what> <path>: ..."``.
    ``fsync`` flushes the data to disk before the rename, for files that must survive a crash.
    """
    target = os.fspath(path)
    shown = f"{what} {target}"
    _refuse_special_target(shown, target)
    folder = os.path.dirname(os.path.abspath(target))
    try:
        # A fixed short prefix: a name built from a 250-byte target name would be too long.
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".aoti-shim-", suffix=".tmp")
    except OSError as e:
        raise AotiShimError(f"{shown}: cannot write: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)  # mkstemp makes 0600; the file is meant to be read by others
        os.replace(tmp, target)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        # A folder as the target, a full disk, a read-only folder: one line, not a traceback.
        if isinstance(e, OSError):
            raise AotiShimError(f"{shown}: cannot write: {e.strerror or e}") from None
        raise


def write_text_atomically(
    path: str | os.PathLike[str], text: str, *, what: str, mode: int = 0o644, fsync: bool = False
) -> None:
    """:func:`write_bytes_atomically` for text, encoded as UTF-8 with newlines as given."""
    write_bytes_atomically(path, text.encode("utf-8"), what=what, mode=mode, fsync=fsync)


@contextmanager
def open_text_atomically(
    path: str | os.PathLike[str], *, what: str, mode: int = 0o644
) -> Iterator[Callable[[str], None]]:
    """Stream text to ``path`` under the same rules as :func:`write_bytes_atomically`:
    yields a ``write(text)`` function; the file appears whole when the block ends, and
    not at all when it raises."""
    target = os.fspath(path)
    shown = f"{what} {target}"
    _refuse_special_target(shown, target)
    folder = os.path.dirname(os.path.abspath(target))
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".aoti-shim-", suffix=".tmp")
    except OSError as e:
        raise AotiShimError(f"{shown}: cannot write: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="", buffering=1 << 20) as handle:
            yield handle.write
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise AotiShimError(f"{shown}: cannot write: {e.strerror or e}") from None
        raise
