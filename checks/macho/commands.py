"""A thin Mach-O slice's header and load commands, every one checked against the slice."""

from __future__ import annotations

from dataclasses import dataclass

from aoti_shim.checks.bounded.view import View
from aoti_shim.checks.macho import constants as c

# No linker writes more; a hostile ncmds must not cost a loop of billions.
_MAX_COMMANDS = 1 << 16


@dataclass(frozen=True)
class DylibCommand:
    """One LC_*_DYLIB: its kind (``constants.DYLIB_KINDS``) and install name."""

    kind: str
    name: str


@dataclass(frozen=True)
class Extent:
    """A range of the slice that a load command points at (dyld info, trie, fixups)."""

    offset: int
    size: int


@dataclass(frozen=True)
class LoadCommands:
    """What the reader needs from the header and load commands of one slice."""

    is64: bool
    cputype: int
    cpusubtype: int
    filetype: int
    flags: int
    install_name: str | None
    dylibs: tuple[DylibCommand, ...]
    rpaths: tuple[str, ...]
    bind: Extent | None
    weak_bind: Extent | None
    lazy_bind: Extent | None
    exports_trie: Extent | None
    chained_fixups: Extent | None


def parse(view: View) -> LoadCommands:
    """The header and load commands of the thin Mach-O in ``view``."""
    magic = view.u32(0, "the Mach-O magic")
    if magic in (c.MH_CIGAM, c.MH_CIGAM_64):
        raise view.fail("a big-endian Mach-O slice (PowerPC) is not supported")
    if magic not in (c.MH_MAGIC, c.MH_MAGIC_64):
        raise view.fail(f"not a Mach-O file (magic {magic:#010x})")
    is64 = magic == c.MH_MAGIC_64
    header_size = 32 if is64 else 28
    view.check(0, header_size, "the Mach-O header")
    cputype, cpusubtype, filetype = view.u32(4, "cputype"), view.u32(8, "cpusubtype"), view.u32(12, "filetype")
    ncmds, sizeofcmds, flags = view.u32(16, "ncmds"), view.u32(20, "sizeofcmds"), view.u32(24, "flags")
    if ncmds > _MAX_COMMANDS:
        raise view.fail(f"{ncmds} load commands (more than {_MAX_COMMANDS})")
    commands = view.sub(header_size, sizeofcmds, "the load commands")
    state = _Collected()
    offset = 0
    for index in range(ncmds):
        cmd, cmdsize = commands.u32(offset, "a load command"), commands.u32(offset + 4, "a load command's size")
        if cmdsize < 8 or cmdsize % 4:
            raise view.fail(f"load command {index} has a bad size {cmdsize}")
        _take(commands.sub(offset, cmdsize, f"load command {index}"), cmd, state, view)
        offset += cmdsize
    return LoadCommands(
        is64=is64, cputype=cputype, cpusubtype=cpusubtype, filetype=filetype, flags=flags,
        install_name=state.install_name, dylibs=tuple(state.dylibs), rpaths=tuple(state.rpaths),
        bind=state.extents.get("bind"), weak_bind=state.extents.get("weak_bind"),
        lazy_bind=state.extents.get("lazy_bind"), exports_trie=state.extents.get("exports"),
        chained_fixups=state.extents.get("chained_fixups"),
    )


class _Collected:
    """What the load commands said so far (mutable only while parsing)."""

    def __init__(self) -> None:
        self.install_name: str | None = None
        self.dylibs: list[DylibCommand] = []
        self.rpaths: list[str] = []
        self.extents: dict[str, Extent] = {}


def _take(command: View, cmd: int, state: _Collected, slice_view: View) -> None:
    if cmd in c.DYLIB_KINDS or cmd == c.LC_ID_DYLIB:
        # dylib_command: the name's offset (lc_str) at 8, then timestamp and versions.
        name = _lc_str(command, 8, "a dylib command's name")
        if cmd == c.LC_ID_DYLIB:
            if state.install_name is not None:
                raise slice_view.fail("two LC_ID_DYLIB commands")
            state.install_name = name
        else:
            state.dylibs.append(DylibCommand(c.DYLIB_KINDS[cmd], name))
    elif cmd == c.LC_RPATH:
        state.rpaths.append(_lc_str(command, 8, "an LC_RPATH path"))
    elif cmd in (c.LC_DYLD_INFO, c.LC_DYLD_INFO_ONLY):
        # rebase, bind, weak_bind, lazy_bind, export: (offset, size) pairs from offset 8.
        for index, key in ((1, "bind"), (2, "weak_bind"), (3, "lazy_bind"), (4, "exports")):
            _extent(command, 8 + 8 * index, key, state, slice_view)
    elif cmd == c.LC_DYLD_EXPORTS_TRIE:
        _extent(command, 8, "exports", state, slice_view)
    elif cmd == c.LC_DYLD_CHAINED_FIXUPS:
        _extent(command, 8, "chained_fixups", state, slice_view)


def _lc_str(command: View, field: int, what: str) -> str:
    """A string a load command holds: its offset from the command's start at ``field``."""
    offset = command.u32(field, what)
    if offset < field + 4:
        raise command.fail(f"{what} starts inside the command's fixed fields")
    name: str = command.cstring(offset, what)[0]
    return name


def _extent(command: View, field: int, key: str, state: _Collected, slice_view: View) -> None:
    offset, size = command.u32(field, f"the {key} offset"), command.u32(field + 4, f"the {key} size")
    if size == 0:
        return
    slice_view.check(offset, size, f"the {key} table")
    if key in state.extents:
        raise slice_view.fail(f"two load commands give the {key} table")
    state.extents[key] = Extent(offset, size)
