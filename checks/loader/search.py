"""Where ld.so finds a DT_NEEDED library, asked without running it.

glibc's order (elf/dl-load.c, _dl_map_object) for a name without a slash: the DT_RPATH of
the library that needs it and of the libraries that brought that one in (only when the
needing library has no DT_RUNPATH; a library with a DT_RUNPATH has no DT_RPATH to the
loader), ``LD_LIBRARY_PATH``, the needing library's DT_RUNPATH, ``/etc/ld.so.cache``, the
system folders (those two skipped for a library linked ``-z nodefaultlib``). ``$ORIGIN``,
``$LIB`` and ``$PLATFORM`` are expanded; a file of another ELF class or machine is skipped,
as the loader skips it. A name with a slash is a path (``$ORIGIN`` expanded, a relative
one from the working folder). The glibc-hwcaps and legacy hwcap subfolders of each folder
are not searched (a library only there is said to be missing).

Two places are the checker's own, after the loader's: the ``--library-path`` folders (the
deployment's, where this machine has none), and, for a library inside a wheel, the
environment's site folders: a run path such as ``$ORIGIN/../../nvidia/cu13/lib`` names
another distribution's folder, found where the wheel installs beside it.

The answer is one of: a file (to be read into the process), ``SYSTEM`` (the machine's own
libraries: the cache and the system folders, which define no shim names), ``UNSEEN`` (a
GPU driver library, or another distribution's that this environment lacks: the
deployment has it, this machine need not), or ``MISSING``.
"""

from __future__ import annotations

import os
import posixpath
import re
import sys
import sysconfig
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Mapping, Sequence

FILE, SYSTEM, UNSEEN, MISSING = "file", "system", "unseen", "missing"

# The GPU driver's user-space libraries: installed with the driver, never by a wheel, and
# absent on a machine without a GPU (a CI runner checking CUDA shims).
DRIVER_LIBRARY = re.compile(
    r"lib(cuda|cudadebugger|nvcuvid|nvoptix|nvidia-[A-Za-z0-9_-]+|nvidia_[A-Za-z0-9_-]+)\.so(\.[0-9]+)*"
)

# Libraries that make a process a CUDA one: the CUDA runtime, and torch's CUDA libraries that
# need it. Such a process has the GPU driver's libcuda.so.1 loaded (the runtime opens it).
CUDA_RUNTIME_LIBRARY = re.compile(r"lib(cudart|torch_cuda|c10_cuda)\.so(\.[0-9]+)*")

CACHE_FILE = "/etc/ld.so.cache"
_NEW_CACHE = b"glibc-ld.so.cache1.1"
_OLD_CACHE = b"ld.so-1.7.0"


def is_driver_library(name: str) -> bool:
    return bool(DRIVER_LIBRARY.fullmatch(os.path.basename(name)))


@dataclass(frozen=True)
class Found:
    how: str  # FILE, SYSTEM, UNSEEN or MISSING
    path: str | None = None
    # What found it ("RUNPATH", "--library-path"...), or for UNSEEN why it may be absent.
    via: str = ""


@dataclass(frozen=True)
class Needer:
    """A library whose DT_NEEDED entries are looked up: where it is and what it says.

    ``origin`` is its real folder ($ORIGIN). A wheel's member has ``member_dir``, its
    folder inside the wheel, and ``root``: the folder the wheel was extracted to, or for a
    member read as the wheel streamed (``streamed``; no ``origin`` then) the wheel's path."""

    origin: str | None
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    nodeflib: bool = False
    header: tuple[int, bool, int] | None = None
    root: str | None = None
    member_dir: str | None = None
    streamed: bool = False


@dataclass(frozen=True)
class SearchPaths:
    """The process-wide part of the search."""

    env: tuple[str, ...] = ()  # LD_LIBRARY_PATH
    cache: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # soname -> paths
    system: tuple[str, ...] = ()
    library_path: tuple[str, ...] = ()  # --library-path
    sites: tuple[str, ...] = ()  # where a wheel's members install
    lib: str = "lib"
    platform: str = ""

    @staticmethod
    def of_machine(library_path: Sequence[str] = (), sites: Sequence[str] = ()) -> SearchPaths:
        return SearchPaths(
            env=tuple(_split_env(os.environ.get("LD_LIBRARY_PATH", ""))),
            cache=ld_so_cache(),
            system=system_folders(),
            library_path=tuple(library_path),
            sites=tuple(sites),
            lib=lib_token(),
            platform=os.uname().machine,
        )


def _split_env(value: str) -> list[str]:
    # ld.so splits at ':' and ';'; an empty entry is the working folder.
    return [d or "." for d in re.split("[:;]", value)] if value else []


def _multiarch() -> str:
    return str(sysconfig.get_config_var("MULTIARCH") or "")


def lib_token() -> str:
    """What ``$LIB`` expands to: Debian's multiarch folder, else lib64 on a 64-bit system that has it."""
    ma = _multiarch()
    if ma and os.path.isdir(f"/usr/lib/{ma}"):
        return f"lib/{ma}"
    return "lib64" if sys.maxsize > 2**32 and os.path.isdir("/usr/lib64") else "lib"


def system_folders() -> tuple[str, ...]:
    """glibc's built-in system folders (``ld.so --help`` lists them)."""
    ma = _multiarch()
    if ma and os.path.isdir(f"/usr/lib/{ma}"):
        return (f"/lib/{ma}", f"/usr/lib/{ma}", "/lib", "/usr/lib")
    if sys.maxsize > 2**32 and os.path.isdir("/usr/lib64"):
        return ("/lib64", "/usr/lib64")
    return ("/lib", "/usr/lib")


@lru_cache(maxsize=1)
def ld_so_cache(path: str = CACHE_FILE) -> Mapping[str, tuple[str, ...]]:
    """soname -> paths, as ``/etc/ld.so.cache`` holds them (glibc's 1.1 format, after an
    old-format block or not); empty when the file is absent or unreadable, as ld.so then
    has no cache. Read once per process."""
    try:
        with open(path, "rb") as f:
            data = f.read(64 << 20)
    except OSError:
        return {}
    start = data.find(_NEW_CACHE)
    if start < 0 or len(data) < start + 48:
        return {}
    nlibs = int.from_bytes(data[start + 20 : start + 24], sys.byteorder)
    out: dict[str, list[str]] = {}

    def text(at: int) -> str:
        at += start
        end = data.find(b"\0", at)
        return data[at:end].decode("utf-8", "surrogateescape") if 0 <= at < end else ""

    for i in range(nlibs):
        at = start + 48 + i * 24
        if at + 24 > len(data):
            break
        flags = int.from_bytes(data[at : at + 4], sys.byteorder, signed=True)
        if flags & 0xFF not in (1, 3):  # ELF libraries, libc6 or not; the file header decides the rest
            continue
        key = int.from_bytes(data[at + 4 : at + 8], sys.byteorder)
        value = int.from_bytes(data[at + 8 : at + 12], sys.byteorder)
        name, where = text(key), text(value)
        if name and where:
            out.setdefault(name, []).append(where)
    return {k: tuple(v) for k, v in out.items()}


def header_of(path: str) -> tuple[int, bool, int] | None:
    """(ELF class, big-endian, machine) of a file, or None when it is no readable ELF file."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF" or head[4] not in (1, 2) or head[5] not in (1, 2):
        return None
    big = head[5] == 2
    return (64 if head[4] == 2 else 32, big, int.from_bytes(head[18:20], "big" if big else "little"))


def expand(folder: str, origin: str, paths: SearchPaths) -> str:
    for token, value in (("ORIGIN", origin), ("LIB", paths.lib), ("PLATFORM", paths.platform)):
        folder = folder.replace("${" + token + "}", value).replace("$" + token, value)
    return folder


class Search:
    """ld.so's search for one process: ``find(name, needer, loaders)``. ``members`` answers,
    for a streamed wheel, the folders holding its members and the members' names (to tell
    its own folders from another distribution's); such a member is found as ``WHEEL!NAME``."""

    def __init__(
        self, paths: SearchPaths, members: Callable[[str], tuple[frozenset[str], frozenset[str]]] = lambda wheel: (frozenset(), frozenset())
    ) -> None:
        self.paths = paths
        self._members = members

    def _fits(self, path: str, needer: Needer) -> bool:
        if not os.path.isfile(path):
            return False
        header = header_of(path)
        return header is not None and (needer.header is None or header == needer.header)

    def _in_folder(self, folder: str, name: str, needer: Needer, owner: Needer, unseen: list[str], via: str) -> str | None:
        """The file ``name`` in a run-path folder of ``owner`` (as expanded), wheels considered."""
        relative_to_origin = "$ORIGIN" in folder or "${ORIGIN}" in folder
        if owner.member_dir is None or not relative_to_origin:
            if owner.origin is None and relative_to_origin:
                return None
            return self._plain(expand(folder, owner.origin or "", self.paths), name, needer)
        # A wheel member: the folder inside the wheel, then where the wheel installs (each site).
        inside = os.path.normpath(expand(folder, owner.member_dir, self.paths))
        up = inside == ".." or inside.startswith("../")
        # The wheel's own folders: those it has, and any under the needer's own top-level
        # folder (its package); any other is another distribution's.
        same_top = not up and inside.split("/")[0] == owner.member_dir.split("/")[0] != "."
        if owner.streamed:
            dirs, files = self._members(owner.root or "")
            member = posixpath.normpath(posixpath.join(inside, name))
            if not up and member in files:
                return f"{owner.root}!{member}"  # the wheel's own member, named as the check names it
            own = same_top or (not up and inside in dirs)
        else:
            here = os.path.join(owner.root or "", inside)
            if not up and self._fits(os.path.join(here, name), needer):
                return os.path.join(here, name)
            own = same_top or (not up and os.path.isdir(here))
        for site in self.paths.sites:
            candidate = os.path.normpath(os.path.join(site, inside, name))
            if self._fits(candidate, needer):
                return candidate
        if not own:
            unseen.append(f"{via} {folder}")
        return None

    def _plain(self, folder: str, name: str, needer: Needer) -> str | None:
        candidate = os.path.join(folder, name)
        return candidate if self._fits(candidate, needer) else None

    def find(self, name: str, needer: Needer, loaders: Sequence[Needer] = ()) -> Found:
        """Where ``name`` (a DT_NEEDED entry of ``needer``, which ``loaders`` brought in,
        nearest first) is found."""
        unseen: list[str] = []
        if "/" in name:
            path = self._path_name(name, needer, unseen)
            if path is not None:
                return Found(FILE, path, "its path")
        else:
            steps: list[tuple[str, Needer, str]] = []
            if not needer.runpath:
                steps += [(d, owner, "RPATH") for owner in (needer, *loaders) for d in owner.rpath]
            for folder, owner, via in steps:
                hit = self._in_folder(folder, name, needer, owner, unseen, via)
                if hit is not None:
                    return Found(FILE, hit, via)
            for folder in self.paths.env:
                if "$ORIGIN" in folder or "${ORIGIN}" in folder:
                    continue  # the program's folder, which the check does not know
                hit = self._plain(expand(folder, "", self.paths), name, needer)
                if hit is not None:
                    return Found(FILE, hit, "LD_LIBRARY_PATH")
            for folder in needer.runpath:
                hit = self._in_folder(folder, name, needer, needer, unseen, "RUNPATH")
                if hit is not None:
                    return Found(FILE, hit, "RUNPATH")
            if not needer.nodeflib:
                for path in self.paths.cache.get(name, ()):
                    if self._fits(path, needer):
                        return Found(SYSTEM, path, "the ld.so cache")
                for folder in self.paths.system:
                    hit = self._plain(folder, name, needer)
                    if hit is not None:
                        return Found(SYSTEM, hit, "a system folder")
        for folder in self.paths.library_path:
            hit = self._plain(folder, os.path.basename(name), needer)
            if hit is not None:
                return Found(FILE, hit, "--library-path")
        if is_driver_library(name):
            return Found(UNSEEN, None, "a GPU driver library (the driver installs it, no wheel does)")
        if unseen:
            return Found(UNSEEN, None, f"another distribution's folder ({unseen[0]}), not installed here")
        return Found(MISSING)

    def _path_name(self, name: str, needer: Needer, unseen: list[str]) -> str | None:
        if "$" in name or not os.path.isabs(name):
            folder, base = os.path.split(name)
            if "$ORIGIN" in folder or "${ORIGIN}" in folder:
                return self._in_folder(folder, base, needer, needer, unseen, "DT_NEEDED")
            name = expand(name, needer.origin or "", self.paths)
        path = os.path.abspath(name)  # a relative path is the working folder's, as for ld.so
        return path if self._fits(path, needer) else None
