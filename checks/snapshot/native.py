"""A macOS or Windows torch as a snapshot records it: each Mach-O or PE library's exports as
C names, and which libraries ``import torch`` loads, read from the wheel's own graph.

Names. Mach-O spells a C name with a leading underscore (``_aoti_torch_x``); the snapshot
records the C name (``aoti_torch_x``), as an ELF snapshot does, so the platforms compare
and a lookup asks one spelling. A Mach-O export without the underscore is no C name (no C
import can ask for it) and is left out. A PE export is recorded as its export table spells
it; an export by ordinal only has no name and is left out.

Kinds. The export trie and the export table say less than ``.dynsym``: a Mach-O weak
definition is recorded as ``STB_WEAK`` (dyld coalesces it with the other images' weak
definitions of the name, and a strong definition wins), a thread-local one as ``STT_TLS``,
everything else as ``STB_GLOBAL``/``STT_NOTYPE`` (neither format says function or data).

The import set (``--against torch`` on that platform):

- macOS: ``torch/__init__.py`` loads ``lib/libtorch_global_deps.dylib`` by path
  (``ctypes.CDLL(..., RTLD_GLOBAL)``, ``_load_global_deps``), then imports ``torch/_C``;
  the set is those two roots and what their ``LC_LOAD_DYLIB`` (weak, re-export, upward
  too) commands reach inside the wheel, each ``@rpath/`` resolved against the ``LC_RPATH``
  stack of the images that led to it and ``@loader_path`` against the loading image's
  folder, as dyld does. Absolute and ``@executable_path`` names are outside the wheel.
- Windows: ``torch/__init__.py``'s ``_load_dll_libraries`` loads every ``lib/*.dll``
  (``LoadLibraryExW`` over a glob) before ``torch/_C``, so the set is all of them; the
  import directory of ``_C*.pyd`` and its closure (DLL names matched by base name,
  without regard to case, as the loader does) is a part of it, and comes first.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aoti_shim.checks.bounded.view import close, open_view
from aoti_shim.checks.elf.layout import STB_GLOBAL, STB_WEAK, STT_NOTYPE, STT_TLS, STV_DEFAULT
from aoti_shim.checks.elf.symbols import pack_symbol
from aoti_shim.errors import InputError

if TYPE_CHECKING:
    from aoti_shim.checks.macho.exports import Export as MachOExport

ELF, MACHO, PE = "elf", "macho", "pe"
FORMATS = (ELF, MACHO, PE)
# The first bytes of a thin or fat Mach-O file (either byte order) and of a PE file.
# <mach-o/loader.h> and <mach-o/fat.h>'s magics, written here as in checks/inputs/magic.py (and
# held to the reader's constants by tests/test_snapshot_native.py): the readers' packages load
# the whole readers, which a check against an ELF snapshot never uses.
MH_MAGIC, MH_MAGIC_64, FAT_MAGIC, FAT_MAGIC_64 = 0xFEEDFACE, 0xFEEDFACF, 0xCAFEBABE, 0xCAFEBABF
_MACHO_MAGICS = {m.to_bytes(4, "little") for m in (MH_MAGIC, MH_MAGIC_64)} | {
    m.to_bytes(4, "big") for m in (MH_MAGIC, MH_MAGIC_64)
}
_FAT_MAGICS = {FAT_MAGIC.to_bytes(4, "big"), FAT_MAGIC_64.to_bytes(4, "big")}
_GLOBAL_DEPS = "lib/libtorch_global_deps.dylib"
_PLAIN = pack_symbol(STB_GLOBAL, STT_NOTYPE, STV_DEFAULT, True, False)


def format_of(head: bytes) -> str | None:
    """"macho" or "pe" for a file whose first 4 bytes are such a file's, else None."""
    if head[:4] in _MACHO_MAGICS or head[:4] in _FAT_MAGICS:
        return MACHO
    return PE if head[:2] == b"MZ" else None


@dataclass(frozen=True)
class NativeLibrary:
    """What a snapshot needs of one Mach-O or PE library."""

    format: str
    install_name: str | None  # LC_ID_DYLIB, or the PE export directory's DLL name
    exports: Mapping[str, int]  # C name -> packed kind (elf.symbols.pack_symbol)
    dependencies: tuple[str, ...]  # install names, or DLL names as imported
    rpaths: tuple[str, ...] = ()


def read_library(path: str | os.PathLike[str], display: str, fmt: str) -> NativeLibrary:
    """The library at ``path``, read by the bounded Mach-O or PE reader."""
    from aoti_shim.checks.macho.facts import read_view as read_macho_view
    from aoti_shim.checks.pe.facts import read_view as read_pe_view

    view = open_view(path, display)
    try:
        if fmt == PE:
            pe = read_pe_view(view)
            names = {e.name: _PLAIN for e in pe.exports if e.name}
            return NativeLibrary(PE, pe.dll_name, names, tuple(d.name for d in pe.dependencies))
        slices = read_macho_view(view)
    finally:
        close(view)
    first = slices[0]
    if any({e.name for e in s.exports} != {e.name for e in first.exports} for s in slices[1:]):
        raise InputError(f"{display}: a fat file whose slices export different names; snapshot one architecture")
    exports = {e.name[1:]: _macho_kind(e) for e in first.exports if e.name.startswith("_")}
    return NativeLibrary(MACHO, first.install_name, exports, tuple(d.name for d in first.dependencies), first.rpaths)


def _macho_kind(export: MachOExport) -> int:
    bind = STB_WEAK if export.weak_definition else STB_GLOBAL
    kind = STT_TLS if export.kind == "thread_local" else STT_NOTYPE
    return pack_symbol(bind, kind, STV_DEFAULT, True, False)


def import_set(fmt: str, libraries: Mapping[str, NativeLibrary], extension: NativeLibrary | None) -> list[str] | None:
    """The names (relative to torch/lib/) of ``libraries`` that ``import torch`` loads, given
    torch/_C's ``extension``; None without the extension (the graph has no root)."""
    if extension is None:
        return None
    if fmt == PE:
        return _pe_set(libraries, extension)
    present = {f"lib/{name}": lib for name, lib in libraries.items()}
    stack = tuple((rpath, "") for rpath in extension.rpaths)
    queue = [(resolved, stack) for dep in extension.dependencies if (resolved := _resolve(dep, "", stack, present))]
    if _GLOBAL_DEPS in present:
        queue.append((_GLOBAL_DEPS, ()))
    order: list[str] = []
    while queue:
        path, chain = queue.pop(0)
        if path in order:
            continue
        order.append(path)
        lib, folder = present[path], posixpath.dirname(path)
        inner = tuple((rpath, folder) for rpath in lib.rpaths) + chain  # dyld: this image's LC_RPATHs first
        queue += [(found, inner) for dep in lib.dependencies if (found := _resolve(dep, folder, inner, present))]
    return [path[len("lib/") :] for path in order]


def _resolve(dep: str, folder: str, stack: tuple[tuple[str, str], ...], present: Mapping[str, object]) -> str | None:
    """Where in the wheel (a path relative to torch/) dyld finds ``dep``, named by an image in
    ``folder``; None when it names something outside the wheel."""
    if dep.startswith("@rpath/"):
        for rpath, rpath_folder in stack:
            base = _expand(rpath, rpath_folder)
            found = posixpath.normpath(posixpath.join(base, dep[len("@rpath/") :])) if base is not None else None
            if found in present:
                return found
        return None
    if dep.startswith("@loader_path/"):
        found = posixpath.normpath(posixpath.join(folder, dep[len("@loader_path/") :]))
        return found if found in present else None
    return None  # an absolute path or @executable_path: the system's, or Python's, never the wheel's


def _expand(rpath: str, folder: str) -> str | None:
    if rpath == "@loader_path" or rpath.startswith("@loader_path/"):
        return posixpath.join(folder, rpath[len("@loader_path/") :]) if "/" in rpath else folder
    return None


def _pe_set(libraries: Mapping[str, NativeLibrary], extension: NativeLibrary) -> list[str]:
    by_base = {name.lower(): name for name in libraries}
    queue, reached = [d.lower() for d in extension.dependencies], []
    while queue:
        base = queue.pop(0)
        if base in by_base and by_base[base] not in reached:
            reached.append(by_base[base])
            queue += [d.lower() for d in libraries[by_base[base]].dependencies]
    # torch/__init__.py loads every lib/*.dll first: the closure above is a part of the set.
    return reached + sorted(name for name in libraries if name not in reached)
