"""A Mach-O slice or a PE file as the native lookup model sees it: names in C spelling.

Mach-O spells a C name with one leading underscore (``_myrt_aoti_torch_x``); the model
and its findings speak C names (``myrt_aoti_torch_x``), as ELF and the snapshots do, so one
prefix rule and one reference lookup serve all three formats. A Mach-O name without the
underscore (no C name) is kept as it is.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass

from aoti_shim.checks import macho, pe
from aoti_shim.checks.abi import prefix as prefixes
from aoti_shim.checks.macho.facts import FLAT, TWO_LEVEL, WEAK

# The lookup of a PE import: the DLL it names, and nothing else.
DLL = "dll"


@dataclass(frozen=True)
class NativeImport:
    """A name an image binds: its lookup (two_level, flat, weak, self, main_executable; dll
    for PE) and the install name or DLL it names, if any."""

    name: str
    lookup: str
    library: str | None
    # The image's own export this lookup is made for, when it is one: a PE forwarder or a
    # Mach-O re-exported symbol, which the loader resolves in ``library`` for every importer.
    forwards: str | None = None
    # A PE import by ordinal only: the ordinal (``name`` is "#N" until resolved in its DLL).
    ordinal: int | None = None

    @property
    def searches_all(self) -> bool:
        """Looked up in every image loaded globally (flat), or coalesced with them (weak)."""
        return self.lookup in (FLAT, WEAK)


@dataclass(frozen=True)
class NativeImage:
    """One image: display name, format ("macho" or "pe"), role ("shim" or "model"), the
    name others load it by (install name, DLL name), exports and imports as C names."""

    display: str
    format: str
    role: str
    architecture: str
    name: str
    exports: frozenset[str]
    weak_exports: frozenset[str]
    imports: tuple[NativeImport, ...]
    # (install name or DLL, kind): load, weak, reexport, lazy, upward; normal or delay.
    dependencies: tuple[tuple[str, str], ...]
    # A DLL's named exports by ordinal, which an import by ordinal binds to.
    ordinals: tuple[tuple[int, str], ...] = ()

    @property
    def base_name(self) -> str:
        return base_name(self.name)

    @property
    def forwarded(self) -> frozenset[str]:
        """The exports that are another image's definition (forwarders, re-exports)."""
        return frozenset(i.forwards for i in self.imports if i.forwards is not None)


def base_name(name: str) -> str:
    """What an install name or DLL name is matched by: its last component, a DLL's in lower
    case (the Windows loader compares DLL names without regard to case)."""
    last = posixpath.basename(name.replace("\\", "/"))
    return last.lower() if last.lower().endswith((".dll", ".pyd")) else last


def c_name(name: str) -> str:
    """A Mach-O symbol's C name: one leading underscore taken away."""
    return name[1:] if name.startswith("_") else name


def read_images(path: str, display: str, role: str, fmt: str) -> tuple[NativeImage, ...]:
    """The images of the file at ``path``: a Mach-O file's slices (each named by its
    architecture when there are several), or the one PE image."""
    if fmt == "pe":
        return (of_pe(pe.read(path, display), display, role, _dll_file_name(path, display)),)
    slices = macho.read(path, display)
    return tuple(of_macho(s, f"{display} ({s.architecture})" if len(slices) > 1 else display, role) for s in slices)


def of_macho(facts: macho.MachOFacts, display: str, role: str) -> NativeImage:
    # A re-exported symbol is this image's name for another library's definition: exported
    # here (dyld finds it here, two-level or flat), and a two-level lookup in that library.
    exports = list(facts.exports)
    return NativeImage(
        display=display, format="macho", role=role, architecture=facts.architecture,
        name=facts.install_name or posixpath.basename(facts.path.replace("\\", "/")),
        exports=frozenset(c_name(e.name) for e in exports),
        weak_exports=frozenset(c_name(e.name) for e in exports if e.weak_definition),
        imports=tuple(NativeImport(c_name(i.name), i.binding, i.library) for i in facts.imports)
        + tuple(_reexported(facts)),
        dependencies=tuple((d.name, d.kind) for d in facts.dependencies),
    )


def _reexported(facts: macho.MachOFacts) -> Iterator[NativeImport]:
    """Each re-exported symbol as a two-level lookup of its name there (the same name when the
    trie gives none) in the library of its ordinal (1-based, over every LC_*_DYLIB)."""
    for e in facts.exports:
        if e.reexport_ordinal is None:
            continue
        ordinal = e.reexport_ordinal
        library = facts.dependencies[ordinal - 1].name if 0 < ordinal <= len(facts.dependencies) else None
        yield NativeImport(c_name(e.reexport_name or e.name), TWO_LEVEL, library, forwards=c_name(e.name))


def _dll_file_name(path: str, display: str) -> str | None:
    """The file name a DLL is loaded by: its display's (a wheel member's "wheel!member"), else
    its path's, whichever is named as a DLL; None when neither is (a temp copy, a label)."""
    for name in (display.rsplit("!", 1)[-1], path):
        last = posixpath.basename(name.replace("\\", "/"))
        if last.lower().endswith((".dll", ".pyd")):
            return last
    return None


def of_pe(facts: pe.PEFacts, display: str, role: str, file_name: str | None = None) -> NativeImage:
    # A forwarded export is this DLL's name for the other DLL's definition: exported here, and
    # an import of the DLL itself, which the loader resolves in the DLL the forwarder names.
    return NativeImage(
        display=display, format="pe", role=role, architecture=facts.architecture,
        # The loader finds a DLL by its file name and knows a loaded one by it; the export
        # directory's name is the link-time name, which no loader reads.
        name=file_name or facts.dll_name or posixpath.basename(facts.path.replace("\\", "/")),
        exports=frozenset(e.name for e in facts.exports if e.name is not None),
        weak_exports=frozenset(),
        imports=tuple(_pe_import(i) for i in facts.imports) + tuple(_forwarders(facts.exports)),
        dependencies=tuple((d.name, d.kind) for d in facts.dependencies),
        ordinals=tuple((e.ordinal, e.name) for e in facts.exports if e.name is not None),
    )


def _pe_import(i: pe.Import) -> NativeImport:
    ordinal = int(i.name[1:]) if i.name.startswith("#") else None
    return NativeImport(i.name, DLL, i.dll, ordinal=ordinal)


def _forwarders(exports: tuple[pe.Export, ...]) -> Iterator[NativeImport]:
    """Each forwarder ("DLL.name" or "DLL.#ordinal"; the loader adds ".dll") as a lookup of
    its target name in that DLL, or of the export's own name when the target is no shim-ABI
    name (an ordinal, a function of another name): whatever it reaches, the shim's name binds there."""
    for e in exports:
        if e.forwarder is None:
            continue
        dll, _, target = e.forwarder.rpartition(".")
        own = e.name if e.name is not None else f"#{e.ordinal}"
        name = target if prefixes.is_shim_name(target) else own
        yield NativeImport(name, DLL, dll if dll.lower().endswith(".dll") else f"{dll}.dll", forwards=own)
