"""``read(path)``: a PE image's name, dependencies, imports and exports as frozen dataclasses."""

from __future__ import annotations

import os
from dataclasses import dataclass

from aoti_shim.checks.bounded.view import View, close, open_view
from aoti_shim.checks.pe.exports import Export, read_exports
from aoti_shim.checks.pe.headers import IMAGE_FILE_DLL, MACHINES, parse
from aoti_shim.checks.pe.imports import read_imports


@dataclass(frozen=True)
class Dependency:
    """A DLL the image imports from, named as written (the loader compares base names without
    regard to case), loaded at start (normal) or at first call (delay)."""

    name: str
    kind: str  # normal or delay


@dataclass(frozen=True)
class Import:
    """A name (or ``#N``, an ordinal) taken from one DLL: on Windows every import names its DLL."""

    name: str
    dll: str
    delay: bool


@dataclass(frozen=True)
class PEFacts:
    path: str
    format: str  # always "pe"
    architecture: str
    is_dll: bool
    dll_name: str | None  # the export directory's name, if any
    dependencies: tuple[Dependency, ...]
    exports: tuple[Export, ...]
    imports: tuple[Import, ...]


def read(path: str | os.PathLike[str], display: str | None = None) -> PEFacts:
    view = open_view(path, display)
    try:
        return read_view(view)
    finally:
        close(view)


def read_view(view: View) -> PEFacts:
    headers = parse(view)
    dll_name, exports = read_exports(view, headers)
    tables = read_imports(view, headers)
    return PEFacts(
        path=view.display, format="pe", architecture=MACHINES.get(headers.machine, f"machine {headers.machine:#x}"),
        is_dll=bool(headers.characteristics & IMAGE_FILE_DLL), dll_name=dll_name,
        dependencies=tuple(Dependency(t.dll, "delay" if t.delay else "normal") for t in tables),
        exports=exports,
        imports=tuple(Import(name, t.dll, t.delay) for t in tables for name in t.names),
    )
