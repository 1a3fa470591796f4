"""The ``.dynsym`` reader: the table read as columns (``st_name`` and an info word per
entry, in arrays) and filtered on raw ints before any name is cut, the export and import
tables built from them, the symbols in table order, one symbol by index, the exports of
one name through ``.gnu.hash``, and whether glibc's lookup takes a definition."""

from __future__ import annotations

import mmap
import sys
from array import array
from collections.abc import Iterator
from operator import itemgetter

from aoti_shim.checks.elf import gnu_hash
from aoti_shim.checks.elf.gnu_hash import GnuHash
from aoti_shim.checks.elf.layout import (
    MAX_NAME_BYTES,
    MAX_NAME_LEN,
    SHN_ABS,
    SHN_UNDEF,
    SHT_GNU_HASH,
    SHT_GNU_VERSYM,
    STT_FUNC,
    STT_GNU_IFUNC,
    STT_NOTYPE,
    STT_OBJECT,
    STT_TLS,
    Layout,
    Section,
)
from aoti_shim.checks.elf.sections import SectionTable
from aoti_shim.checks.elf.strings import cut_names, decode, name_at, string_table
from aoti_shim.checks.elf.symbols import DEFINED_BIT, EXPORT_WORDS, IMPORT_WORDS, INDEX_SHIFT, Symbol, SymbolTable
from aoti_shim.checks.elf.view import RELEASE_AFTER, ByteView

# The symbol types glibc's lookup takes a definition of (ALLOWED_STT in dl-lookup.c; 5 is
# STT_COMMON): a definition of another type, or of value 0 outside SHN_ABS and TLS, it passes over.
# A .dynsym up to this size keeps its columns once read (a blob's are read twice); a
# bigger one reads them again rather than hold them (libtorch_cpu's: 600 KB).
_COLUMNS_KEPT_UP_TO = 64 << 10

_LOADER_TYPES = frozenset((STT_NOTYPE, STT_OBJECT, STT_FUNC, 5, STT_TLS, STT_GNU_IFUNC))


def _search(data: bytes | mmap.mmap, base: int, size: int, contains: list[bytes], starts: list[bytes]) -> bytearray:
    """A byte per offset of the table at ``base``: 1 where a picked name may start. For a
    ``contains`` needle, from the start of the string holding it up to the needle (a
    tail-merged name starts inside a longer string); for a ``starts`` prefix, exactly where
    it occurs. One C pass per needle over the table where it lies in the file."""
    mask = bytearray(size)
    end = base + size
    find, rfind = data.find, data.rfind
    for needle in contains:
        at = find(needle, base, end)
        while at >= 0:
            start = rfind(b"\0", base, at) + 1 or base
            mask[start - base : at + 1 - base] = b"\1" * (at + 1 - start)
            at = find(needle, at + 1, end)
    for prefix in starts:
        at = find(prefix, base, end)
        while at >= 0:
            mask[at - base] = 1
            at = find(prefix, at + 1, end)
    return mask


def _marked(mask: bytearray, names: array[int]) -> list[int] | None:
    """The indices ``i`` with ``mask[names[i]]`` set, in order; None when an offset is past
    the mask. One C gather (itemgetter) and a find per hit: half the cost of a Python-level
    map and compress per symbol, which was an eighth of a venv's scan."""
    if len(names) < 2:  # itemgetter of one item gives the item, not a tuple
        got = [mask[n] for n in names if n < len(mask)]
        return None if len(got) < len(names) else [i for i, bit in enumerate(got) if bit]
    try:
        bits = bytes(itemgetter(*names)(mask))
    except IndexError:  # the mask is .dynstr's size: the bounds check rides on the lookup
        return None
    picked = []
    at = bits.find(1)
    while at >= 0:
        picked.append(at)
        at = bits.find(1, at + 1)
    return picked


class DynamicSymbols:
    """One file's dynamic symbols, read on demand: ``.gnu.version``, ``.gnu.hash`` and the
    export and import tables are each read once and kept."""

    __slots__ = ("view", "lay", "table", "tables", "_versym", "_gnu", "_columns")

    def __init__(self, view: ByteView, lay: Layout, table: SectionTable) -> None:
        self.view = view
        self.lay = lay
        self.table = table
        # (exports, imports) once built: a later chunked scan or lookup reuses them.
        self.tables: tuple[SymbolTable, SymbolTable] | None = None
        self._versym: array[int] | None | bool = False
        self._gnu: GnuHash | None | bool = False
        self._columns: tuple[array[int], array[int]] | None = None

    def count(self) -> int:
        sym, _ = self.table.dynsym()
        return sym.size // sym.entsize

    def versym(self) -> array[int] | None:
        """``.gnu.version`` as native ints, or None without one."""
        if self._versym is not False:
            return self._versym  # type: ignore[return-value]  # False means "not read yet"
        sec = self.table.first(SHT_GNU_VERSYM)
        result = None
        if sec is not None:
            sym, _ = self.table.dynsym()
            count = sym.size // sym.entsize
            if sec.size < count * 2:
                raise self.view.fail(".gnu.version is shorter than .dynsym")
            result = array("H", self.view.bytes(sec.offset, count * 2, ".gnu.version"))
            if self.lay.swapped:
                result.byteswap()
        self._versym = result
        return result

    def gnu_table(self) -> GnuHash | None:
        """``.gnu.hash`` when it indexes ``.dynsym``, its header checked; else None."""
        if self._gnu is not False:
            return self._gnu  # type: ignore[return-value]  # False means "not read yet"
        table = self.table
        sec = table.first(SHT_GNU_HASH)
        result = None
        if sec is not None and table.dynsym_index is not None and sec.link == table.dynsym_index:
            result = gnu_hash.read_table(self.view, self.lay, sec, self.count())
        self._gnu = result
        return result

    def keys(self) -> list[tuple[int, int, int, int]]:
        """(st_name, st_info, st_other, st_shndx) of every entry but the null one."""
        sym, _ = self.table.dynsym()
        key = self.lay.sym_key
        view = memoryview(self.view.map())[sym.offset + sym.entsize : sym.offset + sym.size]
        try:
            return list(key.iter_unpack(view))
        finally:
            view.release()

    def columns(self) -> tuple[array[int], array[int]]:
        """``st_name`` of every entry but the null one, and a word per entry whose low
        byte is ``st_info``, next byte ``st_other`` and top half non-zero when defined."""
        if self._columns is not None:
            return self._columns
        sym, _ = self.table.dynsym()
        words = array("I", self.view.bytes(sym.offset, sym.size, ".dynsym"))
        per = sym.entsize // 4
        info_at = 1 if self.lay.sym_key.size == 24 else 3
        names = words[per::per]
        infos = words[per + info_at :: per]
        if self.lay.swapped:
            names.byteswap()
        if sys.byteorder == "big":
            # st_info, st_other, st_shndx are bytes 0..3 of the word in either file
            # order (shndx only matters as zero or not), so read them little-endian.
            infos.byteswap()
        if sym.size <= _COLUMNS_KEPT_UP_TO:
            self._columns = names, infos  # asked again for the local references; never changed
        return names, infos

    def build_tables(self) -> tuple[SymbolTable, SymbolTable]:
        """(exports, imports), built once."""
        if self.tables is not None:
            return self.tables
        _, strtab = self.table.dynsym()
        names, infos = self.columns()
        exp_ok, imp_ok = EXPORT_WORDS, IMPORT_WORDS
        # Filter on the raw ints first; names are cut only for the survivors.
        export_idx = [i for i, w in enumerate(infos) if w > 0xFFFF and w & 0x3FF in exp_ok]
        import_idx = [i for i, w in enumerate(infos) if w <= 0xFFFF and w & 0xFF in imp_ok]
        strings = string_table(self.view, strtab)
        self.tables = self._tables_of(strtab.size, strings, names, infos, export_idx, import_idx)
        return self.tables

    def _tables_of(
        self,
        size: int,
        strings: bytes | str | mmap.mmap,
        names: array[int],
        infos: array[int],
        export_idx: list[int],
        import_idx: list[int],
        base: int = 0,
    ) -> tuple[SymbolTable, SymbolTable]:
        """The export and import tables of the symbols at ``export_idx`` and ``import_idx``
        (names cut from ``strings``, the table at ``base`` in it: see cut_names)."""
        tables = []
        names_bytes = 0
        for idx, defined in ((export_idx, DEFINED_BIT), (import_idx, 0)):
            offsets = [names[i] for i in idx]
            if offsets and max(offsets) >= size:
                raise self.view.fail(f"a symbol name offset is past .dynstr (size {size})")
            cut, names_bytes = cut_names(self.view, strings, offsets, names_bytes, base)
            # The symbol index rides along so .gnu.version is read only for symbols asked about.
            packed = [(infos[i] & 0x3FF) | defined | (i + 1) << INDEX_SHIFT for i in idx]
            table = dict(zip(reversed(cut), reversed(packed)))  # the first of duplicate names wins
            unnamed = cut.count("") if "" in table else 0
            table.pop("", None)
            more: dict[str, list[int]] = {}
            if len(table) + unnamed < len(cut):  # a name given twice (several versions of it)
                for name, p in zip(cut, packed):
                    if name and table[name] != p:
                        more.setdefault(name, []).append(p)
            tables.append(SymbolTable(table, self.versym(), more))
        return tables[0], tables[1]

    def tables_holding(self, contains: tuple[str, ...], starts: tuple[str, ...]) -> tuple[SymbolTable, SymbolTable]:
        """The export and import tables limited to the names that hold one of ``contains``
        or start with one of ``starts`` (see ElfImage.tables_holding). The table is searched
        where it lies in the file, not decoded: only the picked names are."""
        _, strtab = self.table.dynsym()
        names, infos = self.columns()
        size, base = strtab.size, strtab.offset
        self.view.check_range(base, size, ".dynstr")
        data = self.view.map()
        if size == 0 or data[base + size - 1] != 0:
            raise self.view.fail(".dynstr does not end in a NUL byte (unterminated name)")
        mask = _search(data, base, size, [n.encode("ascii") for n in contains], [n.encode("ascii") for n in starts])
        picked = _marked(mask, names)
        if picked is None:
            raise self.view.fail(f"a symbol name offset is past .dynstr (size {size})")
        exp_ok, imp_ok = EXPORT_WORDS, IMPORT_WORDS
        export_idx = [i for i in picked if infos[i] > 0xFFFF and infos[i] & 0x3FF in exp_ok]
        import_idx = [i for i in picked if infos[i] <= 0xFFFF and infos[i] & 0xFF in imp_ok]
        tables = self._tables_of(size, data, names, infos, export_idx, import_idx, base)
        if size >= RELEASE_AFTER:
            self.view.release(base, size)  # the pages read: a big table would count in the peak memory
        return tables

    def export_name_chunks(self, chunk: int) -> Iterator[list[str]]:
        """The exported names, a list at a time (see ElfImage.export_name_chunks)."""
        if self.tables is not None:
            names = list(self.tables[0])
            for first in range(0, len(names), chunk):
                yield names[first : first + chunk]
            return
        _, strtab = self.table.dynsym()
        offsets_all, infos = self.columns()
        exp_ok = EXPORT_WORDS
        offsets = [offsets_all[i] for i, w in enumerate(infos) if w > 0xFFFF and w & 0x3FF in exp_ok]
        del offsets_all, infos
        if offsets and max(offsets) >= strtab.size:
            raise self.view.fail(f"a symbol name offset is past .dynstr (size {strtab.size})")
        strings = string_table(self.view, strtab)
        used = 0
        for first in range(0, len(offsets), chunk):
            names, used = cut_names(self.view, strings, offsets[first : first + chunk], used)
            yield names

    def symbols(self) -> Iterator[Symbol]:
        """Every dynamic symbol but the null entry at index 0, in table order."""
        _, strtab = self.table.dynsym()
        keys = self.keys()
        versym = self.versym()
        strings = string_table(self.view, strtab)
        size = strtab.size
        names_bytes = 0
        for i, (st_name, st_info, st_other, st_shndx) in enumerate(keys, 1):
            if st_name >= size:
                raise self.view.fail(f"symbol name offset {st_name} is past .dynstr (size {size})")
            end = strings.find("\0" if isinstance(strings, str) else b"\0", st_name, st_name + MAX_NAME_LEN)  # type: ignore[arg-type]  # NUL of strings' type
            if end < 0:
                raise self.view.fail(f"a symbol name is longer than {MAX_NAME_LEN >> 10} KiB")
            name = strings[st_name:end] if isinstance(strings, str) else decode(strings[st_name:end])
            names_bytes += len(name)
            if names_bytes > MAX_NAME_BYTES:
                raise self.view.fail(f"symbol names add up to more than {MAX_NAME_BYTES >> 20} MiB")
            yield Symbol(
                name=name,
                bind=st_info >> 4,
                type=st_info & 0xF,
                visibility=st_other & 0x3,
                defined=st_shndx != SHN_UNDEF,
                versioned=versym is not None and (versym[i] & 0x7FFF) >= 2,
            )

    def symbol_at(self, index: int) -> Symbol:
        sym, strtab = self.table.dynsym()
        return self._symbol_at(sym, strtab, index)

    def _symbol_at(self, sym: Section, strtab: Section, index: int) -> Symbol:
        st_name, st_info, st_other, st_shndx = self.lay.sym_key.unpack_from(
            self.view.map(), sym.offset + index * sym.entsize
        )
        versym = self.versym()
        return Symbol(
            name=name_at(self.view, strtab, st_name),
            bind=st_info >> 4,
            type=st_info & 0xF,
            visibility=st_other & 0x3,
            defined=st_shndx != SHN_UNDEF,
            versioned=versym is not None and (versym[index] & 0x7FFF) >= 2,
        )

    def exports_named(self, t: GnuHash, name: str) -> Iterator[tuple[int, Symbol]]:
        """(index, symbol) of each export named ``name``, walking its ``.gnu.hash`` chain
        (the bloom filter first): the loader's lookup, one home for both of its callers."""
        sym, strtab = self.table.dynsym()

        def export_at(index: int) -> Symbol | None:
            found = self._symbol_at(sym, strtab, index)
            return found if found.name == name and found.is_export else None

        return gnu_hash.matches(self.view, self.lay, t, name, sym.size // sym.entsize, export_at)

    def loader_takes(self, index: int) -> bool:
        """glibc's do_lookup_x takes the definition at ``index``: of a code or data type
        (ALLOWED_STT), and of a value other than 0 unless SHN_ABS or TLS."""
        sym, _ = self.table.dynsym()
        fields = self.lay.sym.unpack_from(self.view.map(), sym.offset + index * sym.entsize)
        # ELF64: name, info, other, shndx, value, size; ELF32: name, value, size, info, other, shndx.
        info, shndx, value = (
            (fields[1], fields[3], fields[4]) if self.lay.sym.size == 24 else (fields[3], fields[5], fields[1])
        )
        if info & 0xF not in _LOADER_TYPES:
            return False
        return bool(value != 0 or shndx == SHN_ABS or info & 0xF == STT_TLS)
