"""Read an ELF file's dynamic linking facts with mmap and struct, nothing else.

:class:`ElfImage` is the public face: it opens a file (or takes a stream's parts), reads
its headers and hands each question to the reader of that table, all over one bounded
:class:`~aoti_shim.checks.elf.view.ByteView`: sections.py (the ELF header, section
headers), dynamic.py (the view through PT_DYNAMIC), dynsym.py (``.dynsym`` as columns),
gnu_hash.py, versions.py, relocations.py and strings.py.

A library with no section headers (stripped as ``sstrip`` does: the loader never needs
them) is read the loader's way: PT_DYNAMIC's DT_SYMTAB, DT_STRTAB, DT_VERSYM, and
DT_GNU_HASH or DT_HASH and the dynamic relocations, which give the symbol count
(symbol_count.py). So are a wheel member's parts
(:meth:`ElfImage.from_loaded_parts`), streamed without keeping the member.

Only the section and program headers, ``.dynsym``, its string table, ``.gnu.version``,
``.gnu.hash``, ``.dynamic`` and notes are touched, so a 480 MiB ``libtorch_cuda.so``
costs a few pages. Every offset, size, count and link is checked against the file
before it is used: the checker reads binaries that anyone can submit, and a bad one
must end in one :class:`InputError` line, never another exception. Caps on symbol
count and name bytes bound time and memory, and a file whose section headers describe
another symbol table than the one its PT_DYNAMIC segment loads is refused (fail closed).

Speed: a full scan filters raw ``iter_unpack`` tuples on ``st_info``/``st_shndx``
before any name is decoded, and keeps ``name -> packed int`` dicts; :class:`Symbol`
objects are only made for the entries a caller reads. Questions about one name
(``find_export``) go through ``.gnu.hash`` and never scan.
"""

from __future__ import annotations

import mmap
import os
from array import array
from collections.abc import Iterable, Iterator

from aoti_shim.checks.elf.dynamic import (
    DynamicSegment,
    dynamic_entries,
    load_extent,
    loader_sections,
    read_segment,
    verify_sections,
)
from aoti_shim.checks.elf.dynsym import DynamicSymbols
from aoti_shim.checks.elf.layout import (
    DF_1_NODEFLIB,
    DF_1_NOOPEN,
    DF_1_PIE,
    DF_SYMBOLIC,
    DT_AUXILIARY,
    DT_FILTER,
    DT_FLAGS,
    DT_FLAGS_1,
    DT_GNU_HASH,
    DT_HASH,
    DT_NEEDED,
    DT_REL,
    DT_RELA,
    DT_RPATH,
    DT_RUNPATH,
    DT_SONAME,
    DT_STRTAB,
    DT_SYMBOLIC,
    DT_SYMTAB,
    DT_VERDEF,
    DT_VERNEED,
    DT_VERSYM,
    SHT_DYNAMIC,
    STB_LOCAL,
    TABLE_NAMES,
    Layout,
)
from aoti_shim.checks.elf.relocations import COPY_RELOCATION, copy_relocated, relocated, relocation_bytes
from aoti_shim.checks.elf.sections import ElfHeader, SectionTable, elf_header, section_headers
from aoti_shim.checks.elf.strings import name_at
from aoti_shim.checks.elf.symbol_count import relocation_tables
from aoti_shim.checks.elf.symbols import Symbol, SymbolTable
from aoti_shim.checks.elf.versions import NO_VERSIONS, DynamicEntry, Versions, entry_of_word, read_versions
from aoti_shim.checks.elf.view import ByteView
from aoti_shim.errors import InputError

# The ELF and program headers of anything a linker writes lie in the first page.
_HEADERS_KEPT = 4096


def _parts_view(display: str, head: bytes | bytearray | mmap.mmap) -> ByteView:
    """A view over a stream's parts (a sparse anonymous map, or bytes kept in memory)."""
    view = ByteView(display, head, len(head), isinstance(head, mmap.mmap))
    if len(head) < 16:
        raise view.fail("not an ELF file (too short)")
    return view


class ElfImage:
    """A read-only view of one ELF file's dynamic linking facts.

    Use as a context manager; nothing is read past what a question needs.
    """

    def __init__(self, path: str | os.PathLike[str], display: str | None = None) -> None:
        self.path = os.fspath(path)
        self.display = display or self.path
        # Set for an image built from a stream's parts (see from_loaded_parts).
        self._dynamic_data: bytes | None = None
        self.loader_view = False
        self._view = ByteView.open(self.path, self.display)
        try:
            self._parse_header()
        except BaseException:
            self.close()
            raise
        self._view.release(0, self._view.size)  # what parsing touched: a reference may stay open a long time

    @classmethod
    def from_loaded_parts(cls, display: str, head: bytes | bytearray | mmap.mmap, dynamic: bytes) -> ElfImage:
        """An image of what the dynamic loader reads, from a stream that was not kept whole
        (a wheel member): ``head``, the file's first bytes (headers and the symbol tables
        the loader maps early), and ``dynamic``, its PT_DYNAMIC segment's bytes. Read the
        loader's way; a table past ``head`` is an InputError."""
        self = cls.__new__(cls)
        self.path = display
        self.display = display
        self._dynamic_data = dynamic
        self.loader_view = True
        self._view = view = _parts_view(display, head)
        self._parse_header()
        # Every table the loader reads must lie in what was kept: one past it (a 40 MB .dynstr
        # beyond the kept head) is an InputError here, where the stream can still fetch it,
        # not later, when the names are read and only "outside the file" can be said.
        kept_sections = [sec for sec in self._table.sections if sec.type != SHT_DYNAMIC]
        for sec in kept_sections:
            view.check_range(sec.offset, sec.size, TABLE_NAMES.get(sec.type, "a loader table"))
        if isinstance(head, mmap.mmap):
            # A sparse map (inputs._tables_ahead): keep the headers and the tables, in a fresh
            # one, so only their pages take memory.
            kept = mmap.mmap(-1, len(head))
            ranges = [(0, min(len(head), _HEADERS_KEPT))] + [(sec.offset, sec.size) for sec in kept_sections]
            for offset, size in ranges:
                end = min(offset + size, len(head))
                if end > offset:
                    kept[offset:end] = head[offset:end]
            head.close()
            view.data = kept
            return self
        # Keep only the bytes some table needs (libtorch_cpu: 8 MiB of a 64 MiB head).
        end = max((sec.offset + sec.size for sec in kept_sections), default=0)
        view.data = bytes(head[: max(end, 64)])
        view.size = len(view.data)
        return self

    @classmethod
    def loader_table_extents(cls, display: str, head: bytes | bytearray, dynamic: bytes) -> list[tuple[int, int]]:
        """Where the tables the loader reads may lie: for each of DT_STRTAB, DT_SYMTAB,
        DT_GNU_HASH, DT_HASH, DT_VERSYM and the version tables, (its file offset, the end of
        the PT_LOAD file range holding it); for each relocation table, its own extent. From
        the program headers in ``head`` and PT_DYNAMIC's bytes alone, so a stream can go and
        fetch tables that lie past what it kept (a library patchelf rewrote keeps .dynstr and
        .gnu.hash in a segment at its end)."""
        view = _parts_view(display, bytes(head))
        hdr = elf_header(view)
        segment = read_segment(view, hdr.lay, hdr.phoff, hdr.phentsize, hdr.phnum, dynamic)
        if segment is None:
            return []
        tables = ((DT_STRTAB, "DT_STRTAB"), (DT_SYMTAB, "DT_SYMTAB"), (DT_GNU_HASH, "DT_GNU_HASH"),
                  (DT_HASH, "DT_HASH"), (DT_VERSYM, "DT_VERSYM"), (DT_VERDEF, "DT_VERDEF"),
                  (DT_VERNEED, "DT_VERNEED"))
        tags = segment.tags
        found = [load_extent(view, segment, what, tags[tag]) for tag, what in tables if tag in tags]
        # The relocation tables give the symbol count (symbol_count.py); each has a size.
        for tag, what, size, _ in relocation_tables(hdr.lay, tags):
            offset, end = load_extent(view, segment, what, tags[tag])
            found.append((offset, min(offset + size, end)))
        return found

    # -- opening and validation -------------------------------------------------

    def close(self) -> None:
        self._view.close()

    def __enter__(self) -> ElfImage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - a finaliser must not raise (at interpreter exit, say)
            pass

    def _header(self) -> ElfHeader:
        """The ELF header, parsed once (it was three times a check); its class and byte order set."""
        self._view.map()  # a closed image fails here
        hdr: ElfHeader | None = getattr(self, "_parsed_header", None)
        if hdr is None:
            hdr = self._parsed_header = elf_header(self._view)
            self.elf_class = hdr.elf_class
            self.big_endian = hdr.big_endian
            self._lay: Layout = hdr.lay
        return hdr

    def _parse_header(self) -> None:
        view = self._view
        hdr = self._header()
        lay = hdr.lay
        self.e_type, self.machine = hdr.e_type, hdr.machine
        if hdr.shoff == 0 or self.loader_view:
            # No section headers (stripped as sstrip does; the loader never needs them), or
            # a stream's parts: read it the loader's way, from PT_DYNAMIC.
            self.loader_view = True
            self._table = SectionTable(view, lay, loader_sections(view, lay, hdr.phoff, hdr.phentsize, hdr.phnum,
                                                                  self._dynamic_data))
            self._symbols = DynamicSymbols(view, lay, self._table)
            return
        sections, phnum = section_headers(view, hdr)
        self._table = SectionTable(view, lay, sections)
        self._symbols = DynamicSymbols(view, lay, self._table)
        segment = read_segment(view, lay, hdr.phoff, hdr.phentsize, phnum, self._dynamic_data)
        verify_sections(view, lay, segment, self._table, self._symbols.gnu_table)
        self._segment_read = (phnum, segment)

    def _segment(self) -> DynamicSegment | None:
        hdr = self._header()
        read: tuple[int, DynamicSegment | None] | None = getattr(self, "_segment_read", None)
        if read is not None and read[0] == hdr.phnum:
            return read[1]  # the program headers as parsed (what they say does not change)
        segment = read_segment(self._view, hdr.lay, hdr.phoff, hdr.phentsize, hdr.phnum, self._dynamic_data)
        self._segment_read = (hdr.phnum, segment)
        return segment

    # -- the dynamic symbol table ---------------------------------------------

    @property
    def has_dynsym(self) -> bool:
        return self._table.dynsym_index is not None

    @property
    def has_versym(self) -> bool:
        """It has a ``.gnu.version`` (read, and checked to cover ``.dynsym``)."""
        return self._symbols.versym() is not None

    def symbol_count(self) -> int:
        return self._symbols.count()

    def size_hint(self) -> int:
        """About how many names a scan of the exports reads (a Reference's cost hint)."""
        return self.symbol_count()

    def tables_holding(
        self, contains: tuple[str, ...] = (), starts: tuple[str, ...] = ()
    ) -> tuple[SymbolTable, SymbolTable]:
        """:meth:`exports` and :meth:`imports` limited to the names that hold one of
        ``contains`` or start with one of ``starts`` (ASCII, no NUL). The string table is
        searched for each ``contains`` needle and each name's start compared (C loops); only
        the symbols picked are cut: an environment's scan asks about a few names of each of
        hundreds of libraries, and cutting every name of every one costs more than ``nm -D``."""
        return self._symbols.tables_holding(contains, starts)

    def export_name_chunks(self, chunk: int = 4096) -> Iterator[list[str]]:
        """The exported names, a list at a time, without keeping a table: a caller that
        asks about most of them (a 75k-name shim against libtorch) scans instead of
        looking each name up, and holds one chunk of names at a time."""
        return self._symbols.export_name_chunks(chunk)

    def symbols(self) -> Iterator[Symbol]:
        """Every dynamic symbol but the null entry at index 0, in table order."""
        return self._symbols.symbols()

    def exports(self) -> SymbolTable:
        """Defined symbols that another object can bind to, by name."""
        return self._symbols.build_tables()[0]

    def imports(self) -> SymbolTable:
        """Undefined symbols this object asks the dynamic linker for, by name."""
        return self._symbols.build_tables()[1]

    def export_names(self) -> set[str]:
        return set(self._symbols.build_tables()[0])

    def import_names(self) -> set[str]:
        return set(self._symbols.build_tables()[1])

    # -- lookups through .gnu.hash -------------------------------------------------

    def find_export(self, name: str) -> Symbol | None:
        """Look one name up through ``.gnu.hash``; fall back to a full scan without one."""
        symbols = self._symbols
        if symbols.tables is None:
            table = symbols.gnu_table()
            if table is not None:
                return next((sym for _, sym in symbols.exports_named(table, name)), None)
        exports = symbols.build_tables()[0]
        return exports[name] if name in exports else None

    # -- symbol versions ----------------------------------------------------------------

    def versions(self) -> Versions:
        """The version definitions and needs, by index (NO_VERSIONS without either table)."""
        cached = getattr(self, "_versions_cache", None)
        if cached is not None:
            return cached  # type: ignore[no-any-return]  # the cache getattr() reads is set below
        if not self.has_dynsym:
            return NO_VERSIONS
        result = read_versions(self._view, self._lay, self._table)
        self._versions_cache = result
        return result

    def dynamic_entries(self) -> list[DynamicEntry]:
        """Every dynamic symbol but the null entry, with its version (for the binding model:
        a library's imports, and every definition of a name, several versions included)."""
        versym = self._symbols.versym()
        versions = self.versions()
        return [_entry(sym, i, versym, versions) for i, sym in enumerate(self.symbols(), 1)]

    def find_definitions(self, name: str) -> list[DynamicEntry]:
        """Every export named ``name`` (one per version) that the loader's lookup takes:
        through ``.gnu.hash`` (a scan without one), leaving out what glibc passes over (see
        DynamicSymbols.loader_takes)."""
        symbols = self._symbols
        versym = symbols.versym()
        versions = self.versions()
        table = symbols.gnu_table()
        if table is None:
            found = [(i, sym) for i, sym in enumerate(self.symbols(), 1) if sym.name == name and sym.is_export]
        else:
            found = list(symbols.exports_named(table, name))
        return [_entry(sym, i, versym, versions) for i, sym in found if symbols.loader_takes(i)]

    def unseen_definitions(self, exports: SymbolTable, names: Iterable[str]) -> frozenset[int]:
        """The .dynsym indexes of ``exports``' definitions of ``names`` that the loader's
        lookup never returns: out of reach of .gnu.hash (a bloom word or a chain that misses
        them), or passed over (DynamicSymbols.loader_takes). One hash walk per name, no scan."""
        symbols = self._symbols
        versions = self.versions()
        table = symbols.gnu_table()
        out: set[int] = set()
        for name in names:
            reach = None if table is None else {i for i, _ in symbols.exports_named(table, name)}
            for e in exports.entries(name, versions):
                if (reach is not None and e.index not in reach) or not symbols.loader_takes(e.index):
                    out.add(e.index)
        return frozenset(out)

    def local_references(self) -> list[DynamicEntry]:
        """Undefined symbols the loader binds to their own library, at address 0: STB_LOCAL
        ones and those of a visibility other than default (glibc's RESOLVE_MAP looks up
        neither a local nor a hidden or internal reference; a protected one it looks up,
        then binds to the reference itself)."""
        if not self.has_dynsym:
            return []
        _, infos = self._symbols.columns()
        # Undefined (top half zero), and LOCAL binding or a visibility set in st_other.
        at = [i for i, w in enumerate(infos) if w <= 0xFFFF and ((w & 0xFF) >> 4 == STB_LOCAL or w & 0x300)]
        if not at:
            return []
        symbols = list(self.symbols())
        versym = self._symbols.versym()
        versions = self.versions()
        return [_entry(symbols[i], i + 1, versym, versions) for i in at if symbols[i].name]

    # -- .dynamic and notes -----------------------------------------------------------

    def _dynamic_strings(self, tag: int) -> list[str]:
        """The strings of ``tag``'s entries; .dynamic read once, each tag's names once (a
        library's needs, soname and filtees are asked several times)."""
        cache: dict[int, list[str]] | None = getattr(self, "_strings_cache", None)
        if cache is None:
            cache = {}
            self._entries = dynamic_entries(self._view, self._lay, self._table, self._dynamic_data)
            self._strings_cache = cache
        found = cache.get(tag)
        if found is None:
            found = []
            if self._entries is not None:
                strtab, values = self._entries
                found = [name_at(self._view, strtab, v) for v in values.get(tag, ())]
            cache[tag] = found
        return list(found)

    def dynamic_tags(self) -> dict[int, int]:
        """PT_DYNAMIC's tags (the first value of each), as the loader reads them."""
        cached = getattr(self, "_tags_cache", None)
        if cached is not None:
            return cached  # type: ignore[no-any-return]  # the cache getattr() reads is set below
        segment = self._segment()
        tags = {} if segment is None else segment.tags
        self._tags_cache = tags
        return tags

    @property
    def needed(self) -> list[str]:
        return self._dynamic_strings(DT_NEEDED)

    @property
    def runpath(self) -> list[str]:
        """DT_RUNPATH's strings, else DT_RPATH's (the loader ignores RPATH when RUNPATH is there)."""
        return self._dynamic_strings(DT_RUNPATH) or self._dynamic_strings(DT_RPATH)

    @property
    def search_paths(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(DT_RPATH, DT_RUNPATH) as the loader reads them, each split at ':'; RPATH is
        empty when RUNPATH is there (glibc drops it: get-dynamic-info.h)."""
        runpath = tuple(d for s in self._dynamic_strings(DT_RUNPATH) for d in s.split(":"))
        rpath = () if runpath else tuple(d for s in self._dynamic_strings(DT_RPATH) for d in s.split(":"))
        return rpath, runpath

    @property
    def nodeflib(self) -> bool:
        """Linked -z nodefaultlib: its dependencies are not looked up in the ld.so cache nor
        the system folders."""
        return bool(self.dynamic_tags().get(DT_FLAGS_1, 0) & DF_1_NODEFLIB)

    @property
    def soname(self) -> str | None:
        names = self._dynamic_strings(DT_SONAME)
        return names[0] if names else None

    @property
    def build_id(self) -> str | None:
        return self._table.build_id()

    @property
    def filtees(self) -> list[str]:
        """The libraries it is a filter of (DT_FILTER, then DT_AUXILIARY): glibc loads each
        with it and searches it just before it."""
        return self._dynamic_strings(DT_FILTER) + self._dynamic_strings(DT_AUXILIARY)

    @property
    def auxiliary_filtees(self) -> list[str]:
        """DT_AUXILIARY names alone (-f): one the loader cannot find is passed over."""
        return self._dynamic_strings(DT_AUXILIARY)

    @property
    def pie(self) -> bool:
        """Linked as a position-independent executable (DF_1_PIE): dlopen refuses it, where a
        library that merely names an interpreter (libc.so.6 does) loads."""
        return bool(self.dynamic_tags().get(DT_FLAGS_1, 0) & DF_1_PIE)

    @property
    def noopen(self) -> bool:
        """Linked -z nodlopen (DF_1_NOOPEN): dlopen refuses it."""
        return bool(self.dynamic_tags().get(DT_FLAGS_1, 0) & DF_1_NOOPEN)

    @property
    def symbolic(self) -> bool:
        """Linked -Bsymbolic (DT_SYMBOLIC or DF_SYMBOLIC): its own definitions bind first."""
        tags = self.dynamic_tags()
        return DT_SYMBOLIC in tags or bool(tags.get(DT_FLAGS, 0) & DF_SYMBOLIC)

    # -- relocations ----------------------------------------------------------------------

    def copy_relocated_indexes(self) -> frozenset[int]:
        """The .dynsym indexes an R_*_COPY relocation names (a program's copy of a library's
        data: the loader fills it from the first definer after the program, and binds every
        reference, the definer's own included, to the copy). Empty when the machine's COPY
        type is not known here or the tables cannot be read."""
        copy = COPY_RELOCATION.get(self.machine)
        tags = self.dynamic_tags()
        if copy is None or not (DT_RELA in tags or DT_REL in tags):
            return frozenset()
        try:
            segment = self._segment()
            if segment is None:
                return frozenset()
            return frozenset(copy_relocated(self._view, self._lay, segment, copy))
        except InputError:
            return frozenset()

    def lazy_symbol_indexes(self) -> frozenset[int]:
        """The .dynsym indexes that only PLT relocations (DT_JMPREL) refer to: imports the
        loader binds at their first call, not when the library loads (unless it was linked
        -z now). Empty when the relocation tables cannot be read (every import then binds
        at load, the stricter answer)."""
        found = self.relocated_symbol_indexes()
        return frozenset() if found is None else found[0]

    def relocation_bytes(self) -> int:
        """The size of its dynamic relocation tables (what reading them costs)."""
        return relocation_bytes(self.dynamic_tags())

    def relocated_symbol_indexes(self) -> tuple[frozenset[int], frozenset[int]] | None:
        """(the .dynsym indexes bound lazily, every index some dynamic relocation refers to):
        the first empty when the library binds at load (-z now); the loader looks up no
        symbol that no relocation names. None when the tables cannot be read."""
        tags = self.dynamic_tags()
        try:
            segment = self._segment()
            if segment is None:
                return None
            return relocated(self._view, self._lay, segment, tags)
        except InputError:
            return None


def _entry(symbol: Symbol, index: int, versym: array[int] | None, versions: Versions) -> DynamicEntry:
    word = versym[index] if versym is not None else 1
    return entry_of_word(symbol, index, word, versions)
