"""The import directory and the delay-load import directory: each DLL and the names taken from it.

Both are arrays of descriptors ended by an all-zero one; each descriptor names a DLL and
points at a thunk array (the import lookup/name table) ended by a zero thunk, each thunk
either an ordinal (top bit set) or the RVA of a hint and a name. Walks stop at the table's
end, a zero entry, or the caps below, whichever is first.
"""

from __future__ import annotations

from dataclasses import dataclass

from aoti_shim.checks.bounded.view import View
from aoti_shim.checks.pe.headers import DIRECTORY_DELAY_IMPORT, DIRECTORY_IMPORT, Headers, rva_offset, rva_string

# Past any real DLL (torch_cpu.dll imports from a few dozen DLLs, some thousand names).
_MAX_DESCRIPTORS = 4096
_MAX_THUNKS = 1 << 20


@dataclass(frozen=True)
class DllImports:
    """One descriptor: the DLL's name as written, whether delay-loaded, and its imports
    (a name, or ``#N`` for an import by ordinal N)."""

    dll: str
    delay: bool
    names: tuple[str, ...]


def read_imports(view: View, headers: Headers) -> list[DllImports]:
    found: list[DllImports] = []
    normal = headers.directory(DIRECTORY_IMPORT)
    if normal:
        at = rva_offset(view, headers, normal[0], "the import directory")
        for index in range(_MAX_DESCRIPTORS):
            entry = view.raw(at + 20 * index, 20, "an import descriptor")
            if entry == bytes(20):
                break
            lookup, name, first_thunk = view.u32(at + 20 * index, "OriginalFirstThunk"), \
                view.u32(at + 20 * index + 12, "an import's Name"), view.u32(at + 20 * index + 16, "FirstThunk")
            # Without an import lookup table (old linkers), the IAT holds the same thunks on disk.
            thunks = lookup or first_thunk
            found.append(DllImports(rva_string(view, headers, name, "an imported DLL's name"), False,
                                    _thunk_names(view, headers, thunks, 0)))
        else:
            raise view.fail(f"more than {_MAX_DESCRIPTORS} import descriptors")
    delayed = headers.directory(DIRECTORY_DELAY_IMPORT)
    if delayed:
        found.extend(_delay_imports(view, headers, delayed[0]))
    return found


def _delay_imports(view: View, headers: Headers, rva: int) -> list[DllImports]:
    found: list[DllImports] = []
    at = rva_offset(view, headers, rva, "the delay-load import directory")
    for index in range(_MAX_DESCRIPTORS):
        entry = at + 32 * index
        if view.raw(entry, 32, "a delay-load descriptor") == bytes(32):
            return found
        attributes, name, names_table = view.u32(entry, "a delay-load descriptor's Attributes"), \
            view.u32(entry + 4, "a delay-load DLL name"), view.u32(entry + 16, "ImportNameTableRVA")
        # Attributes bit 0 clear: the old Visual C++ 6 form, whose fields are VAs, not RVAs.
        base = 0 if attributes & 1 else headers.image_base
        found.append(DllImports(rva_string(view, headers, _rva(view, name, base), "a delay-loaded DLL's name"), True,
                                _thunk_names(view, headers, _rva(view, names_table, base), base)))
    raise view.fail(f"more than {_MAX_DESCRIPTORS} delay-load descriptors")


def _rva(view: View, value: int, base: int) -> int:
    if value < base:
        raise view.fail(f"a delay-load VA {value:#x} lies below the image base {base:#x}")
    return value - base


def _thunk_names(view: View, headers: Headers, rva: int, base: int) -> tuple[str, ...]:
    """The names a thunk array imports (``base``: subtracted from a VA-form hint/name address)."""
    if not rva:
        return ()
    width = 8 if headers.plus else 4
    ordinal_flag = 1 << (8 * width - 1)
    at = rva_offset(view, headers, rva, "an import lookup table")
    names: list[str] = []
    for index in range(_MAX_THUNKS):
        thunk = view.u64(at + 8 * index, "a thunk") if headers.plus else view.u32(at + 4 * index, "a thunk")
        if thunk == 0:
            return tuple(names)
        if thunk & ordinal_flag:
            names.append(f"#{thunk & 0xFFFF}")
        else:
            hint_name = _rva(view, thunk & 0x7FFFFFFF, base) if base else thunk & 0x7FFFFFFF
            names.append(rva_string(view, headers, hint_name + 2, "an imported name"))
    raise view.fail(f"more than {_MAX_THUNKS} imports from one DLL")
