"""Where ld.so finds a DT_NEEDED library, asked without running it.

glibc's order (elf/dl-load.c, _dl_map_object) for a name without a slash: the DT_RPATH of
the library that needs it and of the libraries that brought that one in (only when the
needing library has no DT_RUNPATH; a library with a DT_RUNPATH has no DT_RPATH to the
loader), ``LD_LIBRARY_PATH``, the needing library's DT_RUNPATH, ``/etc/ld.so.cache``, the
system folders (those two skipped for a library linked ``-z nodefaultlib``). Dynamic string tokens
(``$ORIGIN``, ``$LIB``, ``$PLATFORM``, braced or not, whole tokens only) are expanded as
the loader expands them; ``$ORIGIN`` is the folder of the path a library was opened by,
symlinks not resolved. Each folder's ``glibc-hwcaps`` subfolders for the levels this
machine's loader supports, and its legacy hwcap subfolders, are searched before it. The
first candidate file that is no loadable ELF file for the loader (not ELF, ``ET_REL``, a
bad OSABI, ABI version or identification padding, another data encoding) stops the search:
a load failure (``FAILED``), as for the loader; only another ELF class or machine is skipped.
A library without ``DT_RUNPATH`` searches the program's ``DT_RPATH`` after its loaders'.

What the machine's loader says of itself (``ld.so --help``: ``$PLATFORM``, the hwcaps
levels it searches) comes from the machine the check runs on (:func:`loader_facts`); each
answer names the facts of this machine it depended on (``Found.facts``, :data:`FACTS`), so
a report can say so when the deployment is another machine.

Two places are the checker's own, after the loader's: the ``--library-path`` folders (the
deployment's, where this machine has none), and, for a library inside a wheel, the
environment's site folders: a run path such as ``$ORIGIN/../../nvidia/cu13/lib`` names
another distribution's folder, found where the wheel installs beside it.

The answer is one of: a file (to be read into the process), ``SYSTEM`` (the machine's own
libraries: the cache and the system folders, which define no shim names), ``UNSEEN`` (a
GPU driver library, or another distribution's that this environment lacks: the
deployment has it, this machine need not), ``FAILED`` (the first file by that name is
none the loader can load) or ``MISSING``.
"""

from __future__ import annotations

import errno
import os
import posixpath
import re
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal, NamedTuple

FILE, SYSTEM, UNSEEN, MISSING, FAILED = "file", "system", "unseen", "missing", "failed"

# The loader facts the check takes from the machine it runs on (a deployment elsewhere may
# differ): $PLATFORM, $LIB, the glibc-hwcaps (and legacy) subfolders searched,
# LD_LIBRARY_PATH, the ld.so cache, the system folders, and the process's libc.
PLATFORM_FACT, LIB_FACT, HWCAPS_FACT, ENV_FACT = "platform", "lib", "hwcaps", "LD_LIBRARY_PATH"
CACHE_FACT, SYSTEM_FACT, LIBC_FACT = "ld_so_cache", "system_folders", "libc"
FACTS = (PLATFORM_FACT, LIB_FACT, HWCAPS_FACT, ENV_FACT, CACHE_FACT, SYSTEM_FACT, LIBC_FACT)

# The GPU driver's user-space libraries: installed with the driver, never by a wheel, and
# absent on a machine without a GPU (a CI runner checking CUDA shims).
DRIVER_LIBRARY = re.compile(
    r"lib(cuda|cudadebugger|nvcuvid|nvoptix|nvidia-[A-Za-z0-9_-]+|nvidia_[A-Za-z0-9_-]+)\.so(\.[0-9]+)*"
)

# glibc's own libraries (libc, its loader, libm, the stubs of libdl and libpthread...): the
# process's libc, whichever folder holds them.
GLIBC_LIBRARY = re.compile(
    r"(libc|libm|libdl|libpthread|librt|libutil|libresolv|libanl|ld-linux[A-Za-z0-9_.-]*)\.so(\.[0-9]+)*"
)

# Libraries that make a process a CUDA one: the CUDA runtime, and torch's CUDA libraries that
# need it. Such a process has the GPU driver's libcuda.so.1 loaded (the runtime opens it).
CUDA_RUNTIME_LIBRARY = re.compile(r"lib(cudart|torch_cuda|c10_cuda)\.so(\.[0-9]+)*")

CACHE_FILE = "/etc/ld.so.cache"
_NEW_CACHE = b"glibc-ld.so.cache1.1"
_OLD_CACHE = b"ld.so-1.7.0"


def is_driver_library(name: str) -> bool:
    return bool(DRIVER_LIBRARY.fullmatch(os.path.basename(name)))


class Found(NamedTuple):
    """Where the loader finds one DT_NEEDED entry, or why it finds none."""

    how: str  # FILE, SYSTEM, UNSEEN, MISSING or FAILED
    path: str | None = None
    # What found it ("RUNPATH", "--library-path"...), for UNSEEN why it may be absent, for
    # FAILED where it found the file it cannot load.
    via: str = ""
    # FAILED: why the loader cannot load it (its error, "invalid ELF header"...).
    why: str = ""
    # The facts of this machine (FACTS) the answer depended on.
    facts: frozenset[str] = frozenset()


class Needer(NamedTuple):
    """A library whose DT_NEEDED entries are looked up: where it is and what it says.

    ``origin`` is its folder ($ORIGIN): that of the path it was opened by, symlinks not resolved. A wheel's member has
    ``member_dir``, its
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
    platform: str = ""  # $PLATFORM; empty: unknown, a folder naming it is dropped
    # Subfolders searched before each folder, in order ("glibc-hwcaps/x86-64-v3", ...).
    subfolders: tuple[str, ...] = ("",)

    @staticmethod
    def of_machine(library_path: Sequence[str] = (), sites: Sequence[str] = ()) -> SearchPaths:
        return SearchPaths(
            env=tuple(_split_env(os.environ.get("LD_LIBRARY_PATH", ""))),
            cache=ld_so_cache(),
            system=system_folders(),
            library_path=tuple(library_path),
            sites=tuple(sites),
            lib=lib_token(),
            platform=loader_facts().platform,
            subfolders=loader_facts().subfolders,
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


class Unloadable(Exception):
    """The first file by a needed name is none the loader can load: the search stops."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path, self.why = path, why


class _ListEnds(Exception):
    """A folder's file by the name is there but cannot be opened for another reason than
    ENOENT or EACCES (a symlink loop, a file where a folder should be): glibc's open_path
    gives up the rest of that search list; the next list (RUNPATH, the cache, ...) is still
    searched."""


def _ends_list(folder: str, name: str) -> bool:
    """Whether ``name`` in ``folder`` (an existing folder, so open_path's here_any) fails to
    open with an errno that ends the list (open_path: not ENOENT, not EACCES)."""
    if not os.path.isdir(folder):
        return False
    try:
        with open(os.path.join(folder, name), "rb"):
            return False
    except OSError as e:
        return e.errno not in (errno.ENOENT, errno.EACCES)


# glibc's own ABI versions for ELFOSABI_GNU files (LIBC_ABI_MAX): 0 plain, 1 unique, 2 ifunc, 3 absolute.
_GNU_ABI_VERSIONS = 4
_ELFOSABI_SYSV, _ELFOSABI_GNU = 0, 3


def verify(path: str, want: tuple[int, bool, int] | None) -> bool:
    """Whether the loader takes ``path`` for a process of header ``want``, as glibc's
    open_verify decides: False for no file there, or one of another ELF class or machine
    (skipped: the search goes on); :class:`Unloadable` for any other file it cannot load."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except IsADirectoryError:
        raise Unloadable(
            path, "cannot read file data: Is a directory"
        ) from None  # (the loader opens it, then cannot read)
    except OSError:
        return False  # no file there, or unreadable: the loader goes on too
    # (The length first, as open_verify reads a whole header of the loader's own class.)
    if len(head) < (52 if want is not None and want[0] == 32 else 64):
        raise Unloadable(path, "file too short")
    if head[:4] != b"\x7fELF":
        raise Unloadable(path, "invalid ELF header")
    big = head[5] == 2
    if head[4] not in (1, 2) or want is not None and (64 if head[4] == 2 else 32) != want[0]:
        return False
    if head[5] not in (1, 2) or want is not None and big != want[1]:
        raise Unloadable(path, f"ELF file data encoding not {'big' if want and want[1] else 'little'}-endian")
    if head[6] != 1:
        raise Unloadable(path, "ELF file version ident does not match current one")
    osabi, abiversion = head[7], head[8]
    if osabi not in (_ELFOSABI_SYSV, _ELFOSABI_GNU):
        raise Unloadable(path, "ELF file OS ABI invalid")
    if abiversion != 0 and not (osabi == _ELFOSABI_GNU and abiversion < _GNU_ABI_VERSIONS):
        raise Unloadable(path, "ELF file ABI version invalid")
    if any(head[9:16]):
        raise Unloadable(path, "nonzero padding in e_ident")
    order: Literal["big", "little"] = "big" if big else "little"
    if want is not None and int.from_bytes(head[18:20], order) != want[2]:
        return False
    if int.from_bytes(head[16:18], order) not in (2, 3):  # ET_EXEC, ET_DYN
        raise Unloadable(path, "only ET_DYN and ET_EXEC can be loaded")
    return True


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


_TOKEN = re.compile(r"\$(?:\{(ORIGIN|LIB|PLATFORM)\}|(ORIGIN|LIB|PLATFORM)(?![A-Za-z0-9_]))")


def has_token(text: str, token: str) -> bool:
    """Whether ``text`` holds the dynamic string token ``token`` (a whole token, as glibc's is_dst reads it)."""
    return any((m.group(1) or m.group(2)) == token for m in _TOKEN.finditer(text))


def absolute(path: str) -> str:
    """``path`` as the loader opens it: a relative one joined to the working folder, nothing
    normalised (``link/../deps`` is the kernel's to resolve, from the link's target; a
    lexical os.path.abspath names another file)."""
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)


def expand(folder: str, origin: str | None, paths: SearchPaths) -> str | None:
    """``folder`` with its dynamic string tokens replaced as glibc's _dl_dst_substitute
    replaces them: ``$ORIGIN``, ``$LIB``, ``$PLATFORM`` or their braced forms, each a whole
    token (``$ORIGIN_deps`` is a literal folder). None when a token's value is unknown (an
    empty one too): the loader drops such a folder."""
    values = {"ORIGIN": origin, "LIB": paths.lib, "PLATFORM": paths.platform}
    unknown = False

    def value(m: re.Match[str]) -> str:
        nonlocal unknown
        got = values[m.group(1) or m.group(2)]
        unknown = unknown or not got
        return got or ""

    out = _TOKEN.sub(value, folder)
    return None if unknown else out


class LoaderFacts(NamedTuple):
    """What this machine's dynamic linker says of itself."""

    platform: str = ""  # AT_PLATFORM, $PLATFORM's value
    # The glibc-hwcaps and legacy hwcap subfolders it searches, in order, "" (the folder) last.
    subfolders: tuple[str, ...] = ("",)


def parse_loader_help(text: str) -> tuple[str, tuple[str, ...]]:
    """``ld.so --help``'s platform (the legacy subfolder marked AT_PLATFORM) and the
    glibc-hwcaps levels it searches (glibc 2.33+), in priority order."""
    platform, levels, section = "", [], ""
    for line in text.splitlines():
        if line.startswith("Subdirectories of glibc-hwcaps"):
            section = "hwcaps"
        elif line.startswith("Legacy HWCAP subdirectories"):
            section = "legacy"
        elif not line.startswith("  "):
            section = ""
        elif section:
            name, _, note = line.strip().partition(" ")
            if "AT_PLATFORM" in note:
                platform = name
            if section == "hwcaps" and "searched" in note:
                levels.append(name)
    return platform, tuple(levels)


# A folder no machine has: the loader's trace of its search there names the subfolders.
_MARKER = "/nonexistent-aoti-shim-search"


def parse_search_trace(text: str, marker: str = _MARKER) -> tuple[str, ...] | None:
    """The subfolders of ``marker`` that an ``LD_DEBUG=libs`` trace searched (its
    ``LD_LIBRARY_PATH`` line), in order, once each, "" (the folder itself) among them."""
    for line in text.splitlines():
        at = line.find("search path=")
        if at < 0 or "(LD_LIBRARY_PATH)" not in line:
            continue
        folders = line[at + len("search path=") :].split("\t")[0].strip().split(":")
        subs = [f[len(marker) :].lstrip("/") for f in folders if f == marker or f.startswith(marker + "/")]
        return tuple(dict.fromkeys(subs))
    return None


def _interpreter() -> str | None:
    """The running Python's dynamic linker (its PT_INTERP), the loader the check asks."""
    try:
        with open(os.path.realpath(sys.executable), "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None
            phoff, phentsize, phnum = (
                int.from_bytes(head[32:40], "little"),
                int.from_bytes(head[54:56], "little"),
                int.from_bytes(head[56:58], "little"),
            )
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            for i in range(phnum):
                ph = table[i * phentsize : (i + 1) * phentsize]
                if int.from_bytes(ph[0:4], "little") == 3:  # PT_INTERP
                    f.seek(int.from_bytes(ph[8:16], "little"))
                    return f.read(int.from_bytes(ph[32:40], "little")).rstrip(b"\0").decode()
    except (OSError, UnicodeDecodeError):
        return None
    return None


def _ask(interpreter: str, args: list[str], env: dict[str, str] | None = None) -> str:
    # errors="replace": `ld.so --help` echoes LD_LIBRARY_PATH, which may hold any bytes.
    try:
        done = subprocess.run(
            [interpreter, *args], capture_output=True, text=True, errors="replace", timeout=30, check=False, env=env
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout + done.stderr


@lru_cache(maxsize=1)
def loader_facts() -> LoaderFacts:
    """This machine's loader's platform (``ld.so --help``: never ``uname -m``; on AVX2
    Intel, glibc before 2.37 says ``haswell``) and the subfolders it searches in each
    folder (its own trace of a search, ``ld.so --list`` under ``LD_DEBUG=libs``: it runs no
    constructor); none where it cannot be asked."""
    interpreter = _interpreter()
    if interpreter is None:
        return LoaderFacts()
    platform, levels = parse_loader_help(_ask(interpreter, ["--help"]))
    env = {"LD_DEBUG": "libs", "LD_LIBRARY_PATH": _MARKER, "PATH": os.environ.get("PATH", "")}
    traced = parse_search_trace(_ask(interpreter, ["--list", os.path.realpath(sys.executable)], env))
    if traced is None:  # (a loader that traces no search: the glibc-hwcaps levels it lists)
        traced = (*(f"glibc-hwcaps/{n}" for n in levels), "")
    return LoaderFacts(platform, traced)


class Search:
    """ld.so's search for one process: ``find(name, needer, loaders)``. ``members`` answers,
    for a streamed wheel, the folders holding its members and the members' names (to tell
    its own folders from another distribution's); such a member is found as ``WHEEL!NAME``."""

    def __init__(
        self,
        paths: SearchPaths,
        members: Callable[[str], tuple[frozenset[str], frozenset[str]]] = lambda wheel: (frozenset(), frozenset()),
    ) -> None:
        self.paths = paths
        self._members = members
        self._facts: set[str] = set()  # the machine's facts the search under way used

    def _expand(self, folder: str, origin: str | None) -> str | None:
        """:func:`expand`, noting the machine's ``$PLATFORM`` or ``$LIB`` when ``folder`` names them."""
        for token, fact in (("PLATFORM", PLATFORM_FACT), ("LIB", LIB_FACT)):
            if has_token(folder, token):
                self._facts.add(fact)
        return expand(folder, origin, self.paths)

    def _fits(self, path: str, needer: Needer) -> bool:
        return verify(path, needer.header)

    def _in_folder(
        self, folder: str, name: str, needer: Needer, owner: Needer, unseen: list[str], via: str
    ) -> str | None:
        """The file ``name`` in a run-path folder of ``owner`` (as expanded), wheels considered."""
        relative_to_origin = has_token(folder, "ORIGIN")
        if owner.member_dir is None or not relative_to_origin:
            expanded = self._expand(folder, owner.origin)
            return None if expanded is None else self._plain(expanded, name, needer)
        # A wheel member: the folder inside the wheel, then where the wheel installs (each site).
        expanded = self._expand(folder, owner.member_dir)
        if expanded is None:
            return None
        inside = os.path.normpath(expanded)
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
        """``name`` in ``folder``'s hwcaps subfolders, then in it (the first loadable one)."""
        for sub in self.paths.subfolders:
            candidate = os.path.join(folder, sub, name) if sub else os.path.join(folder, name)
            if self._fits(candidate, needer):
                if sub:
                    self._facts.add(HWCAPS_FACT)
                return candidate
        if _ends_list(folder, name):  # (errno is the last candidate's: the folder's own)
            raise _ListEnds(folder)
        return None

    def find(self, name: str, needer: Needer, loaders: Sequence[Needer] = (), program: Needer | None = None) -> Found:
        """Where ``name`` (a DT_NEEDED entry of ``needer``, which ``loaders`` brought in,
        nearest first, in a process whose program is ``program``) is found."""
        self._facts = set()
        try:
            found = self._find(name, needer, loaders, program)
        except Unloadable as e:
            found = Found(FAILED, e.path, "its first candidate", e.why)
        if found.how == MISSING and "/" not in name:
            self._facts |= self._looked_in(needer)
        return found._replace(facts=frozenset(self._facts)) if self._facts else found

    def _looked_in(self, needer: Needer) -> set[str]:
        """The facts of this machine that a search finding nothing depended on: every place it
        looked (another machine's cache or hwcaps level may hold the file)."""
        facts = {HWCAPS_FACT} if any(self.paths.subfolders) else set()
        facts |= {ENV_FACT} if self.paths.env else set()
        return facts if needer.nodeflib else facts | {CACHE_FACT, SYSTEM_FACT}

    def _find(self, name: str, needer: Needer, loaders: Sequence[Needer], program: Needer | None) -> Found:
        unseen: list[str] = []
        if "/" in name:
            path = self._path_name(name, needer, unseen)
            if path is not None:
                return Found(FILE, path, "its path")
        else:
            # The program's DT_RPATH after its loaders' (glibc's _dl_map_object: the main map's).
            chain: tuple[Needer, ...] = (needer, *loaders)
            chain += (program,) if program is not None and all(program is not n for n in chain) else ()
            # Each owner's DT_RPATH is one search list, as are LD_LIBRARY_PATH, the
            # RUNPATH and the system folders: a _ListEnds gives up the rest of its list.
            lists: list[tuple[str, list[tuple[str, Needer]]]] = []
            for owner in chain if not needer.runpath else ():
                lists.append(("RPATH", [(d, owner) for d in owner.rpath]))
            for via, entries in lists:
                try:
                    for folder, owner in entries:
                        hit = self._in_folder(folder, name, needer, owner, unseen, via)
                        if hit is not None:
                            return Found(FILE, hit, via)
                except _ListEnds:
                    pass
            try:
                for folder in self.paths.env:
                    # ($ORIGIN there is the program's folder, which the check does not know: dropped.)
                    expanded = self._expand(folder, None)
                    hit = self._plain(expanded, name, needer) if expanded is not None else None
                    if hit is not None:
                        self._facts.add(ENV_FACT)
                        return Found(FILE, hit, "LD_LIBRARY_PATH")
            except _ListEnds:
                pass
            try:
                for folder in needer.runpath:
                    hit = self._in_folder(folder, name, needer, needer, unseen, "RUNPATH")
                    if hit is not None:
                        return Found(FILE, hit, "RUNPATH")
            except _ListEnds:
                pass
            if not needer.nodeflib:
                for path in self.paths.cache.get(name, ()):
                    if self._fits(path, needer):
                        self._facts.add(CACHE_FACT)
                        return Found(SYSTEM, path, "the ld.so cache")
                try:
                    for folder in self.paths.system:
                        hit = self._plain(folder, name, needer)
                        if hit is not None:
                            self._facts.add(SYSTEM_FACT)
                            return Found(SYSTEM, hit, "a system folder")
                except _ListEnds:
                    pass
        try:
            for folder in self.paths.library_path:
                hit = self._plain(folder, os.path.basename(name), needer)
                if hit is not None:
                    return Found(FILE, hit, "--library-path")
        except _ListEnds:
            pass
        if is_driver_library(name):
            return Found(UNSEEN, None, "a GPU driver library (the driver installs it, no wheel does)")
        if unseen:
            return Found(UNSEEN, None, f"another distribution's folder ({unseen[0]}), not installed here")
        return Found(MISSING)

    def _path_name(self, name: str, needer: Needer, unseen: list[str]) -> str | None:
        if "$" in name or not os.path.isabs(name):
            folder, base = os.path.split(name)
            if has_token(folder, "ORIGIN"):
                return self._in_folder(folder, base, needer, needer, unseen, "DT_NEEDED")
            expanded = self._expand(name, needer.origin)
            if expanded is None:
                return None
            name = expanded
        path = absolute(name)  # a relative path is the working folder's, as for ld.so
        return path if self._fits(path, needer) else None
