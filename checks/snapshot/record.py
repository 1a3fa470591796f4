"""Reference snapshots: the export sets of a torch build, in a small file.

A snapshot lets CI gate ``--against`` a torch build without installing torch. The file
is a multi-member gzip stream (``zcat`` shows it), written with no timestamps, so the same
libraries always give the same bytes:

- member 0, JSON: ``{"format": "aoti-shim-snapshot", "format_version": 1,
  "torch_version": "2.13.0+cpu", "source": {...}, "created_by": "aoti-shim 0.1.0",
  "libraries": [{"name", "soname", "build_id", "size", "sha256", "count", "kinds",
  "versions", "index_member", "names_member"}], "members": [compressed length of member
  1, 2, ...]}``; ``versions`` is ``{"versym": bool, "defined": {"1": "libtorch_cpu.so"},
  "base": [1]}``: whether the library has a ``.gnu.version`` table and its version
  definitions (a snapshot written without it still loads: its definitions are then taken
  as a library's without ``.gnu.version``);
- per library an *index* member: the sorted CRC-32s of its exported names (little-endian
  uint32), and a *names* member: the sorted names joined by ``\n``, a NUL, then one
  character per name, ``chr(48 + k)`` for row ``k`` of ``kinds``
  (``[bind, type, visibility, versioned]``).

A macOS or Windows torch (its wheel, or its ``lib/`` folder) is recorded the same way from
its Mach-O or PE libraries (``checks/snapshot/native.py``), with two more keys: the header's
``"object_format": "macho"`` (or ``"pe"``) and each library's ``"format"``; a snapshot
without them is ELF's, so every ELF snapshot, old or new, keeps its bytes. Such a snapshot
records C names: Mach-O's leading underscore is removed (``_aoti_torch_x`` is recorded as
``aoti_torch_x``), so a lookup asks every platform's snapshot the same C name; ``soname``
is the install name (LC_ID_DYLIB) or the export directory's DLL name, ``build_id`` null.

A lookup inflates only the small index: a name whose CRC-32 is absent is not exported,
so a prefixed shim is cleared against libtorch's 75k exports without reading one of
them. Only a CRC-32 hit inflates that library's names for the exact answer. Every
member is inflated under a cap (a gzip bomb is an InputError).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import operator
import os
import re
import shutil
import sys
import tempfile
import zipfile
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from aoti_shim import __version__
from aoti_shim.atomic import write_bytes_atomically
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.elf.symbols import Symbol, SymbolTable, pack_symbol, unpack_symbol
from aoti_shim.checks.inputs.collect import Wheel, Workspace, collect, copy_elf_member, is_elf_strict, open_wheel
from aoti_shim.checks.snapshot import native
from aoti_shim.checks.snapshot.native import ELF, FORMATS, NativeLibrary
from aoti_shim.checks.snapshot.torch_libraries import TORCH_TEST_LIBRARIES, import_closure
from aoti_shim.errors import InputError
from aoti_shim.torch_location import package_lib, version_from_text, version_in

FORMAT = "aoti-shim-snapshot"
# A snapshot file's name ends so; without it, the name is what --against takes.
SNAPSHOT_SUFFIX = ".json.gz"
FORMAT_VERSION = 1
GZIP_MAGIC = b"\x1f\x8b"
# torch 2.14.1 CUDA's names inflate to about 7 MiB; anything far past that is hostile.
MAX_INFLATED = 64 << 20
# What one snapshot may inflate in all, and the names it may hold: torch 2.14.1 CUDA's
# import set is about 10 MiB and 150k names. Each member belongs to one library (shared
# members would multiply what a small file costs: 4.3 MB once took 881 MiB).
MAX_TOTAL_INFLATED = 128 << 20
MAX_NAMES = 1 << 20
MAX_TOTAL_NAMES = 2 << 20
MAX_FILE = 64 << 20
# A wheel member larger than this is not a library we snapshot (torch's largest is 480 MiB).
MAX_MEMBER = 4 << 30
_KIND_BASE = 48
_HEAD = ('{"format": "' + FORMAT + '"').encode()


def is_snapshot(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is gzip whose first member's JSON starts as a snapshot's does."""
    try:
        with open(path, "rb") as f:
            if f.read(2) != GZIP_MAGIC:
                return False
            f.seek(0)
            with gzip.GzipFile(fileobj=f) as g:
                return g.read(len(_HEAD)) == _HEAD
    except (OSError, EOFError, zlib.error, ValueError):
        return False


def name_crc(name: str) -> int:
    return zlib.crc32(name.encode("utf-8", "surrogatepass"))


# -- reading ----------------------------------------------------------------------


class _Budget:
    """The inflated bytes a snapshot's libraries may still use, shared by all of them."""

    def __init__(self) -> None:
        self.left = MAX_TOTAL_INFLATED

    def charge(self, n: int, where: str) -> None:
        self.left -= n
        if self.left < 0:
            raise InputError(f"{where}: snapshot inflates past {MAX_TOTAL_INFLATED >> 20} MiB in all (a gzip bomb?)")


def _inflate_member(data: bytes | memoryview, where: str, budget: _Budget | None = None) -> tuple[bytes, int]:
    """Inflate the gzip member at the start of ``data``; (content, compressed length)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, MAX_INFLATED + 1)
    except zlib.error as e:
        raise InputError(f"{where}: snapshot member is not valid gzip: {e}") from None
    if len(out) > MAX_INFLATED:
        raise InputError(f"{where}: snapshot member inflates past {MAX_INFLATED >> 20} MiB (a gzip bomb?)")
    if not inflater.eof:
        raise InputError(f"{where}: snapshot member is truncated")
    if budget is not None:
        budget.charge(len(out), where)
    return out, len(data) - len(inflater.unused_data)


class SnapshotLibrary:
    """One library of a snapshot; answers the same questions as an ElfImage reference."""

    def __init__(
        self,
        *,
        display: str,
        name: str,
        soname: str | None,
        build_id: str | None,
        torch_version: str,
        size: int | None = None,
        sha256: str | None = None,
        count: int,
        kinds: tuple[int, ...],
        index: memoryview,
        names: memoryview,
        budget: _Budget | None = None,
        versions: LibraryVersions | None = None,
        format: str = ELF,
    ) -> None:
        self.display = display
        self.name = name
        self.soname = soname
        self.build_id = build_id
        self.torch_version = torch_version
        self.size = size  # of the library file the snapshot was made from
        self.sha256 = sha256
        self.count = count
        self._kinds = kinds
        self._index_raw: memoryview | None = index
        self._names_raw: memoryview | None = names
        self._index: array[int] | None = None
        self._table: dict[str, str] | None = None
        self._budget = budget if budget is not None else _Budget()
        # None: a snapshot written before versions were kept (format 1 without the key).
        self.versions = versions
        # "elf", "macho" or "pe": which loader's rules bind to this library (names are C names).
        self.format = format

    def _crcs(self) -> array[int]:
        if self._index is None:
            assert self._index_raw is not None
            raw, _ = _inflate_member(self._index_raw, self.display, self._budget)
            if len(raw) != 4 * self.count:
                raise InputError(f"{self.display}: snapshot index holds {len(raw) // 4} entries for {self.count} names")
            crcs = array("I", raw)
            if sys.byteorder == "big":
                crcs.byteswap()
            if not all(map(operator.le, crcs, islice(crcs, 1, None))):
                raise InputError(f"{self.display}: snapshot index is not sorted")
            self._index, self._index_raw = crcs, None
        return self._index

    def _lookup(self) -> dict[str, str]:
        if self._table is None:
            assert self._names_raw is not None
            raw, _ = _inflate_member(self._names_raw, self.display, self._budget)
            text, sep, kind_of = raw.decode("utf-8", "backslashreplace").partition("\0")
            names = text.split("\n") if text else []
            if not sep or len(names) != self.count or len(kind_of) != self.count:
                raise InputError(f"{self.display}: snapshot names do not match its count of {self.count}")
            table = dict(zip(names, kind_of))
            if len(table) != len(names):
                raise InputError(f"{self.display}: snapshot lists a name twice")
            if any(not 0 <= ord(c) - _KIND_BASE < len(self._kinds) for c in set(kind_of)):
                raise InputError(f"{self.display}: snapshot refers to a kind it does not define")
            self._table, self._names_raw = table, None
        return self._table

    def find_export(self, name: str) -> Symbol | None:
        if self._table is None:
            crcs = self._crcs()
            crc = name_crc(name)
            at = bisect_left(crcs, crc)
            if at == len(crcs) or crcs[at] != crc:
                return None  # exact: every exported name's CRC-32 is in the index
        kind = self._lookup().get(name)
        if kind is None:
            return None
        return unpack_symbol(name, self._kinds[ord(kind) - _KIND_BASE])

    def export_names(self) -> set[str]:
        return set(self._lookup())

    def export_name_chunks(self) -> Iterator[list[str]]:
        if self._table is None:
            self._crcs()  # validated whichever way the library is asked
        yield list(self._lookup())

    def size_hint(self) -> int:
        return self.count

    def exports(self) -> SymbolTable:
        kinds = self._kinds
        return SymbolTable({n: kinds[ord(k) - _KIND_BASE] for n, k in self._lookup().items()})

    def close(self) -> None:
        """Nothing to release; present so callers can close every reference alike."""

    def __repr__(self) -> str:
        return f"SnapshotLibrary({self.display!r})"


@dataclass(frozen=True)
class LibraryVersions:
    """What a snapshot keeps of a library's symbol versions: whether it has a .gnu.version
    table, and its version definitions (index -> name; torch's libraries define only their
    base version, index 1, and export every name at it)."""

    versym: bool
    defined: dict[int, str]
    base: frozenset[int]


def _versions(raw: Any, where: str) -> LibraryVersions | None:
    if raw is None:
        return None
    bad = InputError(f"{where}: snapshot field 'versions' is not {{versym, defined, base}}")
    if not isinstance(raw, dict) or not isinstance(raw.get("versym"), bool):
        raise bad
    defined, base = raw.get("defined"), raw.get("base")
    if not isinstance(defined, dict) or not isinstance(base, list) or len(defined) > 1000 or len(base) > 1000:
        raise bad
    out: dict[int, str] = {}
    for key, name in defined.items():
        if not (isinstance(key, str) and key.isdigit() and len(key) < 6 and isinstance(name, str)):
            raise bad
        out[int(key)] = name
    if not all(isinstance(i, int) and not isinstance(i, bool) and i in out for i in base):
        raise bad
    return LibraryVersions(raw["versym"], out, frozenset(base))


@dataclass(frozen=True)
class Snapshot:
    torch_version: str
    source: dict[str, Any]
    created_by: str
    libraries: tuple[SnapshotLibrary, ...]
    format: str = ELF  # the object format of every library: elf, macho or pe


def _field(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = obj.get(key) if isinstance(obj, dict) else None
    # bool is an int to isinstance; a count of True is still malformed.
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InputError(f"{where}: snapshot field '{key}' is missing or of the wrong type")
    return obj[key]


def _kinds(raw: Any, where: str) -> tuple[int, ...]:
    if not isinstance(raw, list) or len(raw) > 1000:
        raise InputError(f"{where}: snapshot field 'kinds' is not a short list")
    out = []
    for row in raw:
        if (
            not isinstance(row, list)
            or len(row) != 4
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in row[:3])
            or not isinstance(row[3], bool)
        ):
            raise InputError(f"{where}: snapshot kind {row!r} is not [bind, type, visibility, versioned]")
        out.append(pack_symbol(row[0], row[1], row[2], True, row[3]))
    return tuple(out)


def read(path: str | os.PathLike[str]) -> Snapshot:
    """Parse and validate a snapshot's header; libraries inflate their members lazily."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE + 1)
    except OSError as e:
        raise InputError(f"{path}: cannot read snapshot: {e.strerror or e}") from None
    if len(data) > MAX_FILE:
        raise InputError(f"{path}: snapshot is larger than {MAX_FILE >> 20} MiB")
    if data[:2] != GZIP_MAGIC:
        raise InputError(f"{path}: not an aoti-shim snapshot (not gzip)")
    header, header_len = _inflate_member(data, path)
    try:
        doc = json.loads(header)
    except (ValueError, RecursionError) as e:
        raise InputError(f"{path}: snapshot header is not valid JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(f"{path}: not an aoti-shim snapshot")
    version = _field(doc, "format_version", int, path)
    if version != FORMAT_VERSION:
        raise InputError(f"{path}: snapshot format version {version} is not supported (want {FORMAT_VERSION})")
    torch_version = _field(doc, "torch_version", str, path)
    given_source, given_by = doc.get("source"), doc.get("created_by")
    source: dict[str, Any] = given_source if isinstance(given_source, dict) else {}
    created_by = given_by if isinstance(given_by, str) else ""
    object_format = _object_format(doc.get("object_format", ELF), path)
    lengths = _field(doc, "members", list, path)
    starts = _member_starts(lengths, header_len, len(data), path)
    view = memoryview(data)
    used: set[int] = set()
    budget = _Budget()
    total_names = 0

    def member(lib: Any, key: str, where: str) -> memoryview:
        k = _field(lib, key, int, where)
        if not 1 <= k <= len(lengths):
            raise InputError(f"{where}: snapshot field '{key}' names no member")
        if k in used:
            raise InputError(f"{where}: snapshot member {k} is used twice (members are not shared)")
        used.add(k)
        return view[starts[k - 1] : starts[k]]

    libraries = []
    for lib in _field(doc, "libraries", list, path):
        name = _field(lib, "name", str, path)
        where = f"{path}!{name}"
        soname, build_id = lib.get("soname"), lib.get("build_id")
        if not isinstance(soname, (str, type(None))) or not isinstance(build_id, (str, type(None))):
            raise InputError(f"{where}: snapshot soname/build_id must be strings or null")
        count = _field(lib, "count", int, where)
        if _object_format(lib.get("format", ELF), where) != object_format:
            raise InputError(f"{where}: snapshot library format differs from the snapshot's ({object_format})")
        if not 0 <= count <= MAX_NAMES:
            raise InputError(f"{where}: snapshot count {count} is implausible (at most {MAX_NAMES})")
        total_names += count
        if total_names > MAX_TOTAL_NAMES:
            raise InputError(f"{path}: snapshot holds more than {MAX_TOTAL_NAMES} names in all")
        libraries.append(
            SnapshotLibrary(
                display=where,
                name=name,
                soname=soname,
                build_id=build_id,
                torch_version=torch_version,
                size=lib.get("size") if isinstance(lib.get("size"), int) else None,
                sha256=lib.get("sha256") if isinstance(lib.get("sha256"), str) else None,
                count=count,
                kinds=_kinds(lib.get("kinds"), where),
                index=member(lib, "index_member", where),
                names=member(lib, "names_member", where),
                budget=budget,
                versions=_versions(lib.get("versions"), where),
                format=object_format,
            )
        )
    return Snapshot(
        torch_version=torch_version, source=source, created_by=created_by, libraries=tuple(libraries),
        format=object_format,
    )


def _member_starts(lengths: list[Any], header_len: int, size: int, path: str) -> list[int]:
    """Where each member starts (and the file's end), from the header's member lengths."""
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in lengths):
        raise InputError(f"{path}: snapshot member lengths are not positive integers")
    starts = [header_len]
    for n in lengths:
        starts.append(starts[-1] + n)
    if starts[-1] != size:
        raise InputError(f"{path}: snapshot members do not add up to the file size")
    return starts


def _object_format(value: Any, where: str) -> str:
    if value not in FORMATS:
        raise InputError(f"{where}: snapshot object format {value!r} is not one of {', '.join(FORMATS)}")
    return str(value)


def load(path: str | os.PathLike[str]) -> list[SnapshotLibrary]:
    """The reference libraries a snapshot file describes (what ``--against FILE`` uses)."""
    return list(read(path).libraries)


def shipped_dir() -> Path:
    """The folder of snapshots that ship inside the package."""
    # Data beside the checker's other data (schemas/), where the wheel has always had it.
    return Path(__file__).resolve().parent.parent / "snapshots"


def shipped() -> list[Path]:
    folder = shipped_dir()
    return sorted(folder.glob(f"*{SNAPSHOT_SUFFIX}")) if folder.is_dir() else []


def shipped_snapshots() -> dict[str, Path]:
    """The reference snapshots shipped with aoti-shim, by name (``torch-2.13.0+cpu``)."""
    return {p.name[: -len(SNAPSHOT_SUFFIX)]: p for p in shipped()}


# -- writing ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Captured:
    name: str
    soname: str | None
    build_id: str | None
    size: int
    sha256: str
    exports: dict[str, int]
    needed: tuple[str, ...] = ()
    # Whether the file has a .gnu.version table, its version definitions (index -> name)
    # and which of them are base versions: the loader's version matching depends on them.
    versym: bool = False
    version_definitions: tuple[tuple[int, str], ...] = ()
    version_base: tuple[int, ...] = ()
    format: str = ELF
    native: NativeLibrary | None = None  # a Mach-O or PE library's dependencies, for the import set


def _library_parts(lib: _Captured) -> tuple[dict[str, Any], bytes, bytes]:
    """A library's header entry, index member content and names member content."""
    rows: dict[tuple[int, int, int, bool], int] = {}
    names = sorted(lib.exports)
    for name in names:
        if "\n" in name or "\0" in name or not name:
            # The names member is newline-separated and NUL-terminated: such a name would
            # come back as two, or shift every kind after it.
            shown = name.encode("unicode_escape").decode("ascii")
            raise InputError(f"{lib.name}: exported name {shown!r} cannot be read back from a snapshot")
    kind_of = []
    for name in names:
        sym = unpack_symbol(name, lib.exports[name])
        row = (sym.bind, sym.type, sym.visibility, sym.versioned)
        kind_of.append(chr(_KIND_BASE + rows.setdefault(row, len(rows))))
    crcs = array("I", sorted(name_crc(n) for n in names))
    if sys.byteorder == "big":
        crcs.byteswap()
    entry = {
        "name": lib.name,
        "soname": lib.soname,
        "build_id": lib.build_id,
        "size": lib.size,
        "sha256": lib.sha256,
        "count": len(names),
        "kinds": [list(row) for row in rows],
        "versions": {
            "versym": lib.versym,
            "defined": {str(i): n for i, n in lib.version_definitions},
            "base": list(lib.version_base),
        },
    }
    if lib.format != ELF:
        entry["format"] = lib.format  # absent for ELF: an ELF snapshot keeps the bytes it always had
    blob = ("\n".join(names) + "\0" + "".join(kind_of)).encode("utf-8", "surrogateescape")
    return entry, crcs.tobytes(), blob


def _capture_image(path: str, display: str, name: str, size: int, sha256: str) -> _Captured | None:
    with ElfImage(path, display=display) as image:
        if not image.has_dynsym:
            return None
        table = image.exports()
        exports = {n: table[n].pack() for n in table}
        versions = image.versions()
        return _Captured(
            name, image.soname, image.build_id, size, sha256, exports, tuple(image.needed),
            versym=image.has_versym,
            version_definitions=tuple(sorted(versions.defined.items())),
            version_base=tuple(sorted(versions.base)),
        )


def _sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


# How torch's own libraries are named: a folder holding none of them is no torch.
TORCH_LIBRARY_STARTS = ("libtorch", "libc10")
# Windows names them without "lib" (torch_cpu.dll, c10.dll).
_PE_LIBRARY_STARTS = ("torch", "c10")
# torch/_C, the extension `import torch` imports: the root of a macOS or Windows torch's graph.
_EXTENSION = re.compile(r"_C\.[^/]+\.(?:so|pyd)")
_COPY_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError, RuntimeError)


@dataclass(frozen=True)
class _Found:
    """What a folder or wheel held: torch's version, where it came from, its libraries, and
    torch/_C read as Mach-O or PE (None for ELF, which roots the set by name)."""

    version: str | None
    origin: dict[str, Any]
    libs: list[_Captured]
    extension: NativeLibrary | None = None


def _capture_native(path: str, display: str, name: str, size: int, sha256: str, fmt: str) -> _Captured:
    lib = native.read_library(path, display, fmt)
    return _Captured(
        name, lib.install_name, None, size, sha256, dict(lib.exports), lib.dependencies, format=fmt, native=lib
    )


def _head(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(4)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None


def _capture_dir(source: Path) -> _Found:
    lib_dir = package_lib(source) or source
    version = version_in(lib_dir.parent)
    captured = []
    with Workspace() as ws:
        for art in collect([str(lib_dir)], ws):
            if not is_elf_strict(art.path):
                continue  # a Mach-O or PE file, read below
            name = Path(os.path.relpath(art.path, lib_dir)).as_posix()
            size = os.stat(art.path).st_size
            lib = _capture_image(art.path, art.display, name, size, _sha256_file(art.path))
            if lib is not None:
                captured.append(lib)
    if captured:
        return _Found(version, {"kind": "directory"}, captured)
    # No ELF library: a macOS or Windows torch's lib/ and the torch/_C beside it.
    libs = []
    for entry in sorted(os.scandir(lib_dir), key=lambda e: e.name):
        if entry.is_file() and (fmt := native.format_of(_head(entry.path))):
            size = os.stat(entry.path).st_size
            libs.append(_capture_native(entry.path, entry.path, entry.name, size, _sha256_file(entry.path), fmt))
    extension = None
    for entry in sorted(os.scandir(lib_dir.parent), key=lambda e: e.name):
        if _EXTENSION.fullmatch(entry.name) and entry.is_file() and (fmt := native.format_of(_head(entry.path))):
            extension = native.read_library(entry.path, entry.path, fmt)
    return _Found(version, {"kind": "directory"}, libs, extension)


def _copy_native_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, display: str, dest: str, digest: Any) -> str | None:
    """Copy a Mach-O or PE member to ``dest``, under the member cap and the wheel's budget;
    its format, or None (nothing written) when it is neither. The ELF copy's twin: that one
    (checks/inputs) takes ELF members only."""
    charge = zf.charge if isinstance(zf, Wheel) else (lambda n, d: None)
    try:
        with zf.open(info) as src:
            head = src.read(4)
            fmt = native.format_of(head)
            if fmt is None:
                return None
            if info.file_size > MAX_MEMBER:
                raise InputError(f"{display}: member inflates to {info.file_size} bytes, over the limit")
            written = len(head)
            charge(written, display)
            with open(dest, "wb") as dst:
                dst.write(head)
                digest.update(head)
                while chunk := src.read(1 << 20):
                    written += len(chunk)
                    if written > MAX_MEMBER or written > info.file_size:
                        raise InputError(f"{display}: member inflates past its declared size (a zip bomb?)")
                    charge(len(chunk), display)
                    digest.update(chunk)
                    dst.write(chunk)
    except InputError:
        raise
    except _COPY_ERRORS as e:
        raise InputError(f"{display}: cannot extract: {getattr(e, 'strerror', None) or e}") from None
    return fmt


def _wheel_version(zf: zipfile.ZipFile, info: zipfile.ZipInfo, display: str) -> str | None:
    try:
        return version_from_text(zf.read(info).decode("utf-8", "replace"))
    except _COPY_ERRORS as e:
        raise InputError(f"{display}: cannot extract: {e}") from None


def _capture_wheel(wheel: Path) -> _Found:
    captured = []
    version = None
    extension: NativeLibrary | None = None
    tmp = tempfile.mkdtemp(prefix="aoti-shim-snapshot-")
    try:
        # The checker's wheel reader: names, duplicates, member count and inflation capped.
        with open_wheel(str(wheel)) as zf:
            for info in zf.infolist():
                display = f"{wheel}!{info.filename}"
                if info.filename == "torch/version.py" and info.file_size < (1 << 20):
                    version = _wheel_version(zf, info, display)
                    continue
                in_lib = info.filename.startswith("torch/lib/")
                is_extension = info.filename.startswith("torch/") and _EXTENSION.fullmatch(info.filename[6:])
                if info.is_dir() or not (in_lib or is_extension):
                    continue
                # Members go to one fixed temp name, never to a path built from the name.
                dest = os.path.join(tmp, "member.so")
                digest = hashlib.sha256()
                name = info.filename[len("torch/lib/") :]
                size = None
                if in_lib:
                    size = copy_elf_member(zf, info, display, lambda: open(dest, "wb"), MAX_MEMBER, digest)  # noqa: B023 - called here
                if size is not None:
                    lib = _capture_image(dest, display, name, size, digest.hexdigest())
                    if lib is not None:
                        captured.append(lib)
                elif fmt := _copy_native_member(zf, info, display, dest, digest):
                    if is_extension:
                        extension = native.read_library(dest, display, fmt)
                    else:
                        captured.append(_capture_native(dest, display, name, os.path.getsize(dest),
                                                        digest.hexdigest(), fmt))
                else:
                    continue
                os.unlink(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _Found(version, {"kind": "wheel", "name": wheel.name}, captured, extension)


def _format_of(source: str | os.PathLike[str], found: _Found) -> str:
    """The one object format of the libraries found (and of torch/_C's extension)."""
    formats = {lib.format for lib in found.libs} | ({found.extension.format} if found.extension else set())
    if len(formats) > 1:
        raise InputError(f"{source}: torch's libraries mix object formats ({', '.join(sorted(formats))}); "
                         "snapshot one platform's torch")
    return formats.pop() if formats else ELF


def _is_test_library(name: str) -> bool:
    stem = name.split(".", 1)[0]
    return any(stem.removeprefix("lib") == t.split(".", 1)[0].removeprefix("lib") for t in TORCH_TEST_LIBRARIES)


def _import_set(libs: list[_Captured], fmt: str = ELF, extension: NativeLibrary | None = None) -> list[_Captured]:
    """The libraries ``import torch`` loads, as ``--against torch`` takes them."""
    by_name = {lib.name: lib for lib in libs}
    if fmt == ELF:
        loaded = import_closure(by_name, lambda name: by_name[name].needed)
    else:
        natives = {lib.name: lib.native for lib in libs if lib.native is not None}
        loaded = native.import_set(fmt, natives, extension)
    if loaded is None:
        return [lib for lib in libs if not _is_test_library(lib.name)]
    return [by_name[name] for name in loaded]


def capture(
    source: str | os.PathLike[str], torch_version: str | None = None, *, with_tests: bool = False
) -> dict[str, Any]:
    """The snapshot document of a torch ``lib/`` folder (or torch package folder) or wheel:
    the libraries ``import torch`` loads, or with ``with_tests`` every library of ``lib/``."""
    path = Path(source)
    try:
        is_dir = path.is_dir()
        is_file = path.is_file()
    except OSError as e:
        raise InputError(f"{source}: cannot read: {e.strerror or e}") from None
    if is_dir:
        found = _capture_dir(path)
    elif is_file and zipfile.is_zipfile(path):
        found = _capture_wheel(path)
    elif is_file:
        raise InputError(f"{source}: not a folder or a wheel (zip)")
    else:
        raise InputError(f"{source}: no such folder or wheel")
    fmt, libs = _format_of(source, found), found.libs
    version = torch_version or found.version
    starts = _PE_LIBRARY_STARTS if fmt == native.PE else TORCH_LIBRARY_STARTS
    if not found.version and not any(lib.name.rsplit("/", 1)[-1].startswith(starts) for lib in libs):
        # Neither torch's version file nor one of its libraries: not torch, whatever flag is added.
        raise InputError(
            f"{source}: not torch's lib/ folder, its package folder or a torch wheel (no torch/version.py, "
            "no libtorch*.so or libc10*.so); give one of those"
        )
    if not version:
        raise InputError(
            f"{source}: cannot tell the torch version (no torch/version.py beside its libraries); "
            "pass --torch-version VERSION (the version to record, e.g. 2.14.1+cu130)"
        )
    if not with_tests:
        libs = _import_set(libs, fmt, found.extension)
    if not libs:
        raise InputError(f"{source}: no ELF library with a dynamic symbol table found (nor a Mach-O or PE library)")
    libs.sort(key=lambda lib: lib.name)
    doc = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "torch_version": version,
        "source": found.origin,
        "created_by": f"aoti-shim {__version__}",
    }
    if fmt != ELF:
        doc["object_format"] = fmt  # absent for ELF: an ELF snapshot keeps the bytes it always had
    doc["libraries"] = libs
    return doc


def encode(doc: dict[str, Any]) -> bytes:
    """The file's bytes: deterministic (fixed key order, no gzip timestamps or names)."""
    header = {k: v for k, v in doc.items() if k != "libraries"}
    entries: list[dict[str, Any]] = []
    members: list[bytes] = []
    for lib in doc["libraries"]:
        entry, index, names = _library_parts(lib)
        entry["index_member"] = len(members) + 1
        members.append(gzip.compress(index, compresslevel=9, mtime=0))
        entry["names_member"] = len(members) + 1
        members.append(gzip.compress(names, compresslevel=9, mtime=0))
        entries.append(entry)
    header["libraries"] = entries
    header["members"] = [len(m) for m in members]
    text = json.dumps(header, ensure_ascii=True, separators=(", ", ": "))
    if not text.startswith(_HEAD.decode()):
        raise ValueError("snapshot documents must start with the format key")
    return gzip.compress(text.encode("ascii"), compresslevel=9, mtime=0) + b"".join(members)


def write(doc: dict[str, Any], out: str | os.PathLike[str], inputs: tuple[str, ...] = ()) -> None:
    """Write atomically: a failed run leaves no half-written snapshot behind, and never replaces an input."""
    write_bytes_atomically(out, encode(doc), what="snapshot", inputs=inputs)


def summary(doc: dict[str, Any]) -> Iterator[tuple[str, int]]:
    for lib in doc["libraries"]:
        yield lib.name, len(lib.exports)
