"""What the native lookup models answer: where one shim-ABI import binds, and the images they search."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from aoti_shim.checks.abi import prefix as prefixes
from aoti_shim.checks.native.image import NativeImage, NativeImport, base_name

# Who a name binds to: a checked shim or model, a reference (--against), a torch library the
# check was not given (named by an install name or DLL name of torch's), a library the check
# does not know (not checked, no reference), or nothing.
SHIM, MODEL, REFERENCE, TORCH, UNKNOWN, NOTHING = "shim", "model", "reference", "torch", "unknown", "nothing"


class Exporter(Protocol):
    """A reference as the models ask it: its name and whether it exports a C name."""

    display: str

    def export_names(self) -> set[str]: ...


@dataclass(frozen=True)
class Binding:
    """One import of ``importer``: where the loader binds it (``definer``, its display, or None)
    and what that is (``SHIM``, ``MODEL``, ...)."""

    importer: NativeImage
    imported: NativeImport
    definer: str | None
    kind: str
    # The image the import names, when it binds in a library that image re-exports.
    via: str | None = None

    @property
    def name(self) -> str:
        return self.imported.name


@dataclass(frozen=True)
class Loaded:
    """An image of the process by the name others load it by: a checked one, or a reference
    (its exports read once)."""

    display: str
    base_name: str
    kind: str
    exports: frozenset[str]
    # The install names it re-exports whole (LC_REEXPORT_DYLIB), by base name.
    reexports: tuple[str, ...] = ()
    # A DLL's named exports by ordinal.
    ordinals: tuple[tuple[int, str], ...] = ()


def loaded(shims: Iterable[NativeImage], models: Iterable[NativeImage], references: Iterable[Exporter]) -> list[Loaded]:
    """The process's images in load order: the references first (``import torch`` loads
    libtorch before any runtime), then the shims, then the models."""
    out = [Loaded(r.display, reference_name(r), REFERENCE, frozenset(r.export_names()),
                  ordinals=getattr(r, "ordinals", ())) for r in references]
    out += [Loaded(i.display, i.base_name, SHIM, i.exports, _reexports(i), i.ordinals) for i in shims]
    out += [Loaded(i.display, i.base_name, MODEL, i.exports, _reexports(i), i.ordinals) for i in models]
    return out


def _reexports(image: NativeImage) -> tuple[str, ...]:
    return tuple(base_name(name) for name, kind in image.dependencies if kind == "reexport")


def reference_name(ref: Exporter) -> str:
    """A reference's load name: its install name or DLL name when read from a file, else its
    soname or file name (an ELF library, a snapshot's library, a wheel member)."""
    named = (getattr(ref, "install_name", None) or getattr(ref, "soname", None) or getattr(ref, "name", None)
             or ref.display)
    return base_name(str(named).rsplit("!", 1)[-1])


def by_name(images: list[Loaded], library: str | None, torch_names: frozenset[str]) -> Loaded | str:
    """The image ``library`` names (matched by base name, the first loaded), else TORCH for a
    name of torch's libraries, else UNKNOWN."""
    want = base_name(library or "")
    found = next((i for i in images if i.base_name == want), None)
    if found is not None:
        return found
    return TORCH if want in torch_names else UNKNOWN


def named_binding(importer: NativeImage, imp: NativeImport, images: list[Loaded], torch: frozenset[str]) -> Binding:
    """A lookup bound to one named image (Mach-O two-level, PE): that image's definition or nothing;
    one named in a reference is the reference's."""
    found = by_name(images, imp.library, torch)
    if isinstance(found, str):
        return Binding(importer, imp, imp.library, found)
    # Named in a reference (libtorch): bound there, exported or not (the load fails then).
    if imp.name in found.exports or found.kind == REFERENCE:
        return Binding(importer, imp, found.display, found.kind)
    reexported = _in_reexports(importer, imp, found, images, torch)
    if reexported is not None:
        return reexported
    return Binding(importer, imp, None, NOTHING)


def _in_reexports(
    importer: NativeImage, imp: NativeImport, named: Loaded, images: list[Loaded], torch: frozenset[str]
) -> Binding | None:
    """dyld's search of what ``named`` re-exports, depth first ("and in what it re-exports"):
    the first image exporting the name, or torch's library for an unprefixed shim-ABI name
    (the check has not read it; libtorch defines those)."""
    stack, seen = list(reversed(named.reexports)), {named.base_name}
    while stack:
        want = stack.pop()
        if want in seen:
            continue
        seen.add(want)
        found = by_name(images, want, torch)
        if isinstance(found, str):
            if found == TORCH and prefixes.is_unprefixed(imp.name):
                return Binding(importer, imp, want, TORCH, via=named.display)
            continue
        if imp.name in found.exports:
            return Binding(importer, imp, found.display, found.kind, via=named.display)
        stack.extend(reversed(found.reexports))
    return None
