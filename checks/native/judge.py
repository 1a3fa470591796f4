"""The check's rules over a native process (Mach-O or PE): one function per rule ID of
``checks/rules/table.py``, whose row holds the rule's doc and severity.

Each yields ``(artifact, symbol, message[, related])`` as the ELF rules do. Names are C
names (see :mod:`aoti_shim.checks.native.image`).
"""

from __future__ import annotations

from collections.abc import Iterator

from aoti_shim.checks.abi import prefix as prefixes
from aoti_shim.checks.abi.prefix import MODEL_ENTRY_PREFIX
from aoti_shim.checks.native import dyld
from aoti_shim.checks.native.binding import MODEL, NOTHING, REFERENCE, TORCH, UNKNOWN, Binding
from aoti_shim.checks.native.image import DLL, NativeImage
from aoti_shim.checks.native.process import NativeProcess

Finding = tuple[str, str, str] | tuple[str, str, str, "str | None"]
# What the static linker defines in every Mach-O image (C names): sharing them is harmless.
LINKER_DEFINED = frozenset({"__dso_handle", "_mh_dylib_header", "_mh_bundle_header", "_mh_execute_header"})


def _shim_names(image: NativeImage) -> list[str]:
    return sorted(n for n in image.exports if prefixes.is_shim_name(n))


def _extension(p: NativeProcess, image: NativeImage) -> bool:
    """A model with no AOTInductor entry point that imports none of the shims' prefixed names:
    a stable-ABI extension, whose unprefixed imports are meant for libtorch."""
    return (
        image.role == "model"
        and not any(n.startswith(MODEL_ENTRY_PREFIX) for n in image.exports)
        and not any(prefixes.prefix_of(i.name) in p.own_prefixes for i in image.imports if _prefixed(i.name))
    )


def not_an_aoti_model(p: NativeProcess) -> Iterator[Finding]:
    for model in p.models:
        unprefixed = sum(1 for i in model.imports if prefixes.is_unprefixed(i.name))
        if unprefixed and _extension(p, model):
            yield (
                model.display, "",
                f"exports no {MODEL_ENTRY_PREFIX}* entry point: not an AOTInductor model; its {unprefixed} unprefixed "
                "aoti_torch_* import(s) bind to libtorch by design (a stable-ABI extension?) and are not reported",
            )


def not_a_shim(p: NativeProcess) -> Iterator[Finding]:
    for shim in p.shims:
        if not _shim_names(shim):
            yield shim.display, "", f"exports no {prefixes.SHIM_MARK}* name, prefixed or not: not a shim library"


def collision(p: NativeProcess) -> Iterator[Finding]:
    """Shim exports a reference exports too, by C name."""
    for shim in p.shims:
        for name in sorted(shim.exports - LINKER_DEFINED):
            owners = [display for display, names in p.reference_exports if name in names]
            if owners:
                more = f" (and {len(owners) - 1} more)" if len(owners) > 1 else ""
                yield shim.display, name, f"'{name}' is also exported by {owners[0]}{more}", owners[0]


def unprefixed_export(p: NativeProcess) -> Iterator[Finding]:
    for shim in p.shims:
        for name in _shim_names(shim):
            if prefixes.is_unprefixed(name):
                want = f"'{p.prefix}{name}'" if p.prefix else "a prefixed name"
                yield shim.display, name, f"exports '{name}' without the prefix (expected {want})"


def mangled_shim(p: NativeProcess) -> Iterator[Finding]:
    for image in p.images:
        names = [n for n in _shim_names(image) if prefixes.is_mangled(n)]
        if names:
            yield (
                image.display, names[0],
                f"exports {len(names)} C++-mangled shim name(s), e.g. '{names[0]}': the shims are defined without "
                'extern "C", so no blob can bind to them; declare them extern "C"',
            )


def model_defines_shim(p: NativeProcess) -> Iterator[Finding]:
    for model in p.models:
        for name in _shim_names(model):
            if not prefixes.is_mangled(name):
                yield model.display, name, f"defines shim '{name}' itself; shims belong in the shim library"


def duplicate_definer(p: NativeProcess) -> Iterator[Finding]:
    """A shim-ABI name two images of one architecture define: two states, or (both weak
    definitions, Mach-O) one that dyld coalesces to the first loaded."""
    first: dict[tuple[str, str], NativeImage] = {}
    for image in p.images:
        # A forwarded name is the other image's one definition, not a second one.
        for name in sorted(set(_shim_names(image)) - image.forwarded):
            key = (image.architecture, name)
            if key not in first:
                first[key] = image
                continue
            other = first[key]
            if name in image.weak_exports and name in other.weak_exports:
                why = (f"a weak definition here and in {other.display}: dyld coalesces weak definitions across "
                       f"images, so every image binds to {other.display}'s copy")
            else:
                why = f"also defined by {other.display}; each copy has its own state"
            yield image.display, name, f"'{name}' is {why}", other.display


def _prefixed(name: str) -> bool:
    return not prefixes.is_unprefixed(name) and not prefixes.is_mangled(name)


def unprefixed_import(p: NativeProcess) -> Iterator[Finding]:
    """An unprefixed shim-ABI import by flat (or weak) lookup: libtorch, loaded first, defines
    it; or one named in an image that lacks it or in a library neither checked nor torch's."""
    yield from _unprefixed_named(p)
    for b in p.bindings:
        if b.imported.searches_all and prefixes.is_unprefixed(b.name) and not _extension(p, b.importer):
            where = f"here it binds to {b.definer}" if b.definer else "here no image defines it"
            how = (
                "by flat lookup (-undefined dynamic_lookup): dyld searches every image loaded globally in load order"
                if b.imported.lookup == "flat"
                else "by weak lookup: dyld coalesces it with the first loaded definition"
            )
            yield (
                b.importer.display, b.name,
                f"imports '{b.name}' {how}, so it binds to libtorch's whenever torch is imported first ({where})",
            )


def _unprefixed_named(p: NativeProcess) -> Iterator[Finding]:
    for b in p.bindings:
        if b.imported.searches_all or not prefixes.is_unprefixed(b.name) or _extension(p, b.importer):
            continue
        if b.kind == NOTHING:
            why = "which does not export it: the load fails"
        elif b.kind == UNKNOWN:
            why = "which is no checked shim library nor torch's: another runtime's unprefixed shims serve it"
        else:
            continue  # a shim's (UNPREFIXED_EXPORT's), or torch's (BINDS_OUTSIDE_SHIMS')
        yield b.importer.display, b.name, f"imports '{b.name}' {_lookup(b)}, {why}"


def _lookup(b: Binding) -> str:
    if b.imported.forwards is not None:
        return f"through its forwarded export '{b.imported.forwards}' from {b.imported.library}"
    if b.imported.ordinal is not None:
        return f"by ordinal {b.imported.ordinal} from {b.imported.library}"
    if b.imported.lookup == DLL:
        return f"from {b.imported.library}"
    if b.imported.searches_all:
        return f"by {b.imported.lookup} lookup"
    return f"two-level from {b.imported.library}"


def binds_outside_shims(p: NativeProcess) -> Iterator[Finding]:
    """A shim-ABI import bound to libtorch by name (two-level, DLL), or a prefixed one bound
    to a reference or a model."""
    for b in p.bindings:
        if b.kind not in (REFERENCE, TORCH, MODEL) or b.definer == b.importer.display:
            continue
        if (b.imported.searches_all or _extension(p, b.importer)) and not _prefixed(b.name):
            continue  # UNPREFIXED_IMPORT's, or a stable-ABI extension's (NOT_AN_AOTI_MODEL's)
        what = {REFERENCE: "a reference library", TORCH: "torch's library", MODEL: "a model"}[b.kind]
        if b.imported.searches_all:
            where = f"which binds to {b.definer} ({what}), first in load order, not to the shims"
        elif b.via is not None:
            where = f"which {b.via} re-exports from {b.definer} ({what}): dyld binds it there, never in the shims"
        else:
            where = f"so the loader looks it up in {b.definer} ({what}) alone, never in the shims"
        yield b.importer.display, b.name, f"imports '{b.name}' {_lookup(b)}, {where}", b.definer


def _unbound(p: NativeProcess) -> Iterator[Binding]:
    """Prefixed imports that bind to no checked shim: nothing, or a library the check lacks."""
    if p.shims:
        for b in p.bindings:
            if _prefixed(b.name) and b.kind in (NOTHING, UNKNOWN):
                yield b


def unsatisfied_import(p: NativeProcess) -> Iterator[Finding]:
    for b in _unbound(p):
        if prefixes.prefix_of(b.name) not in p.own_prefixes:
            continue  # PREFIX_MISMATCH's
        if b.kind == UNKNOWN:
            why = "which is no checked shim library: it binds to no shim"
        elif b.imported.searches_all:
            why = "and no shim library defines it: it binds to nothing"
        else:
            why = "which does not export it: it binds to nothing"
        yield b.importer.display, b.name, f"imports '{b.name}' {_lookup(b)}, {why}"


def prefix_mismatch(p: NativeProcess) -> Iterator[Finding]:
    """Blobs and shims (or the given prefix, with no shims) of different prefixes: one finding per prefix."""
    foreign: dict[tuple[str, str], list[str]] = {}
    unbound = _unbound(p) if p.shims else (b for b in p.bindings if p.prefix and _prefixed(b.name))
    for b in unbound:
        prefix = prefixes.prefix_of(b.name) or ""
        if prefix not in p.own_prefixes:
            foreign.setdefault((b.importer.display, prefix), []).append(b.name)
    carried = ", ".join(repr(x) for x in sorted(p.own_prefixes)) or "no prefix"
    for (display, prefix), names in sorted(foreign.items()):
        yield (
            display, names[0],
            f"imports {len(names)} shim name(s) with prefix {prefix!r} (e.g. '{names[0]}'), but the shims carry "
            f"{carried}: blob and shims were built with different prefixes, so it cannot bind",
        )


def absolute_dependency(p: NativeProcess) -> Iterator[Finding]:
    """A model's LC_LOAD_DYLIB by an absolute path outside the system's folders."""
    for model in p.models:
        for name, used in dyld.absolute_loads(model):
            unused = "" if used else ", and binds none of its symbols (a load for nothing: drop it)"
            yield (
                model.display, name,
                f"loads '{name}' by an absolute path: dyld finds it only where that file exists on the user's "
                f"machine{unused}; link it by @rpath",
            )
