"""Read a Python environment as the loader will meet it: its distributions and their ELF files.

An environment is the running interpreter's (default), another interpreter's (asked in a
child for its paths), site folders, or wheels. A distribution's files come from its
``importlib.metadata`` RECORD; an editable one's (``pip install -e``) also from the folders
its ``.pth`` files or finder module point at. Every ELF file under a site folder that no
distribution lists is kept too, as nobody's.

Nothing is written into the environment and nothing of it is imported or run (``.pth``
``import`` lines are skipped, never executed; an interpreter is asked with site.py off). A file that a RECORD lists
but that cannot
be read, a RECORD that cannot be parsed, a folder that cannot be listed, a looping link or
a file named like a shared library that is not ELF is an :class:`InputError` (one line):
skipping it would judge less than the environment holds and still say OK.
"""

from __future__ import annotations

import ast
import csv
import glob
import io
import json
import os
import re
import stat
import subprocess
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import compress, filterfalse, repeat
from operator import methodcaller

from aoti_shim.checks.elf.layout import ELF_MAGIC, file_kind
from aoti_shim.checks.inputs.collect import (
    MAX_WALK_DEPTH,
    NATIVE_SUFFIXES,
    Workspace,
    extract_member,
    native_member,
    of_platform,
    open_wheel,
    read_member,
)
from aoti_shim.checks.inputs.magic import MACHO, PE, has_native_magic, path_kind
from aoti_shim.checks.scan.interpreter import InterpreterPaths, running_interpreter, site_entries
from aoti_shim.errors import InputError, UsageError

# importlib.metadata's Prepared.normalize: runs of "-", "_" and "." are one separator.
_SEPARATORS = re.compile(r"[-_.]+")

# Folders whose files no RECORD lists and that hold no loaded library.
_SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", ".tox", ".nox", "node_modules"})
# What marks the folder an environment lives in: a venv's, a conda environment's.
ENVIRONMENT_MARKS = ("pyvenv.cfg", "conda-meta")
# Enough for the ELF header and the program headers of anything a linker writes.
_FIRST_BYTES = 4096
# What a linker script named libX.so starts with (GNU ld's INPUT/GROUP files).
_LINKER_SCRIPT_STARTS = (b"/* GNU ld script", b"INPUT(", b"GROUP(", b"OUTPUT_FORMAT(")
# The interpreter's answer about its paths: the same code runs in a child (--python) and here.
# Asked with -S: the interpreter's site folders (its venv's, found the way site.py finds
# pyvenv.cfg), without site.py running a single .pth file (their import lines run anyone's
# code, and may write bytecode into the environment: site.venv() itself reads them); the .pth
# folders are then read here, as for a site folder.
_ASK_PATHS = (
    "import json, os, site, sys\n"
    "prefixes = [sys.prefix, sys.exec_prefix]\n"
    "here = os.path.dirname(sys.executable)\n"
    "for conf in (os.path.join(here, 'pyvenv.cfg'), os.path.join(os.path.dirname(here), 'pyvenv.cfg')):\n"
    "    if os.path.isfile(conf):\n"
    "        with open(conf, encoding='utf-8', errors='replace') as f:\n"
    "            keys = dict((k.strip().lower(), v.strip().lower()) for k, _, v in (l.partition('=') for l in f) if "
    "_)\n"
    "        own = [os.path.dirname(conf)]\n"
    "        prefixes = own + prefixes if keys.get('include-system-site-packages') == 'true' else own\n"
    "        break\n"
    "print(json.dumps({'executable': sys.executable, 'version': '%d.%d.%d' % sys.version_info[:3],\n"
    "                  'path': site.getsitepackages(prefixes), 'stdlib': []}))\n"
)
CHILD_TIMEOUT = 60


@dataclass(frozen=True)
class LibraryFile:
    """One library of the environment: where it is, how reports name it, what it is."""

    path: str  # on disk; a wheel member: "wheel!member"
    display: str  # relative to its site folder (or "wheel!member")
    kind: str  # ELF: "shared" or "executable"; a Mach-O dylib or bundle: "macho"; a DLL: "pe"
    # A wheel member read as it streamed: the image is in hand (see inputs.Artifact).
    member: object = None


@dataclass(frozen=True)
class Distribution:
    name: str
    version: str
    location: str  # the site folder, or the wheel
    libraries: tuple[LibraryFile, ...]
    editable: bool = False
    source: str = "RECORD"  # "RECORD" or "wheel"
    # Its Mach-O and PE libraries (kind "macho" or "pe"): a macOS or Windows venv's, read by
    # checks/native (and its DLLs by base name: Windows keeps one module of a name per process).
    native: tuple[LibraryFile, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


@dataclass(frozen=True)
class Environment:
    description: str  # "interpreter /usr/bin/python3 (3.11.7)", "site folder ...", "wheels"
    site_folders: tuple[str, ...]
    distributions: tuple[Distribution, ...]
    # ELF libraries under a site folder that no distribution lists.
    unowned: tuple[LibraryFile, ...] = ()
    # ELF files that are no library for the loader: (display, kind) (objects, programs exporting nothing).
    ignored: tuple[tuple[str, str], ...] = field(default=())
    # Mach-O and PE libraries under a site folder that no distribution lists.
    unowned_native: tuple[LibraryFile, ...] = ()


# -- where an environment's site folders are ----------------------------------------------


def ask_interpreter(python: str) -> InterpreterPaths:
    """``python``'s site folders and the folders their ``.pth`` files add, asked in a child in
    isolated mode (no current folder, no ``PYTHON*`` variables, no user site), without site.py
    (``-S``) and writing no bytecode (``-B``): what a job running that interpreter imports from,
    and nothing of the environment run."""
    try:
        done = subprocess.run(
            [python, "-I", "-S", "-B", "-c", _ASK_PATHS],
            capture_output=True,
            timeout=CHILD_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise InputError(f"--python {python}: no answer within {CHILD_TIMEOUT} s") from None
    except OSError as e:
        raise InputError(f"--python {python}: cannot run: {e.strerror or e}") from None
    if done.returncode != 0:
        last = (done.stderr.decode("utf-8", "backslashreplace").strip().splitlines() or ["no message"])[-1]
        raise InputError(f"--python {python}: exited {done.returncode} when asked for its paths: {last}")
    try:
        answer = json.loads(done.stdout.decode("utf-8"))
        path, stdlib = answer["path"], answer["stdlib"]
        executable, version = str(answer["executable"]), str(answer["version"])
        if not isinstance(path, list) or not isinstance(stdlib, list):
            raise TypeError("not lists")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise InputError(
            f"--python {python}: not a Python interpreter (its answer about its paths is not JSON)"
        ) from None
    sites = site_entries(path, stdlib)
    return InterpreterPaths(
        executable, version, tuple(dict.fromkeys([*sites, *(f for site in sites for f in pth_folders(site))]))
    )


def venv_site_folders(folder: str) -> tuple[str, ...] | None:
    """A virtual environment's site folders (``lib/pythonX.Y/site-packages``), when
    ``folder`` is one (it holds ``pyvenv.cfg``); else None."""
    if not os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
        return None
    found: list[str] = []
    for lib in ("lib", "lib64"):
        base = os.path.join(folder, lib)
        try:
            names = sorted(os.listdir(base))
        except OSError:
            continue
        for name in names:
            site = os.path.join(base, name, "site-packages")
            if (
                name.startswith("python")
                and os.path.isdir(site)
                and os.path.realpath(site) not in map(os.path.realpath, found)
            ):
                found.append(site)
    return tuple(found)


def site_folder_below(folder: str) -> str | None:
    """A site folder under ``folder`` (``site-packages``, ``pythonX.Y/site-packages``,
    ``lib/pythonX.Y/site-packages``) when ``folder`` itself holds no distribution: a venv's
    ``lib/`` given for its site folder, whose libraries would read as no distribution's
    (torch's own as an unprefixed provider hijacking torch)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    if any(n.endswith((".dist-info", ".egg-info")) for n in names):
        return None
    for pattern in ("site-packages", "python*/site-packages", "lib*/python*/site-packages"):
        found = sorted(glob.glob(os.path.join(glob.escape(folder), pattern)))
        if found:
            return found[0]
    return None


def pth_folders(site: str) -> list[str]:
    """The folders ``site``'s ``.pth`` files add, as ``site.addsitedir`` would, without
    running their ``import`` lines."""
    try:
        names = sorted(n for n in os.listdir(site) if n.endswith(".pth"))
    except OSError as e:
        raise InputError(f"{site}: cannot list folder: {e.strerror or e}") from None
    out: list[str] = []
    for name in names:
        out.extend(_pth_lines(os.path.join(site, name), site))
    return out


def _pth_lines(pth: str, site: str) -> list[str]:
    try:
        with open(pth, "rb") as f:
            raw = f.read(1 << 20)
    except OSError as e:
        raise InputError(f"{pth}: cannot read: {e.strerror or e}") from None
    out = []
    for line in raw.decode("utf-8", "surrogateescape").splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "import ", "import\t")):
            continue
        folder = os.path.normpath(os.path.join(site, line))
        if os.path.isdir(folder):
            out.append(folder)
    return out


# -- distributions ----------------------------------------------------------------------------


def _named_like_library(name: str) -> bool:
    """A file the loader would map by its name: ``x.so`` or ``x.so.N``."""
    return name.endswith(".so") or ".so." in name


def _may_be_elf(name: str) -> bool:
    """Worth opening: named like a library, or a name with no suffix or a numeric one (a
    program, ``protoc-3.21.0``). A word suffix (.py, .h, .json, .cubin) is never a file the
    loader maps."""
    if _named_like_library(name):
        return True
    dot = name.rfind(".")
    return dot <= 0 or not name[dot + 1 :].isalpha()


# A superset test of "not :func:`_may_be_elf`" that runs in C over a whole folder or RECORD:
# a path whose last name has an ASCII word suffix (x.py, include/x.h) and holds no ``.so``
# name part. What it leaves is judged by _may_be_elf itself (non-ASCII suffixes included).
_IS_FOLDER = methodcaller("is_dir", follow_symlinks=False)
_WORD_SUFFIXED = re.compile(r"(?!.*\.so(?:\.|/|$)).*[^/]\.[A-Za-z]+", re.S)


def _is_finder(row: str) -> bool:
    """An editable install's finder module (setuptools' ``__editable__.*.py``)."""
    base = row.rpartition("/")[2]
    return base.startswith(("__editable__", "_editable_")) and base.endswith(".py")


def _elf_candidates(names: Iterable[str]) -> list[str]:
    """The names (or relative paths) :func:`_may_be_elf` keeps, in order."""
    return [n for n in filterfalse(_WORD_SUFFIXED.fullmatch, names) if _may_be_elf(n.rpartition("/")[2])]


def _read_head(path: str, display: str) -> bytes:
    """The first bytes of a regular file, never blocking (a FIFO or a device is an error)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise InputError(f"{display}: cannot read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{display}: not a regular file")
        head = os.read(fd, _FIRST_BYTES)
    except OSError as e:
        raise InputError(f"{display}: cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    return head


# A library of a macOS or Windows venv, by its name: what its RECORD rows are read for.
NATIVE_ROW_SUFFIXES = (".dylib", ".bundle", ".dll", ".pyd")
NATIVE_FORMATS = (MACHO, PE)


def _native_kind(path: str, display: str, head: bytes) -> str | None:
    """"macho" or "pe" for a Mach-O dylib or bundle or a DLL, "macho executable" (say) for
    another Mach-O or PE file, None for neither."""
    if not has_native_magic(head[:4]):
        return None
    try:
        found = path_kind(path)
    except OSError as e:
        raise InputError(f"{display}: cannot read: {e.strerror or e}") from None
    if found is None:
        return None
    return found[0] if found[1] == "shared" else f"{found[0]} {found[1]}"


def _probe(path: str, display: str) -> str | None:
    """:func:`file_kind` of a file (:func:`_native_kind` of a Mach-O or PE file), None when
    it is neither. A file named like a shared library that is none of them (nor a linker
    script) is an error, as is one that cannot be read."""
    head = _read_head(path, display)
    if head.startswith(ELF_MAGIC):
        return file_kind(head)
    native = _native_kind(path, display, head)
    if native is not None:
        return native
    if _named_like_library(os.path.basename(path)) and not head.lstrip().startswith(_LINKER_SCRIPT_STARTS):
        raise InputError(f"{display}: named like a shared library but not an ELF file")
    return None


class _Collector:
    """ELF files found, with the paths already claimed (a library is listed once)."""

    def __init__(self) -> None:
        self.claimed: set[str] = set()
        self.ignored: list[tuple[str, str]] = []

    def probe(self, path: str, display: str) -> LibraryFile | None:
        kind = _probe(path, display)
        if kind is None:
            return None
        if kind in ("shared", "executable", *NATIVE_FORMATS):
            return LibraryFile(path=path, display=display, kind=kind)
        self.ignored.append((display, kind))
        return None

    def claim(self, path: str) -> LibraryFile | None:
        """The library at ``path``, named by its whole path, unless a distribution (or an
        earlier folder) has claimed it; claimed from now on either way."""
        if path in self.claimed:
            return None
        self.claimed.add(path)
        return self.probe(path, path)


def _plain_rows(text: str) -> list[str] | None:
    """The paths of a RECORD without quotes, each row one line split at its two commas and
    checked in C; None when csv's reader must read it (quotes, a lone CR, a NUL, a row of
    another shape). pip writes RECORD with csv's CRLF line ends: a CR before a LF ends a
    line as the reader reads it, so the pair is one line end here too."""
    if '"' in text or "\0" in text:
        return None
    end = "\n"
    if "\r" in text:
        crlf = text.count("\r\n")
        if text.count("\r") != crlf:
            return None
        if text.count("\n") != crlf:  # both line ends: one kind for split()
            text = text.replace("\r\n", "\n")
        else:
            end = "\r\n"
    rows = text.split(end)
    if "" in rows:  # the last line's end, or a blank line (csv's reader skips it)
        rows = list(filter(None, rows))
    # Each row: path, hash, size, a path first (csv's reader explains any other shape), its
    # commas counted in C (a regular expression per row costs twice as much).
    if text.startswith(",") or f"{end}," in text or not set(map(str.count, rows, repeat(","))) <= {2}:
        return None
    return [row.partition(",")[0] for row in rows]


def _record_rows(text: str, where: str) -> list[str]:
    """The paths of a RECORD's rows (each row: path, hash, size): :func:`_plain_rows`, or
    (when a row is quoted or broken) csv's reader, which names the broken line."""
    plain = _plain_rows(text)
    if plain is not None:
        return plain
    paths = []
    try:
        # A StringIO, not splitlines(): a quoted path may hold a newline.
        for number, row in enumerate(csv.reader(io.StringIO(text, newline="")), 1):
            if not row:
                continue
            if len(row) != 3 or not row[0]:
                raise InputError(f"{where}: broken RECORD: line {number} has {len(row)} field(s), not path,hash,size")
            paths.append(row[0])
    except csv.Error as e:
        raise InputError(f"{where}: broken RECORD: {e}") from None
    return paths


# A line as email.feedparser splits them (its NLCRE), and a line its headerRE takes as part
# of the header block: a field (printable ASCII but space and ":", then ":"), a
# continuation, or a "From " envelope line.
_HEADER_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
_HEADER_START = re.compile(r"From |[\041-\071\073-\176]*:|[\t ]")


def _metadata_header(text: str) -> tuple[str, str]:
    """METADATA's Name and Version as ``email.parser.HeaderParser`` (compat32) reads them
    (feedparser's _parse_headers, step by step), without importing the email package: a
    tenth of the scan's start-up. The first field of a name wins."""
    lines: list[str] = []
    for match in _HEADER_LINE.finditer(text):
        line = match.group()
        if not line or not _HEADER_START.match(line):
            break
        lines.append(line)
    fields: dict[str, list[str]] = {}
    value: list[str] | None = None  # the source lines of the field being read
    for number, line in enumerate(lines):
        if line[0] in " \t":
            if value is not None:
                value.append(line)
            continue
        value = None
        if line.startswith("From "):
            if number and number == len(lines) - 1:
                break  # feedparser's guess: the body's first line
            continue  # the envelope line, or a misplaced one (ignored)
        colon = line.find(":")
        if colon == 0:
            continue  # no field name: ignored
        value = [line[colon + 1 :].lstrip(" \t")]
        fields.setdefault(line[:colon].lower(), value)
    name, version = ("".join(fields.get(key, ())).rstrip("\r\n").strip() for key in ("name", "version"))
    return name, version


def _read_text(path: str, where: str, what: str) -> str | None:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise InputError(f"{where}: cannot read {what}: {e.strerror or e}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{where}: broken {what}: not UTF-8 (byte {e.start})") from None


def _is_editable(info: str) -> bool:
    """PEP 610: an editable install says so in direct_url.json."""
    text = _read_text(os.path.join(info, "direct_url.json"), info, "direct_url.json")
    if text is None:
        return False
    try:
        doc = json.loads(text)
    except ValueError:
        return False
    return isinstance(doc, dict) and isinstance(doc.get("dir_info"), dict) and doc["dir_info"].get("editable") is True


def _finder_folders(path: str) -> list[str]:
    """Absolute folders an editable finder module names (setuptools writes a MAPPING of
    package -> source folder): read as text, never imported."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(1 << 20))
    except (OSError, SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and os.path.isabs(node.value):
            folder = node.value if os.path.isdir(node.value) else os.path.dirname(node.value)
            if os.path.isdir(folder):
                out.append(os.path.normpath(folder))
    return out


def _walk(root: str, *, skip: frozenset[str] = frozenset()) -> Iterator[str]:
    """The files below ``root`` that :func:`_may_be_elf` keeps: symlinked folders are not
    followed (no loops), a link that cannot be followed is an error, virtual environments
    and ``skip`` folders (other site folders) are left out. Iterative (a generator per
    level would pass every name up through each level)."""
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        if depth > MAX_WALK_DEPTH:
            raise InputError(f"{folder}: folder nesting deeper than {MAX_WALK_DEPTH}")
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError as e:
            raise InputError(f"{folder}: cannot list folder: {e.strerror or e}") from None
        names = [entry.name for entry in entries]
        # An environment below the walked folder, at any depth (a flat-layout editable
        # project's .venv sits right under its root), is another environment. Its mark is
        # among the names just listed: a stat only where one is.
        if depth and any(m in names and os.path.exists(os.path.join(folder, m)) for m in ENVIRONMENT_MARKS):
            continue
        try:
            folders = list(map(_IS_FOLDER, entries))  # no syscall where the folder gave d_type
        except OSError as e:
            raise InputError(f"{folder}: cannot read: {e.strerror or e}") from None
        for entry in compress(entries, folders):
            name = entry.name
            if name in _SKIPPED_DIRS or name.endswith((".dist-info", ".egg-info")) or entry.path in skip:
                continue
            stack.append((entry.path, depth + 1))
        # Only the names _may_be_elf keeps reach Python code: a torch install has 27k files.
        keep = set(_elf_candidates(names))
        for entry, is_folder in compress(zip(entries, folders), map(keep.__contains__, names)):
            if is_folder:
                continue
            try:
                if entry.is_symlink():
                    target = os.stat(entry.path)  # a dangling or looping link is an error
                    if stat.S_ISREG(target.st_mode):
                        yield entry.path
                elif entry.is_file(follow_symlinks=False):
                    yield entry.path
            except OSError as e:
                raise InputError(f"{entry.path}: cannot read: {e.strerror or e}") from None


def _distribution(info: str, site: str, collector: _Collector) -> Distribution | None:
    """The distribution whose metadata folder is ``info`` (``*.dist-info``), its ELF files
    from RECORD (and, when editable, from the folders it points at)."""
    where = info
    metadata = _read_text(os.path.join(info, "METADATA"), where, "METADATA")
    if metadata is None:
        return None  # no metadata: importlib.metadata does not see it either
    name, version = _metadata_header(metadata)
    if not name:
        raise InputError(f"{where}: broken METADATA: no Name")
    record = _read_text(os.path.join(info, "RECORD"), where, "RECORD")
    if record is None:
        raise InputError(f"{where}: no RECORD: the distribution's files are unknown")
    libraries: list[LibraryFile] = []
    pths: list[str] = []
    finders: list[str] = []
    top = os.path.normpath(site)
    rows = _record_rows(record, where)
    for row in compress(rows, map(str.endswith, rows, repeat(".pth"))):
        path = os.path.normpath(os.path.join(site, row))
        if os.path.dirname(path) == top:
            pths.append(path)
    for row in compress(rows, map(str.__contains__, rows, repeat("editable_"))):
        if _is_finder(row):
            finders.append(os.path.normpath(os.path.join(site, row)))
    for row in _elf_candidates(rows):
        if "__pycache__/" in row or ".dist-info/" in row or row.endswith(".pth") or _is_finder(row):
            continue
        # Rows are relative POSIX paths, normalised already unless they climb out (../../bin/x).
        path = (
            f"{top}{os.sep}{row}"
            if "./" not in row and not row.startswith("/")
            else os.path.normpath(os.path.join(site, row))
        )
        collector.claimed.add(path)
        if not os.path.lexists(path):
            raise InputError(f"{where}: RECORD lists {row}, which is missing")
        found = collector.probe(path, os.path.relpath(path, site) if ".." in row or row.startswith("/") else row)
        if found is not None:
            libraries.append(found)
    libraries += _native_rows(rows, site, where, collector)
    editable = _is_editable(info)
    if editable or pths:
        folders = [f for pth in pths for f in _pth_lines(pth, site)]
        if editable:
            folders += [f for finder in finders for f in _finder_folders(finder)]
        for folder in dict.fromkeys(folders):
            if os.path.realpath(folder) == os.path.realpath(site):
                continue
            for path in _walk(folder):
                found = collector.claim(path)
                if found is not None:
                    libraries.append(found)
    native = tuple(lib for lib in libraries if lib.kind in NATIVE_FORMATS)
    return Distribution(
        name=name, version=version, location=site, libraries=tuple(lib for lib in libraries if lib not in native),
        editable=editable, native=native,
    )


def _native_rows(rows: list[str], site: str, where: str, collector: _Collector) -> list[LibraryFile]:
    """The RECORD rows naming a dylib, bundle, DLL or ``.pyd`` (in any case; a macOS ``.so``
    is read with the ELF candidates) that is a Mach-O or PE library; a listed one that is
    missing is an error, as a listed library is, and so is one whose header is broken."""
    found = []
    for row in rows:
        if not row.lower().endswith(NATIVE_ROW_SUFFIXES) or ".dist-info/" in row:
            continue
        path = os.path.normpath(os.path.join(site, row))
        if not os.path.lexists(path):
            raise InputError(f"{where}: RECORD lists {row}, which is missing")
        head = _read_head(path, row)
        kind = _native_kind(path, row, head)
        if kind in NATIVE_FORMATS:
            found.append(LibraryFile(path=path, display=row, kind=kind))
        elif kind is not None:
            collector.ignored.append((row, kind))
        elif has_native_magic(head[:4]):
            raise InputError(f"{row}: named like a Mach-O or PE library but not one (its header is broken)")
    return found


def _metadata_folders(site: str) -> list[str]:
    """The ``*.dist-info`` folders of ``site`` in the order ``importlib.metadata`` yields
    them (its ``Lookup``: directory order, grouped by normalised name), without importing it
    (a fifth of the scan's start-up)."""
    groups: dict[str, list[str]] = {}
    try:
        with os.scandir(site) as it:
            for e in it:
                if e.name.endswith(".dist-info") and e.is_dir():
                    name = e.name.lower().rpartition(".")[0].partition("-")[0]
                    groups.setdefault(_SEPARATORS.sub("-", name).replace("-", "_"), []).append(e.path)
    except OSError as e:
        raise InputError(f"{site}: cannot list folder: {e.strerror or e}") from None
    return [path for paths in groups.values() for path in paths]


def _normalized(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def read_site_folders(folders: tuple[str, ...], description: str) -> Environment:
    """Every distribution in ``folders`` (the first of a name wins, as imports do), and
    every ELF library under them that none lists."""
    collector = _Collector()
    seen: set[str] = set()
    distributions: list[Distribution] = []
    for site in folders:
        # An .egg-info has no RECORD: its files count as nobody's.
        for info in _metadata_folders(site):
            found = _distribution(info, site, collector)
            if found is None or _normalized(found.name) in seen:
                continue
            seen.add(_normalized(found.name))
            distributions.append(found)
    unowned: list[LibraryFile] = []
    others = frozenset(folders)
    for site in folders:
        for path in _walk(site, skip=others - {site}):
            # Named by its whole path: no distribution's folder gives it a shorter name.
            library = collector.claim(path)
            if library is not None:
                unowned.append(library)
    unowned.sort(key=lambda f: f.path)
    return Environment(
        description=description,
        site_folders=folders,
        distributions=tuple(sorted(distributions, key=lambda d: _normalized(d.name))),
        unowned=tuple(f for f in unowned if f.kind not in NATIVE_FORMATS),
        ignored=tuple(collector.ignored),
        unowned_native=tuple(f for f in unowned if f.kind in NATIVE_FORMATS),
    )


# -- wheels -----------------------------------------------------------------------------------


def _wheel_name(zf: zipfile.ZipFile, wheel: str) -> tuple[str, str]:
    for info in zf.infolist():
        parts = info.filename.split("/")
        if len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] == "METADATA":
            if info.file_size > 1 << 20:
                break
            name, version = _metadata_header(zf.read(info).decode("utf-8", "replace"))
            if name:
                return name, version
    stem = os.path.basename(wheel)[: -len(".whl")] if wheel.endswith(".whl") else os.path.basename(wheel)
    name, _, rest = stem.partition("-")
    return name, rest.partition("-")[0]


def read_wheel(wheel: str, workspace: Workspace, ignored: list[tuple[str, str]]) -> Distribution:
    """A wheel as the distribution it installs: its ELF members streamed (never unpacked), its
    Mach-O and PE libraries of the wheel's platform copied out for the native readers."""
    libraries: list[LibraryFile] = []
    native: list[LibraryFile] = []
    try:
        zf = open_wheel(wheel)
    except InputError:
        raise
    with zf:
        name, version = _wheel_name(zf, wheel)
        for info in zf.infolist():
            display = f"{wheel}!{info.filename}"
            kind, art = read_member(zf, info, display, workspace, 4 << 30)
            if kind == "not-elf" and info.filename.lower().endswith(NATIVE_SUFFIXES):
                # A macOS or Windows wheel's dylib, bundle or DLL: read as check --wheel reads it.
                taken, found = _native_member(zf, info, display, wheel, workspace, ignored)
                native += [found] if found is not None else []
                if taken:
                    continue
            if kind == "not-elf":
                if _named_like_library(info.filename.rsplit("/", 1)[-1]) and info.file_size >= len(ELF_MAGIC):
                    raise InputError(f"{display}: named like a shared library but not an ELF file")
                continue
            if kind == "executable":
                art = extract_member(zf, info, display, workspace, 4 << 30)
            if art is None:
                ignored.append((display, kind))
                continue
            libraries.append(LibraryFile(path=art.path, display=display, kind=kind, member=art))
    return Distribution(name=name, version=version, location=wheel, libraries=tuple(libraries), source="wheel",
                        native=tuple(native))


def _native_member(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, display: str, wheel: str, workspace: Workspace,
    ignored: list[tuple[str, str]],
) -> tuple[bool, LibraryFile | None]:
    """(whether the member is a Mach-O or PE library, the library when it is one of the wheel's
    platform); another Mach-O or PE file, or a library of another platform, is said in ``ignored``."""
    said, said_before = len(workspace.ignored), len(ignored)
    art = native_member(zf, info, display, workspace, 4 << 30)
    ignored.extend(workspace.ignored[said:])
    del workspace.ignored[said:]
    if art is None:
        return len(ignored) > said_before, None
    if not of_platform(wheel, art.format):
        ignored.append((display, f"{art.format} library, not of the wheel's platform"))
        return True, None
    return True, LibraryFile(path=art.path, display=display, kind=art.format, member=art)


# -- the whole environment --------------------------------------------------------------------


def read_environment(paths: tuple[str, ...], python: str | None, workspace: Workspace) -> Environment:
    """The environment ``scan`` judges: site folders, venvs and wheels in ``paths`` and
    the folders of ``python``; the running interpreter's when neither is given. A wheel
    stands for its distribution installed: it replaces one of the same name."""
    folders: list[str] = []
    wheels: list[str] = []
    said: list[str] = []
    if python is not None:
        asked = ask_interpreter(python)
        folders += asked.folders
        said.append(f"interpreter {asked.executable} (Python {asked.version})")
    for raw in paths:
        try:
            st = os.stat(raw)
        except OSError as e:
            raise InputError(f"{raw}: cannot read: {e.strerror or e}") from None
        if stat.S_ISDIR(st.st_mode):
            venv = venv_site_folders(raw)
            if venv is not None:
                if not venv:
                    raise InputError(f"{raw}: a virtual environment with no lib/python*/site-packages folder")
                folders += venv
                said.append(f"virtual environment {raw}")
                for site in venv:
                    folders += pth_folders(site)
            else:
                below = site_folder_below(raw)
                if below is not None:
                    raise UsageError(
                        f"{raw}: not a site folder: {below} below it is one; scan that, or the environment's root"
                    )
                folders.append(raw)
                folders += pth_folders(raw)
                said.append(f"site folder {raw}")
        elif stat.S_ISREG(st.st_mode) and (raw.endswith(".whl") or zipfile.is_zipfile(raw)):
            wheels.append(raw)
        else:
            # A file of the wrong type is a bad input, as check's "not an ELF file" (README: exit 1).
            raise InputError(f"{raw}: not a site folder, a virtual environment or a wheel")
    if python is None and not paths:
        here = running_interpreter()
        folders += here.folders
        said.append(f"interpreter {here.executable} (Python {here.version})")
    # A wheel named twice is one distribution.
    wheels = list({os.path.realpath(w): w for w in wheels}.values())
    if wheels:
        said.append(f"{len(wheels)} wheel(s)")
    unique = tuple(dict.fromkeys(os.path.abspath(f) for f in folders))
    env = read_site_folders(unique, "; ".join(said))
    if not wheels:
        return env
    ignored = list(env.ignored)
    # Two wheels of one distribution are no environment (pip installs one version of a
    # name), whichever of them were meant.
    from_wheels = [read_wheel(w, workspace, ignored) for w in wheels]
    first: dict[str, str] = {}
    for wheel, dist in zip(wheels, from_wheels):
        seen = first.setdefault(_normalized(dist.name), wheel)
        if seen != wheel:
            raise UsageError(
                f"{dist.name}: two wheels of one distribution ({seen}, {wheel}); an environment holds one: give one"
            )
    replaced = {_normalized(d.name) for d in from_wheels}
    kept = [d for d in env.distributions if _normalized(d.name) not in replaced]
    return Environment(
        description=env.description,
        site_folders=env.site_folders,
        distributions=(*kept, *from_wheels),
        unowned=env.unowned,
        ignored=tuple(ignored),
    )
