"""Every bind dyld performs, from the dyld-info opcode streams or the chained-fixups imports.

The bind tables, not the symbol table, are what dyld follows: a linker may mark an
undefined nlist entry one way and encode its bind another, so the library ordinal and the
weak-import flag are read from here. Addresses are not computed (no check needs them), so
an opcode that repeats a bind N times costs one record, and the work is one step per byte.
"""

from __future__ import annotations

from dataclasses import dataclass

from aoti_shim.checks.bounded.view import View
from aoti_shim.checks.macho import constants as c

# More imports than a chained-fixups table could hold in its own bytes is a lie.
_MIN_IMPORT_SIZE = 4


@dataclass(frozen=True)
class RawBind:
    """One bound name: the library ordinal as encoded (≥1 an index, ≤0 special) and flags."""

    name: str
    ordinal: int
    weak_import: bool
    table: str  # bind, lazy_bind, weak_bind or chained


def read_opcodes(stream: View, table: str) -> list[RawBind]:
    """The binds of one dyld-info opcode stream (``table``: bind, lazy_bind or weak_bind)."""
    found: dict[RawBind, None] = {}
    ordinal, name, flags = 0, None, 0
    at = 0
    while at < stream.size:
        byte = stream.u8(at, f"the {table} opcodes")
        at += 1
        op, imm = byte & c.BIND_OPCODE_MASK, byte & c.BIND_IMMEDIATE_MASK
        if op == c.BIND_OPCODE_DONE:
            # The lazy table is one short stream per stub, each ended by DONE.
            if table != "lazy_bind":
                break
        elif op == c.BIND_OPCODE_SET_DYLIB_ORDINAL_IMM:
            ordinal = imm
        elif op == c.BIND_OPCODE_SET_DYLIB_ORDINAL_ULEB:
            ordinal, at = stream.uleb(at, f"the {table} opcodes")
        elif op == c.BIND_OPCODE_SET_DYLIB_SPECIAL_IMM:
            # A 4-bit two's complement number: 0 self, 0xF main executable, 0xE flat, 0xD weak.
            ordinal = imm - 16 if imm else 0
        elif op == c.BIND_OPCODE_SET_SYMBOL_TRAILING_FLAGS_IMM:
            flags = imm
            name, at = stream.cstring(at, f"a symbol name in the {table} opcodes")
        elif op in (c.BIND_OPCODE_SET_TYPE_IMM, c.BIND_OPCODE_DO_BIND_ADD_ADDR_IMM_SCALED, c.BIND_OPCODE_DO_BIND):
            if op != c.BIND_OPCODE_SET_TYPE_IMM:
                _record(stream, found, table, name, ordinal, flags)
        elif op in (c.BIND_OPCODE_ADD_ADDR_ULEB, c.BIND_OPCODE_DO_BIND_ADD_ADDR_ULEB):
            _, at = stream.uleb(at, f"the {table} opcodes")
            if op == c.BIND_OPCODE_DO_BIND_ADD_ADDR_ULEB:
                _record(stream, found, table, name, ordinal, flags)
        elif op == c.BIND_OPCODE_SET_ADDEND_SLEB:
            _, at = stream.sleb(at, f"the {table} opcodes")
        elif op == c.BIND_OPCODE_SET_SEGMENT_AND_OFFSET_ULEB:
            _, at = stream.uleb(at, f"the {table} opcodes")
        elif op == c.BIND_OPCODE_DO_BIND_ULEB_TIMES_SKIPPING_ULEB:
            _, at = stream.uleb(at, f"the {table} opcodes")
            _, at = stream.uleb(at, f"the {table} opcodes")
            _record(stream, found, table, name, ordinal, flags)
        elif op == c.BIND_OPCODE_THREADED:
            # Sub-opcode 0 sizes the ordinal table (a ULEB follows); 1 applies it (nothing follows).
            if imm == 0:
                _, at = stream.uleb(at, f"the {table} opcodes")
            elif imm != 1:
                raise stream.fail(f"unknown threaded bind sub-opcode {imm} in the {table} opcodes")
        else:
            raise stream.fail(f"unknown bind opcode {byte:#04x} at offset {at - 1:#x} of the {table} opcodes")
    return list(found)


def _record(stream: View, found: dict[RawBind, None], table: str, name: str | None, ordinal: int, flags: int) -> None:
    if name is None:
        raise stream.fail(f"a bind in the {table} opcodes before any symbol name")
    if table == "weak_bind":
        # No ordinal in this table: every entry is a weak lookup, coalesced across images. One
        # marked BIND_SYMBOL_FLAGS_NON_WEAK_DEFINITION announces this image's strong
        # definition, which overrides the others: a definition, not an import.
        if not flags & c.BIND_SYMBOL_FLAGS_NON_WEAK_DEFINITION:
            found[RawBind(name, c.BIND_SPECIAL_DYLIB_WEAK_LOOKUP, False, table)] = None
        return
    found[RawBind(name, ordinal, bool(flags & c.BIND_SYMBOL_FLAGS_WEAK_IMPORT), table)] = None


def read_chained_imports(fixups: View) -> list[RawBind]:
    """The imports table of LC_DYLD_CHAINED_FIXUPS: every name dyld binds, with its ordinal."""
    version = fixups.u32(0, "the chained fixups header")
    imports_offset, symbols_offset = fixups.u32(8, "imports_offset"), fixups.u32(12, "symbols_offset")
    count, imports_format, symbols_format = (fixups.u32(16, "imports_count"), fixups.u32(20, "imports_format"),
                                             fixups.u32(24, "symbols_format"))
    if version != 0:
        raise fixups.fail(f"chained fixups version {version} (only 0 is known)")
    if symbols_format != 0:
        raise fixups.fail("compressed chained-fixups symbol names are not supported")
    entry = {c.DYLD_CHAINED_IMPORT: 4, c.DYLD_CHAINED_IMPORT_ADDEND: 8, c.DYLD_CHAINED_IMPORT_ADDEND64: 16}.get(
        imports_format
    )
    if entry is None:
        raise fixups.fail(f"unknown chained imports format {imports_format}")
    if count > fixups.size // _MIN_IMPORT_SIZE:
        raise fixups.fail(f"{count} chained imports do not fit in the table")
    table = fixups.sub(imports_offset, count * entry, "the chained imports")
    found: dict[RawBind, None] = {}
    if not count:
        return []
    names = fixups.sub(symbols_offset, fixups.size - symbols_offset, "the chained import names")
    for index in range(count):
        if imports_format == c.DYLD_CHAINED_IMPORT_ADDEND64:
            word = table.u64(index * entry, "a chained import")
            ordinal, weak, name_offset = word & 0xFFFF, bool(word >> 16 & 1), word >> 32
            ordinal = ordinal - 0x10000 if ordinal >= 0xFFF0 else ordinal
        else:
            word = table.u32(index * entry, "a chained import")
            ordinal, weak, name_offset = word & 0xFF, bool(word >> 8 & 1), word >> 9
            ordinal = ordinal - 0x100 if ordinal >= 0xF0 else ordinal
        name, _ = names.cstring(name_offset, "a chained import's name")
        found[RawBind(name, ordinal, weak, "chained")] = None
    return list(found)
