"""The export directory: the DLL's own name and every export, by name or by ordinal only."""

from __future__ import annotations

from dataclasses import dataclass

from aoti_shim.checks.bounded.view import View
from aoti_shim.checks.pe.headers import DIRECTORY_EXPORT, Headers, rva_offset, rva_string

# Ordinals are 16 bits: a table longer than that is not one the loader could use.
_MAX_FUNCTIONS = 1 << 16


@dataclass(frozen=True)
class Export:
    """One exported address: its ordinal, its name (None if exported by ordinal only), and
    the ``DLL.name`` it forwards to (the loader then resolves that instead)."""

    ordinal: int
    name: str | None
    forwarder: str | None = None


def read_exports(view: View, headers: Headers) -> tuple[str | None, tuple[Export, ...]]:
    """(the export directory's DLL name, the exports), or (None, ()) without one."""
    directory = headers.directory(DIRECTORY_EXPORT)
    if not directory:
        return None, ()
    rva, size = directory
    at = rva_offset(view, headers, rva, "the export directory")
    view.check(at, 40, "the export directory")
    name_rva, base = view.u32(at + 12, "the export DLL name"), view.u32(at + 16, "the export ordinal base")
    functions, names = view.u32(at + 20, "NumberOfFunctions"), view.u32(at + 24, "NumberOfNames")
    if functions > _MAX_FUNCTIONS or names > functions:
        raise view.fail(f"an export table of {functions} addresses and {names} names")
    addresses = _table(view, headers, view.u32(at + 28, "AddressOfFunctions"), functions, 4, "the export addresses")
    name_rvas = _table(view, headers, view.u32(at + 32, "AddressOfNames"), names, 4, "the export names")
    ordinals = _table(view, headers, view.u32(at + 36, "AddressOfNameOrdinals"), names, 2, "the export name ordinals")
    named: dict[int, str] = {}
    for index in range(names):
        slot = view.u16(ordinals + 2 * index, "an export name ordinal")
        if slot >= functions:
            raise view.fail(f"export name {index} points at address {slot} of {functions}")
        named[slot] = rva_string(view, headers, view.u32(name_rvas + 4 * index, "an export name"), "an export name")
    exports = []
    for slot in range(functions):
        address = view.u32(addresses + 4 * slot, "an export address")
        if not address:
            continue  # an unused ordinal
        # An address inside the export directory is a forwarder string, not code.
        forwarder = rva_string(view, headers, address, "an export forwarder") if rva <= address < rva + size else None
        exports.append(Export(base + slot, named.get(slot), forwarder))
    dll = rva_string(view, headers, name_rva, "the export DLL name") if name_rva else None
    return dll, tuple(exports)


def _table(view: View, headers: Headers, rva: int, count: int, width: int, what: str) -> int:
    if not count:
        return 0
    at = rva_offset(view, headers, rva, what)
    view.check(at, count * width, what)
    return int(at)
