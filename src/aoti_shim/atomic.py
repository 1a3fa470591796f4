"""Every file the tool writes goes through here, so outputs share one set of rules.

- A file is replaced in one step: written to a temp file in the target's own folder (a
  rename across file systems is not atomic), renamed into place only when complete,
  the temp file removed on any failure (and on Ctrl-C or SIGTERM, which raise).
- An output never replaces one of the command's inputs (``check --shim X -o X``), nor
  anything inside an input folder: naming one is a usage error (exit 2).
- A device node, FIFO or socket is never replaced; ``/dev/stdout`` (and ``/dev/fd/1``,
  or any path that is the process's standard output) means: write to standard output.
- A file of the kernel's file systems (``/proc/version``, ``/sys/...``) is never written:
  one line says so, before any work.
- A symbolic link is written through: its target is replaced and the link stays a
  link. A dangling link is refused.
- Every OSError becomes a one-line AotiShimError naming what was being written.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple, TextIO

from aoti_shim.errors import AotiShimError, UsageError
from aoti_shim.guard import no_kernel_file, the_input

_STDOUT_NAMES = frozenset({"/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"})


class Destination(NamedTuple):
    """Where an output really goes: a regular file's path, or standard output."""

    path: str | None  # None: standard output
    shown: str  # "<what> <path as given>", for messages


def _is_stdout(path: str, st: os.stat_result | None) -> bool:
    if path in _STDOUT_NAMES:
        return True
    if st is None or stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return False
    try:
        return os.path.samestat(st, os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError):
        return False


def _inside(path: str, folder: str) -> bool:
    return os.path.commonpath([path, folder]) == folder


def destination(
    path: str | os.PathLike[str], *, what: str, inputs: Iterable[str | os.PathLike[str]] = ()
) -> Destination:
    """Decide where writing ``path`` goes, or refuse it (see the module docstring)."""
    given = os.fspath(path)
    shown = f"{what} {given}"
    if not given or "\0" in given:
        raise AotiShimError(f"{what} {given!r}: not a file name")
    try:
        st: os.stat_result | None = os.stat(given)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise AotiShimError(f"{shown}: cannot write: {e.strerror or e}") from None
    if _is_stdout(given, st):
        return Destination(None, shown)
    real = os.path.realpath(given)
    if st is None and os.path.islink(given):
        raise AotiShimError(f"{shown}: a dangling symbolic link (to {os.readlink(given)}); name a file to write")
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise AotiShimError(f"{shown}: cannot write: Is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise AotiShimError(f"{shown}: not a regular file; name a file to write")
    inputs = tuple(inputs)
    same = the_input(st, inputs) if st is not None else None
    if same is not None:  # by (st_dev, st_ino): through a symbolic link or a hard link too
        # A bad argument (README's exit codes: 2), as scan's -o inside the scanned environment.
        raise UsageError(f"{shown}: is also an input ({same}); write the output elsewhere")
    for item in inputs:
        source = os.fspath(item)
        if st is not None and os.path.isdir(source) and _inside(real, os.path.realpath(source)):
            raise UsageError(f"{shown}: lies in the input folder {source}; write the output elsewhere")
    folder = os.path.dirname(real)
    # Not "No such file or directory" (what mkstemp in /proc says), after the whole check.
    no_kernel_file(real, shown)
    if os.path.isdir(folder) and not _writable(folder):
        # Refused now, before a long read, not when the finished output cannot land.
        raise AotiShimError(f"{shown}: cannot write: Permission denied (in {folder})")
    return Destination(real, shown)


def _writable(folder: str) -> bool:
    """Whether a file can be created in ``folder``, by this process's effective ids."""
    effective = os.access in os.supports_effective_ids
    return os.access(folder, os.W_OK | os.X_OK, effective_ids=effective)


def silence_stdout() -> None:
    """Point standard output at /dev/null: after its reader left, the interpreter's last
    flush must not fail again (with a traceback, and exit status 120)."""
    _silence(sys.stdout)


def _silence(stream: TextIO | None) -> None:
    if stream is None:  # started with it closed: nothing to point elsewhere
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, AttributeError, ValueError):
        pass


def note(line: str) -> None:
    """One line on standard error. Its reader leaving (``2>&1 | head -1``) is no error: the
    command goes on to its verdict's exit status, as when standard output's reader leaves.
    Started with it closed (``2>&-``), nothing: print() would write it into the report."""
    if sys.stderr is None:
        return
    try:
        print(line, file=sys.stderr, flush=True)
    except BrokenPipeError:
        _silence(sys.stderr)


class StandardOutput:
    """A report's writer to standard output. When its reader leaves (``| head -1`` closed the
    pipe) it writes nothing more, quietly, and the command goes on to its verdict: the exit
    status is still the verdict's (``${PIPESTATUS[0]}``), as with no pipe."""

    def __init__(self) -> None:
        self.reader_left = False

    def write(self, text: str) -> None:
        if not self.reader_left:
            try:
                sys.stdout.write(text)
            except BrokenPipeError:
                self._left()

    def flush(self) -> None:
        if not self.reader_left:
            try:
                sys.stdout.flush()
            except BrokenPipeError:
                self._left()

    def _left(self) -> None:
        self.reader_left = True
        silence_stdout()


@contextlib.contextmanager
def replacing(
    path: str | os.PathLike[str],
    *,
    what: str,
    inputs: Iterable[str | os.PathLike[str]] = (),
    mode: int = 0o644,
    fsync: bool = False,
) -> Iterator[str]:
    """Yield a temp path to write the output to; when the block ends normally it replaces ``path``.

    The temp file exists (empty) when the block starts; it is gone when the block ends,
    whatever happens. ``what`` names the output in errors (``--output``, ``snapshot``).
    """
    import tempfile  # here: only a file written needs it (random, and its hashing, at import)

    dest = destination(path, what=what, inputs=inputs)
    private: str | None = None
    try:
        if dest.path is None:
            private = tempfile.mkdtemp(prefix="aoti-shim-out-")
            folder = private
        else:
            folder = os.path.dirname(dest.path)
        # A fixed short prefix: a name built from a 250-byte target name would be too long.
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".aoti-shim-", suffix=".tmp")
        os.close(fd)
    except OSError as e:
        if private is not None:
            shutil.rmtree(private, ignore_errors=True)
        raise AotiShimError(f"{dest.shown}: cannot write: {e.strerror or e} (in {folder})") from None
    try:
        yield tmp
        if dest.path is None:
            try:
                with open(tmp, "rb") as src:
                    sys.stdout.flush()
                    shutil.copyfileobj(src, sys.stdout.buffer, 1 << 20)
                    sys.stdout.buffer.flush()
            except BrokenPipeError:
                silence_stdout()  # its reader left: the command's verdict stands (StandardOutput's rule)
            return
        if fsync:
            with open(tmp, "rb+") as handle:
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)  # mkstemp makes 0600; the file is meant to be read by others
        os.replace(tmp, dest.path)
    except OSError as e:
        raise AotiShimError(f"{dest.shown}: cannot write: {e.strerror or e}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if private is not None:
            shutil.rmtree(private, ignore_errors=True)


def write_bytes_atomically(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    what: str,
    mode: int = 0o644,
    fsync: bool = False,
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> None:
    """Write ``data`` to ``path`` by :func:`replacing`."""
    with replacing(path, what=what, inputs=inputs, mode=mode, fsync=fsync) as tmp:
        try:
            with open(tmp, "wb") as handle:
                handle.write(data)
        except OSError as e:
            raise AotiShimError(f"{what} {os.fspath(path)}: cannot write: {e.strerror or e}") from None


def write_text_atomically(
    path: str | os.PathLike[str],
    text: str,
    *,
    what: str,
    mode: int = 0o644,
    fsync: bool = False,
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> None:
    """:func:`write_bytes_atomically` for text, encoded as UTF-8 with newlines as given."""
    write_bytes_atomically(path, text.encode("utf-8"), what=what, mode=mode, fsync=fsync, inputs=inputs)


@contextlib.contextmanager
def open_text_atomically(
    path: str | os.PathLike[str],
    *,
    what: str,
    mode: int = 0o644,
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> Iterator[Callable[[str], object]]:
    """Stream text to ``path`` by :func:`replacing`: yields a ``write(text)`` function; the
    file appears whole when the block ends, and not at all when it raises."""
    with replacing(path, what=what, inputs=inputs, mode=mode) as tmp:
        try:
            with open(tmp, "w", encoding="utf-8", newline="", buffering=1 << 20) as handle:
                yield handle.write
        except OSError as e:
            raise AotiShimError(f"{what} {os.fspath(path)}: cannot write: {e.strerror or e}") from None
