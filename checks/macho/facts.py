"""``read(path)``: the facts of each Mach-O slice that a lookup model needs, as frozen dataclasses."""

from __future__ import annotations

import os
from dataclasses import dataclass

from aoti_shim.checks.bounded.view import View, close, open_view
from aoti_shim.checks.macho import constants as c
from aoti_shim.checks.macho.binds import RawBind, read_chained_imports, read_opcodes
from aoti_shim.checks.macho.commands import Extent, LoadCommands, parse
from aoti_shim.checks.macho.exports import Export, read_trie
from aoti_shim.checks.macho.fat import slices

# How a bound name is looked up (dyld's meaning of the bind's library ordinal):
# TWO_LEVEL: only in the image of ``library`` (its install name); FLAT: in every image loaded
# globally, in load order (ordinal -2, or any bind of an image without MH_TWOLEVEL);
# WEAK: coalesced with the other weak definitions of the name (-3); SELF (0) and
# MAIN_EXECUTABLE (-1): in this image or in the program.
TWO_LEVEL, FLAT, WEAK, SELF, MAIN_EXECUTABLE = "two_level", "flat", "weak", "self", "main_executable"
_SPECIAL = {c.BIND_SPECIAL_DYLIB_SELF: SELF, c.BIND_SPECIAL_DYLIB_MAIN_EXECUTABLE: MAIN_EXECUTABLE,
            c.BIND_SPECIAL_DYLIB_FLAT_LOOKUP: FLAT, c.BIND_SPECIAL_DYLIB_WEAK_LOOKUP: WEAK}


@dataclass(frozen=True)
class Dependency:
    """A library the image names: install name and kind (load, weak, reexport, lazy, upward)."""

    name: str
    kind: str


@dataclass(frozen=True)
class Import:
    """A name the image binds: how it is looked up, and in which library for a two-level one."""

    name: str
    binding: str
    library: str | None
    weak_import: bool  # a missing definition leaves the pointer NULL instead of failing the load


@dataclass(frozen=True)
class MachOFacts:
    """One thin Mach-O image (one slice of a fat file)."""

    path: str
    format: str  # always "macho"
    architecture: str
    filetype: str
    flags: int
    install_name: str | None
    dependencies: tuple[Dependency, ...]
    rpaths: tuple[str, ...]
    exports: tuple[Export, ...]
    imports: tuple[Import, ...]
    fixups: str  # dyld_info, chained or none: where the binds were read

    @property
    def two_level(self) -> bool:
        return bool(self.flags & c.MH_TWOLEVEL)

    @property
    def weak_defines(self) -> bool:
        return bool(self.flags & c.MH_WEAK_DEFINES)

    @property
    def binds_to_weak(self) -> bool:
        return bool(self.flags & c.MH_BINDS_TO_WEAK)


def read(path: str | os.PathLike[str], display: str | None = None) -> tuple[MachOFacts, ...]:
    """The facts of every slice of the Mach-O file at ``path`` (one for a thin file)."""
    view = open_view(path, display)
    try:
        return read_view(view)
    finally:
        close(view)


def read_view(view: View) -> tuple[MachOFacts, ...]:
    """The facts of every slice of a Mach-O file already in a view."""
    return tuple(_slice_facts(part) for part in slices(view))


def _slice_facts(view: View) -> MachOFacts:
    commands = parse(view)
    exports = read_trie(view.sub(commands.exports_trie.offset, commands.exports_trie.size, "the export trie")) \
        if commands.exports_trie else ()
    raw, fixups = _binds(view, commands)
    return MachOFacts(
        path=view.display, format="macho", architecture=architecture(commands.cputype, commands.cpusubtype),
        filetype=c.FILETYPES.get(commands.filetype, str(commands.filetype)), flags=commands.flags,
        install_name=commands.install_name,
        dependencies=tuple(Dependency(d.name, d.kind) for d in commands.dylibs),
        rpaths=commands.rpaths, exports=exports, imports=_classify(view, commands, raw), fixups=fixups,
    )


def _binds(view: View, commands: LoadCommands) -> tuple[list[RawBind], str]:
    if commands.chained_fixups is not None:
        if commands.bind or commands.lazy_bind:
            raise view.fail("both chained fixups and dyld-info binds (dyld takes one or the other)")
        return read_chained_imports(_part(view, commands.chained_fixups, "the chained fixups")), "chained"
    raw: list[RawBind] = []
    tables = (("bind", commands.bind), ("lazy_bind", commands.lazy_bind), ("weak_bind", commands.weak_bind))
    for table, extent in tables:
        if extent is not None:
            raw.extend(read_opcodes(_part(view, extent, f"the {table} opcodes"), table))
    return raw, "dyld_info" if any(extent for _, extent in tables) else "none"


def _part(view: View, extent: Extent, what: str) -> View:
    return view.sub(extent.offset, extent.size, what)


def _classify(view: View, commands: LoadCommands, raw: list[RawBind]) -> tuple[Import, ...]:
    """One Import per (name, lookup, library); weak_import if any of its binds says so."""
    two_level = bool(commands.flags & c.MH_TWOLEVEL)
    merged: dict[tuple[str, str, str | None], bool] = {}
    for bind in raw:
        if bind.ordinal > 0:
            if bind.ordinal > len(commands.dylibs):
                raise view.fail(f"{bind.name!r} is bound to library ordinal {bind.ordinal} of {len(commands.dylibs)}")
            binding, library = TWO_LEVEL, commands.dylibs[bind.ordinal - 1].name
        elif bind.ordinal in _SPECIAL:
            binding, library = _SPECIAL[bind.ordinal], None
        else:
            raise view.fail(f"{bind.name!r} is bound to an unknown special library ordinal {bind.ordinal}")
        if not two_level and binding != WEAK:
            # A flat-namespace image (no MH_TWOLEVEL): dyld looks every name up in all images.
            binding, library = FLAT, None
        key = (bind.name, binding, library)
        merged[key] = merged.get(key, False) or bind.weak_import
    return tuple(Import(name, binding, library, weak) for (name, binding, library), weak in merged.items())


def architecture(cputype: int, cpusubtype: int) -> str:
    """The name Apple's tools give a (cputype, cpusubtype) pair."""
    subtype = cpusubtype & ~c.CPU_SUBTYPE_MASK & 0xFFFFFFFF
    if cputype == c.CPU_TYPE_X86 | c.CPU_ARCH_ABI64:
        return "x86_64h" if subtype == 8 else "x86_64"
    if cputype == c.CPU_TYPE_ARM | c.CPU_ARCH_ABI64:
        return "arm64e" if subtype == c.CPU_SUBTYPE_ARM64E else "arm64"
    if cputype == c.CPU_TYPE_ARM | c.CPU_ARCH_ABI64_32:
        return "arm64_32"
    if cputype == c.CPU_TYPE_X86:
        return "i386"
    if cputype == c.CPU_TYPE_ARM:
        return "arm"
    return f"cputype {cputype:#x}"
