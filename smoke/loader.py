"""Load a blob from a private copy, one per load.

Two loads of the same blob must never share a path: upstream's crash came from a
second load overwriting the file that the first was still running. Each load here
gets its own anonymous file (``memfd_create``, opened by ``dlopen`` through
``/proc/self/fd``) or, where that is missing, a fresh ``O_EXCL`` mode-0600 file in
a private directory, removed when the handle is closed.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

from aoti_shim.errors import InputError

_COPY_CHUNK = 1 << 20


@dataclass(frozen=True)
class LoadSettings:
    # RTLD_NOW: a missing symbol fails the load with a message instead of
    # aborting the process at its first call.
    mode: int = os.RTLD_NOW | os.RTLD_LOCAL
    # None: memfd where the kernel has it; False forces the private-file copy.
    use_memfd: bool | None = None
    # Parent of the private directory for the file copy (default: the temp dir).
    scratch_dir: Path | None = None


def memfd_available() -> bool:
    return hasattr(os, "memfd_create") and Path("/proc/self/fd").is_dir()


class LoadedBlob:
    """A dlopen'd private copy of a blob; ``close()`` unloads and removes the copy."""

    def __init__(self, source: Path, settings: LoadSettings = LoadSettings()) -> None:
        self.source = Path(source)
        self._fd = -1
        self._private_dir: str | None = None
        use_memfd = memfd_available() if settings.use_memfd is None else settings.use_memfd
        try:
            self.path = self._memfd_copy() if use_memfd else self._file_copy(settings.scratch_dir)
            try:
                self.library = ctypes.CDLL(self.path, mode=settings.mode)
            except OSError as e:
                raise InputError(f"cannot load {self.source}: {e}") from None
        except BaseException:
            _release(None, self._fd, self._private_dir)
            raise
        # Unload and remove the copy even if the owner forgets close().
        self._finalizer = weakref.finalize(self, _release, self.library._handle, self._fd, self._private_dir)

    @property
    def uses_memfd(self) -> bool:
        return self._private_dir is None

    def _memfd_copy(self) -> str:
        try:
            self._fd = os.memfd_create(f"aoti-blob-{self.source.name}", os.MFD_CLOEXEC)
        except OSError as e:
            raise InputError(f"cannot copy blob {self.source}: memfd_create: {e.strerror or e}") from None
        self._copy_into(self._fd)
        return f"/proc/self/fd/{self._fd}"

    def _file_copy(self, scratch_dir: Path | None) -> str:
        # mkdtemp makes a fresh 0700 directory; O_EXCL refuses any file already there.
        try:
            self._private_dir = tempfile.mkdtemp(prefix="aoti-shim-blob-", dir=scratch_dir)
            path = os.path.join(self._private_dir, self.source.name)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except OSError as e:
            raise InputError(
                f"cannot copy blob {self.source} into {scratch_dir or tempfile.gettempdir()}: {e.strerror or e}"
            ) from None
        self._copy_into(self._fd)
        os.close(self._fd)
        self._fd = -1
        return path

    def _copy_into(self, fd: int) -> None:
        try:
            src = open(self.source, "rb")
        except OSError as e:
            raise InputError(f"cannot read blob {self.source}: {e.strerror}") from None
        with src:
            while True:
                try:
                    chunk = src.read(_COPY_CHUNK)
                except OSError as e:
                    raise InputError(f"cannot read blob {self.source}: {e.strerror}") from None
                if not chunk:
                    return
                view = memoryview(chunk)
                while view:  # os.write may write less than asked (signals, quotas)
                    try:
                        written = os.write(fd, view)
                    except OSError as e:
                        raise InputError(f"cannot write the private copy of blob {self.source}: {e.strerror}") from None
                    if written == 0:
                        raise InputError(f"cannot write the private copy of blob {self.source}: no progress")
                    view = view[written:]

    def close(self) -> None:
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def __enter__(self) -> LoadedBlob:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_dlclose_lock = threading.Lock()
# memfd descriptors of copies that stayed mapped after dlclose (NODELETE, unique
# symbols, libgomp): the dynamic linker knows those libraries by their
# /proc/self/fd/N name, so that number must never name another blob.
_pinned_fds: list[int] = []


def _still_loaded(path: str) -> bool:
    try:
        again = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return False
    import _ctypes

    _ctypes.dlclose(again._handle)
    return True


def _release(handle: int | None, fd: int, private_dir: str | None) -> None:
    pinned = False
    if handle is not None:
        import _ctypes

        with _dlclose_lock:
            _ctypes.dlclose(handle)
            if fd >= 0 and private_dir is None and _still_loaded(f"/proc/self/fd/{fd}"):
                _pinned_fds.append(fd)
                pinned = True
    if fd >= 0 and not pinned:
        os.close(fd)
    if private_dir is not None:
        shutil.rmtree(private_dir, ignore_errors=True)


def load_private_copy(blob: Path, settings: LoadSettings = LoadSettings()) -> LoadedBlob:
    return LoadedBlob(blob, settings)
