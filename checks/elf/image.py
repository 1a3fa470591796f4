"""Read an ELF file's dynamic symbol table with mmap and struct, nothing else.

A library with no section headers (stripped as ``sstrip`` does: the loader never needs
them) is read the loader's way: PT_DYNAMIC's DT_SYMTAB, DT_STRTAB, DT_VERSYM and
DT_GNU_HASH or DT_HASH, which give the symbol count. So are a wheel member's parts
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
import struct
import sys
from array import array
from dataclasses import dataclass
from itertools import compress, repeat
from typing import Iterable, Iterator

from aoti_shim.checks.elf.layout import (
    DF_1_NODEFLIB,
    DF_1_NOOPEN,
    DF_1_NOW,
    DF_BIND_NOW,
    DF_SYMBOLIC,
    DT_AUXILIARY,
    DT_BIND_NOW,
    DT_FILTER,
    DT_FLAGS,
    DT_FLAGS_1,
    DT_GNU_HASH,
    DT_HASH,
    DT_JMPREL,
    DT_NEEDED,
    DT_NULL,
    DT_PLTREL,
    DT_PLTRELSZ,
    DT_REL,
    DT_RELA,
    DT_RELASZ,
    DT_RELSZ,
    DT_RPATH,
    DT_RUNPATH,
    DT_SONAME,
    DT_STRSZ,
    DT_STRTAB,
    DT_SYMBOLIC,
    DT_SYMENT,
    DT_SYMTAB,
    DT_VERDEF,
    DT_VERDEFNUM,
    DT_VERNEED,
    DT_VERNEEDNUM,
    DT_VERSYM,
    ELF_MAGIC,
    MAX_DYNAMIC_ENTRIES,
    MAX_NAME_BYTES,
    MAX_NAME_LEN,
    MAX_NOTE_SECTION,
    MAX_SECTIONS,
    MAX_SYMBOLS,
    MAX_VERSIONS,
    NT_GNU_BUILD_ID,
    PN_XNUM,
    PT_DYNAMIC,
    PT_LOAD,
    PT_NOTE,
    SHN_ABS,
    SHN_UNDEF,
    SHT_DYNAMIC,
    SHT_DYNSYM,
    SHT_GNU_HASH,
    SHT_GNU_VERDEF,
    SHT_GNU_VERNEED,
    SHT_GNU_VERSYM,
    SHT_NOTE,
    SHT_STRTAB,
    STB_LOCAL,
    STT_FUNC,
    STT_GNU_IFUNC,
    STT_NOTYPE,
    STT_OBJECT,
    STT_TLS,
    TABLE_NAMES,
    VER_FLG_BASE,
    Section,
    layout,
)
from aoti_shim.checks.elf.strings import cut_names, decode, name_at, string_table
from aoti_shim.checks.elf.symbols import DEFINED_BIT, EXPORT_WORDS, IMPORT_WORDS, INDEX_SHIFT, Symbol, SymbolTable
from aoti_shim.checks.elf.versions import NO_VERSIONS, DynamicEntry, Versions, entry_of_word
from aoti_shim.checks.elf.view import ByteView
from aoti_shim.errors import InputError

# The symbol types glibc's lookup takes a definition of (ALLOWED_STT in dl-lookup.c; 5 is
# STT_COMMON): a definition of another type, or of value 0 outside SHN_ABS and TLS, it passes over.
_LOADER_TYPES = frozenset((STT_NOTYPE, STT_OBJECT, STT_FUNC, 5, STT_TLS, STT_GNU_IFUNC))

# R_<machine>_COPY by e_machine: i386, ARM, x86-64, PowerPC64, S390, AArch64, RISC-V.
_COPY_RELOCATION = {3: 5, 40: 20, 62: 5, 21: 19, 22: 9, 183: 1024, 243: 4}


# The ELF and program headers of anything a linker writes lie in the first page.
_HEADERS_KEPT = 4096


@dataclass(frozen=True)
class _DynamicSegment:
    """What the dynamic loader reads: the PT_LOAD extents (vaddr, offset, size), the PT_NOTEs
    (offset, size), and PT_DYNAMIC's place, whole entries and tags up to DT_NULL."""

    loads: list[tuple[int, int, int]]
    notes: list[tuple[int, int]]
    offset: int
    data: bytes
    tags: dict[int, int]


@dataclass(frozen=True)
class _GnuHash:
    nbuckets: int
    symoffset: int
    bloom_size: int
    bloom_shift: int
    bloom_off: int
    buckets_off: int
    chain_off: int
    end: int


_hash_cache: dict[str, tuple[bytes, int]] = {}


def gnu_hash(name: bytes) -> int:
    """The GNU dynamic linker's symbol hash (djb2, 32-bit)."""
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


def _hashed(name: str) -> tuple[bytes, int]:
    # The same few hundred names are looked up in every reference: hash once.
    found = _hash_cache.get(name)
    if found is None:
        key = name.encode("utf-8", "surrogatepass")
        found = (key, gnu_hash(key))
        if len(_hash_cache) < 1 << 16:
            _hash_cache[name] = found
    return found


class ElfImage:
    """A read-only view of one ELF file's dynamic linking facts.

    Use as a context manager; nothing is read past what a question needs.
    """

    def __init__(self, path: str | os.PathLike[str], display: str | None = None) -> None:
        self.path = os.fspath(path)
        self.display = display or self.path
        self._tables: tuple[SymbolTable, SymbolTable] | None = None
        self._dynsym_cache: tuple[Section, Section] | None = None
        self._gnu: _GnuHash | None | bool = False
        self._versym_cache: array[int] | None | bool = False
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
        self = cls._of_parts(display, head, dynamic)
        self._parse_header()
        # Every table the loader reads must lie in what was kept: one past it (a 40 MB .dynstr
        # beyond the kept head) is an InputError here, where the stream can still fetch it,
        # not later, when the names are read and only "outside the file" can be said.
        for sec in self._sections:
            if sec.type != SHT_DYNAMIC:
                self._view.check_range(sec.offset, sec.size, TABLE_NAMES.get(sec.type, "a loader table"))
        if isinstance(head, mmap.mmap):
            # A sparse map (inputs._tables_ahead): keep the headers and the tables, in a fresh
            # one, so only their pages take memory.
            kept = mmap.mmap(-1, len(head))
            for offset, size in [(0, min(len(head), _HEADERS_KEPT))] + [
                (sec.offset, sec.size) for sec in self._sections if sec.type != SHT_DYNAMIC
            ]:
                end = min(offset + size, len(head))
                if end > offset:
                    kept[offset:end] = head[offset:end]
            head.close()
            self._view.data = kept
            return self
        # Keep only the bytes some table needs (libtorch_cpu: 8 MiB of a 64 MiB head).
        end = max((sec.offset + sec.size for sec in self._sections if sec.type != SHT_DYNAMIC), default=0)
        self._view.data = bytes(head[: max(end, 64)])
        self._view.size = len(self._view.data)
        return self

    @classmethod
    def _of_parts(cls, display: str, head: bytes | bytearray | mmap.mmap, dynamic: bytes) -> ElfImage:
        """An image over a stream's parts, not yet parsed."""
        self = cls.__new__(cls)
        self.path = display
        self.display = display
        self._view = ByteView(display, head, len(head), isinstance(head, mmap.mmap))
        self._tables = None
        self._dynsym_cache = None
        self._gnu = False
        self._versym_cache = False
        self._dynamic_data = dynamic
        self.loader_view = True
        if len(head) < 16:
            raise self._view.fail("not an ELF file (too short)")
        return self

    @classmethod
    def loader_table_extents(cls, display: str, head: bytes | bytearray, dynamic: bytes) -> list[tuple[int, int]]:
        """Where the tables the loader reads may lie: for each of DT_STRTAB, DT_SYMTAB,
        DT_GNU_HASH, DT_HASH and DT_VERSYM, (its file offset, the end of the PT_LOAD
        file range holding it). From the program headers in ``head`` and PT_DYNAMIC's
        bytes alone, so a stream can go and fetch tables that lie past what it kept (a
        library patchelf rewrote keeps .dynstr and .gnu.hash in a segment at its end)."""
        self = cls._of_parts(display, bytes(head), dynamic)
        hdr = self._elf_header()
        segment = self._dynamic_segment(hdr[5], hdr[9], hdr[10])
        if segment is None:
            return []
        tables = ((DT_STRTAB, "DT_STRTAB"), (DT_SYMTAB, "DT_SYMTAB"), (DT_GNU_HASH, "DT_GNU_HASH"),
                  (DT_HASH, "DT_HASH"), (DT_VERSYM, "DT_VERSYM"), (DT_VERDEF, "DT_VERDEF"),
                  (DT_VERNEED, "DT_VERNEED"))  # fmt: skip
        return [self._load_extent(segment, what, segment.tags[tag]) for tag, what in tables if tag in segment.tags]

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
        except Exception:
            pass

    def _elf_header(self) -> tuple[int, ...]:
        """The ELF header's fields, its identification checked (class and byte order set)."""
        ident = self._view.map()[:16]
        if ident[:4] != ELF_MAGIC:
            raise self._view.fail("not an ELF file (bad magic)")
        if ident[4] not in (1, 2):
            raise self._view.fail(f"unknown ELF class {ident[4]}")
        if ident[5] not in (1, 2):
            raise self._view.fail(f"unknown ELF data encoding {ident[5]}")
        self.elf_class = 64 if ident[4] == 2 else 32
        self.big_endian = ident[5] == 2
        self._lay = layout(ident[4], ">" if self.big_endian else "<")
        return self._lay.ehdr.unpack(self._view.bytes(0, self._lay.ehdr.size, "ELF header"))  # type: ignore[no-any-return]

    def _parse_header(self) -> None:
        hdr = self._elf_header()
        lay = self._lay
        (_, self.e_type, self.machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, _) = hdr
        if shoff == 0 or self.loader_view:
            # No section headers (stripped as sstrip does; the loader never needs them), or
            # a stream's parts: read it the loader's way, from PT_DYNAMIC.
            self.loader_view = True
            self._sections = self._sections_from_segments(phoff, phentsize, phnum)
            self._dynsym_index = next((i for i, s in enumerate(self._sections) if s.type == SHT_DYNSYM), None)
            return
        if shentsize != lay.shdr.size:
            raise self._view.fail(f"bad section header size {shentsize}")
        if shnum == 0:
            # Extended numbering: the real count lives in section 0's sh_size.
            shnum = lay.shdr.unpack(self._view.bytes(shoff, lay.shdr.size, "section header 0"))[5]
        if shnum > MAX_SECTIONS:
            raise self._view.fail(f"implausible section count {shnum}")
        table = self._view.bytes(shoff, shnum * lay.shdr.size, "section header table")
        raw_sections = list(lay.shdr.iter_unpack(table))
        self._sections = [
            Section(type=raw[1], offset=raw[4], size=raw[5], link=raw[6], entsize=raw[9], info=raw[7]) for raw in raw_sections
        ]
        self._dynsym_index = next((i for i, s in enumerate(self._sections) if s.type == SHT_DYNSYM), None)
        if phnum == PN_XNUM and raw_sections:
            phnum = raw_sections[0][7]  # extended numbering: section 0's sh_info
        self._verify_against_segments(phoff, phentsize, phnum)

    # -- the loader's view --------------------------------------------------------------

    def _sections_from_segments(self, phoff: int, phentsize: int, phnum: int) -> list[Section]:
        """The sections the rest of the reader uses, made from what the loader reads:
        PT_DYNAMIC's DT_SYMTAB, DT_STRTAB/DT_STRSZ, DT_VERSYM, and DT_GNU_HASH or DT_HASH
        for the symbol count (the dynamic symbol table has no size of its own)."""
        lay = self._lay
        if phoff == 0 or phnum == 0:
            return []  # not loadable: nothing binds to it
        if phnum == PN_XNUM:
            raise self._view.fail("extended program header numbering needs section 0, and there are no section headers")
        segment = self._dynamic_segment(phoff, phentsize, phnum)
        if segment is None:
            return []
        tags, notes = segment.tags, segment.notes

        def file_offset(what: str, vaddr: int) -> int:
            return self._file_offset(segment, what, vaddr)

        # Index 0 is the null section, as in a real table; 1 the strings, 2 the symbols.
        sections = [Section(0, 0, 0, 0, 0)]
        if DT_STRTAB not in tags or DT_STRSZ not in tags:
            if DT_SYMTAB in tags:
                raise self._view.fail("PT_DYNAMIC names a symbol table but no string table (DT_STRTAB, DT_STRSZ)")
            return []
        sections.append(Section(SHT_STRTAB, file_offset("DT_STRTAB", tags[DT_STRTAB]), tags[DT_STRSZ], 0, 0))
        if DT_SYMTAB in tags:
            syment = tags.get(DT_SYMENT, lay.sym.size)
            symtab = file_offset("DT_SYMTAB", tags[DT_SYMTAB])
            gnu: tuple[int, int] | None = None
            if DT_GNU_HASH in tags:
                at = file_offset("DT_GNU_HASH", tags[DT_GNU_HASH])
                gnu = self._gnu_extent(at)
                count = gnu[0]
            elif DT_HASH in tags:
                at = file_offset("DT_HASH", tags[DT_HASH])
                self._view.check_range(at, 8, "DT_HASH")
                count = lay.word.unpack_from(self._view.map(), at + 4)[0]  # nchain = the symbol count
            else:
                raise self._view.fail("PT_DYNAMIC has no DT_GNU_HASH or DT_HASH: the dynamic symbol count is unknown")
            if count > MAX_SYMBOLS:
                raise self._view.fail(f"its hash table counts {count} symbols, more than {MAX_SYMBOLS}")
            sections.append(Section(SHT_DYNSYM, symtab, count * syment, 1, syment))
            if gnu is not None:
                sections.append(Section(SHT_GNU_HASH, at, gnu[1], 2, 0))
            if DT_VERSYM in tags:
                sections.append(Section(SHT_GNU_VERSYM, file_offset("DT_VERSYM", tags[DT_VERSYM]), count * 2, 2, 2))
            for sh_type, tag, num, what in (
                (SHT_GNU_VERDEF, DT_VERDEF, DT_VERDEFNUM, "DT_VERDEF"),
                (SHT_GNU_VERNEED, DT_VERNEED, DT_VERNEEDNUM, "DT_VERNEED"),
            ):
                if tag in tags:
                    at = file_offset(what, tags[tag])
                    entries = tags.get(num, 0)
                    size = self._version_chain_size(at, entries, sh_type == SHT_GNU_VERDEF, what)
                    sections.append(Section(sh_type, at, size, 1, 0, entries))
        sections.append(Section(SHT_DYNAMIC, segment.offset, len(segment.data), 1, lay.dyn.size))
        sections.extend(Section(SHT_NOTE, offset, size, 0, 0) for offset, size in notes)
        return sections

    def _dynamic_segment(self, phoff: int, phentsize: int, phnum: int) -> _DynamicSegment | None:
        """The program headers read as the loader reads them; None for a file that is not
        loadable or is statically linked (no dynamic symbol binds to it)."""
        lay = self._lay
        if phoff == 0 or phnum == 0:
            return None
        if phentsize != lay.phdr.size:
            raise self._view.fail(f"bad program header size {phentsize}")
        if phnum > MAX_SECTIONS:
            raise self._view.fail(f"implausible program header count {phnum}")
        loads: list[tuple[int, int, int]] = []
        notes: list[tuple[int, int]] = []
        dynamic: tuple[int, int] | None = None
        for raw in lay.phdr.iter_unpack(self._view.bytes(phoff, phnum * lay.phdr.size, "program header table")):
            if lay.phdr.size == 56:
                p_type, offset, vaddr, filesz = raw[0], raw[2], raw[3], raw[5]
            else:
                p_type, offset, vaddr, filesz = raw[0], raw[1], raw[2], raw[4]
            if p_type == PT_LOAD:
                loads.append((vaddr, offset, filesz))
            elif p_type == PT_DYNAMIC and dynamic is None:
                dynamic = (offset, filesz)
            elif p_type == PT_NOTE:
                notes.append((offset, filesz))
        if dynamic is None:
            return None
        if self._dynamic_data is not None:
            data = self._dynamic_data  # a streamed member's PT_DYNAMIC, read ahead
        else:
            count = min(dynamic[1] // lay.dyn.size, MAX_DYNAMIC_ENTRIES)
            data = self._view.bytes(dynamic[0], count * lay.dyn.size, "PT_DYNAMIC")
        data = data[: min(len(data) // lay.dyn.size, MAX_DYNAMIC_ENTRIES) * lay.dyn.size]
        tags: dict[int, int] = {}
        for tag, value in lay.dyn.iter_unpack(data):
            if tag == DT_NULL:
                break
            tags.setdefault(tag, value)
        return _DynamicSegment(loads, notes, dynamic[0], data, tags)

    def _file_offset(self, segment: _DynamicSegment, what: str, vaddr: int) -> int:
        """Where an address the dynamic segment names lies in the file."""
        return self._load_extent(segment, what, vaddr)[0]

    def _load_extent(self, segment: _DynamicSegment, what: str, vaddr: int) -> tuple[int, int]:
        """(file offset of ``vaddr``, end of the PT_LOAD file range that holds it)."""
        for base, offset, size in segment.loads:
            if base <= vaddr < base + size:
                return offset + vaddr - base, offset + size
        raise self._view.fail(f"{what} points outside the file's loaded segments")

    def _gnu_extent(self, at: int) -> tuple[int, int]:
        """(symbol count, byte size) of the .gnu.hash table at ``at``: one past the last
        symbol its chains reach, and where its last chain ends."""
        lay = self._lay
        self._view.check_range(at, 16, "DT_GNU_HASH")
        nbuckets, symoffset, bloom_size, _ = struct.unpack_from(lay.endian + "IIII", self._view.map(), at)
        buckets_off = at + 16 + bloom_size * lay.bloom_word.size
        chain_off = buckets_off + nbuckets * 4
        self._view.check_range(buckets_off, nbuckets * 4, "DT_GNU_HASH buckets")
        buckets = array("I", self._view.bytes(buckets_off, nbuckets * 4, "DT_GNU_HASH buckets"))
        if self.big_endian != (sys.byteorder == "big"):
            buckets.byteswap()
        top = max(buckets, default=0)
        if top == 0:
            return symoffset, chain_off - at
        if top < symoffset:
            raise self._view.fail(f".gnu.hash bucket points below its first symbol ({top})")
        index = top
        while True:
            word_at = chain_off + (index - symoffset) * 4
            self._view.check_range(word_at, 4, ".gnu.hash chain")
            if lay.word.unpack_from(self._view.map(), word_at)[0] & 1:
                return index + 1, word_at + 4 - at
            index += 1
            if index > MAX_SYMBOLS:
                raise self._view.fail(".gnu.hash chain does not end")

    def _verify_against_segments(self, phoff: int, phentsize: int, phnum: int) -> None:
        """Refuse a file whose section headers describe another symbol table than the
        one the dynamic linker loads (it reads PT_DYNAMIC, never sections): otherwise a
        shim could hide exports from the checker and still bind at run time."""
        lay = self._lay
        segment = self._dynamic_segment(phoff, phentsize, phnum)
        if segment is None:
            return  # not loadable, or statically linked: nothing binds to it
        tags = segment.tags
        if DT_SYMTAB not in tags:
            return

        def file_offset(what: str, vaddr: int) -> int:
            return self._file_offset(segment, what, vaddr)

        def disagree(what: str) -> InputError:
            return self._view.fail(f"section headers disagree with the dynamic segment about {what}")

        if self._dynsym_index is None:
            raise disagree(".dynsym (the loader has one, the sections hide it)")
        sym, strtab = self._dynsym()
        if file_offset("DT_SYMTAB", tags[DT_SYMTAB]) != sym.offset:
            raise disagree(".dynsym")
        if DT_STRTAB in tags and file_offset("DT_STRTAB", tags[DT_STRTAB]) != strtab.offset:
            raise disagree(".dynstr")
        if tags.get(DT_STRSZ, 0) > strtab.size:
            raise disagree("the size of .dynstr")
        reachable = 0
        if DT_HASH in tags:
            at = file_offset("DT_HASH", tags[DT_HASH])
            self._view.check_range(at, 8, "DT_HASH")
            reachable = lay.word.unpack_from(self._view.map(), at + 4)[0]  # nchain = the symbol count
        if DT_GNU_HASH in tags:
            at = file_offset("DT_GNU_HASH", tags[DT_GNU_HASH])
            sec = self._first(SHT_GNU_HASH)
            if sec is None or sec.offset != at:
                raise disagree(".gnu.hash")
            gnu = self._gnu_hash_table()
            if gnu is not None:
                reachable = max(reachable, self._gnu_reach(gnu))
        held = sym.size // sym.entsize
        if reachable > held:
            raise self._view.fail(f"its hash tables reach {reachable} symbols but .dynsym holds {held} (hidden symbols)")

    def _gnu_reach(self, t: _GnuHash) -> int:
        """One past the last symbol index a .gnu.hash lookup can reach."""
        buckets = array("I", self._view.bytes(t.buckets_off, t.nbuckets * 4, ".gnu.hash buckets"))
        chains = array("I", self._view.bytes(t.chain_off, (t.end - t.chain_off) // 4 * 4, ".gnu.hash chains"))
        if self.big_endian != (sys.byteorder == "big"):
            buckets.byteswap()
            chains.byteswap()
        top = max(buckets)
        if top == 0:
            return 0
        if top < t.symoffset:
            raise self._view.fail(f".gnu.hash bucket points below its first symbol ({top})")
        for i in range(top - t.symoffset, len(chains)):
            if chains[i] & 1:
                return t.symoffset + i + 1
        raise self._view.fail(".gnu.hash chain runs past its section")

    def _section(self, index: int, what: str) -> Section:
        if not 0 <= index < len(self._sections):
            raise self._view.fail(f"{what} links to missing section {index}")
        return self._sections[index]

    def _first(self, sh_type: int) -> Section | None:
        return next((s for s in self._sections if s.type == sh_type), None)

    # -- the dynamic symbol table ---------------------------------------------

    @property
    def has_dynsym(self) -> bool:
        return self._dynsym_index is not None

    def _dynsym(self) -> tuple[Section, Section]:
        if self._dynsym_cache is not None:
            return self._dynsym_cache
        if self._dynsym_index is None:
            raise self._view.fail("has no dynamic symbol table")
        sym = self._sections[self._dynsym_index]
        if sym.entsize != self._lay.sym.size:
            raise self._view.fail(f"bad .dynsym entry size {sym.entsize}")
        if sym.size % sym.entsize:
            raise self._view.fail(f".dynsym size {sym.size} is not a multiple of its entry size")
        if sym.size // sym.entsize > MAX_SYMBOLS:
            raise self._view.fail(f".dynsym holds {sym.size // sym.entsize} symbols, more than {MAX_SYMBOLS}")
        self._view.check_range(sym.offset, sym.size, ".dynsym")
        if sym.link == self._dynsym_index:
            raise self._view.fail(".dynsym names itself as its string table")
        strtab = self._section(sym.link, ".dynsym")
        if strtab.type != SHT_STRTAB:
            raise self._view.fail(f".dynsym links to section {sym.link}, which is not a string table")
        self._view.check_range(strtab.offset, strtab.size, ".dynstr")
        if strtab.size == 0:
            raise self._view.fail(".dynstr is empty")
        self._dynsym_cache = (sym, strtab)
        return sym, strtab

    def _versym(self) -> array[int] | None:
        """``.gnu.version`` as native ints, or None without one."""
        if self._versym_cache is not False:
            return self._versym_cache  # type: ignore[return-value]
        sec = self._first(SHT_GNU_VERSYM)
        result = None
        if sec is not None:
            sym, _ = self._dynsym()
            count = sym.size // sym.entsize
            if sec.size < count * 2:
                raise self._view.fail(".gnu.version is shorter than .dynsym")
            result = array("H", self._view.bytes(sec.offset, count * 2, ".gnu.version"))
            if self.big_endian != (sys.byteorder == "big"):
                result.byteswap()
        self._versym_cache = result
        return result

    def symbol_count(self) -> int:
        sym, _ = self._dynsym()
        return sym.size // sym.entsize

    def size_hint(self) -> int:
        """About how many names a scan of the exports reads (a Reference's cost hint)."""
        return self.symbol_count()

    def _keys(self) -> list[tuple[int, int, int, int]]:
        """(st_name, st_info, st_other, st_shndx) of every entry but the null one."""
        sym, _ = self._dynsym()
        key = self._lay.sym_key
        view = memoryview(self._view.map())[sym.offset + sym.entsize : sym.offset + sym.size]
        try:
            return list(key.iter_unpack(view))
        finally:
            view.release()

    def _columns(self) -> tuple[array[int], array[int]]:
        """``st_name`` of every entry but the null one, and a word per entry whose low
        byte is ``st_info``, next byte ``st_other`` and top half non-zero when defined."""
        sym, _ = self._dynsym()
        words = array("I", self._view.bytes(sym.offset, sym.size, ".dynsym"))
        per = sym.entsize // 4
        info_at = 1 if self._lay.sym_key.size == 24 else 3
        names = words[per::per]
        infos = words[per + info_at :: per]
        if self.big_endian != (sys.byteorder == "big"):
            names.byteswap()
        if sys.byteorder == "big":
            # st_info, st_other, st_shndx are bytes 0..3 of the word in either file
            # order (shndx only matters as zero or not), so read them little-endian.
            infos.byteswap()
        return names, infos

    def _build_tables(self) -> tuple[SymbolTable, SymbolTable]:
        if self._tables is not None:
            return self._tables
        _, strtab = self._dynsym()
        names, infos = self._columns()
        exp_ok, imp_ok = EXPORT_WORDS, IMPORT_WORDS
        # Filter on the raw ints first; names are cut only for the survivors.
        export_idx = [i for i, w in enumerate(infos) if w > 0xFFFF and w & 0x3FF in exp_ok]
        import_idx = [i for i, w in enumerate(infos) if w <= 0xFFFF and w & 0xFF in imp_ok]
        self._tables = self._tables_of(strtab.size, string_table(self._view, strtab), names, infos, export_idx, import_idx)
        return self._tables

    def _tables_of(
        self, size: int, strings: bytes | str, names: array[int], infos: array[int], export_idx: list[int], import_idx: list[int]
    ) -> tuple[SymbolTable, SymbolTable]:
        """The export and import tables of the symbols at ``export_idx`` and ``import_idx``."""
        tables = []
        names_bytes = 0
        for idx, defined in ((export_idx, DEFINED_BIT), (import_idx, 0)):
            offsets = [names[i] for i in idx]
            if offsets and max(offsets) >= size:
                raise self._view.fail(f"a symbol name offset is past .dynstr (size {size})")
            cut, names_bytes = cut_names(self._view, strings, offsets, names_bytes)
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
            tables.append(SymbolTable(table, self._versym(), more))
        return tables[0], tables[1]

    def tables_holding(self, contains: tuple[str, ...] = (), starts: tuple[str, ...] = ()) -> tuple[SymbolTable, SymbolTable]:
        """:meth:`exports` and :meth:`imports` limited to the names that hold one of
        ``contains`` or start with one of ``starts`` (ASCII, no NUL). The string table is
        searched for each ``contains`` needle and each name's start compared (C loops); only
        the symbols picked are cut: an environment's scan asks about a few names of each of
        hundreds of libraries, and cutting every name of every one costs more than ``nm -D``."""
        _, strtab = self._dynsym()
        names, infos = self._columns()
        size = strtab.size
        if names and max(names) >= size:
            raise self._view.fail(f"a symbol name offset is past .dynstr (size {size})")
        strings = string_table(self._view, strtab)
        text = strings if isinstance(strings, str) else strings.decode("latin-1")  # one character per byte
        # 1 at every offset where a name holding a needle may start: from the start of the
        # string holding it up to the needle (a tail-merged name starts inside a longer string).
        mask = bytearray(size)
        find, rfind = text.find, text.rfind
        for needle in contains:
            at = find(needle)
            while at >= 0:
                start = rfind("\0", 0, at) + 1
                mask[start : at + 1] = b"\1" * (at + 1 - start)
                at = find(needle, at + 1)
        picked = set(compress(range(len(names)), map(mask.__getitem__, names)))
        if starts:
            picked.update(compress(range(len(names)), map(text.startswith, repeat(starts), names)))
        exp_ok, imp_ok = EXPORT_WORDS, IMPORT_WORDS
        export_idx = [i for i in sorted(picked) if infos[i] > 0xFFFF and infos[i] & 0x3FF in exp_ok]
        import_idx = [i for i in sorted(picked) if infos[i] <= 0xFFFF and infos[i] & 0xFF in imp_ok]
        return self._tables_of(size, strings, names, infos, export_idx, import_idx)

    def export_name_chunks(self, chunk: int = 4096) -> Iterator[list[str]]:
        """The exported names, a list at a time, without keeping a table: a caller that
        asks about most of them (a 75k-name shim against libtorch) scans instead of
        looking each name up, and holds one chunk of names at a time."""
        if self._tables is not None:
            names = list(self._tables[0])
            for first in range(0, len(names), chunk):
                yield names[first : first + chunk]
            return
        _, strtab = self._dynsym()
        offsets_all, infos = self._columns()
        exp_ok = EXPORT_WORDS
        offsets = [offsets_all[i] for i, w in enumerate(infos) if w > 0xFFFF and w & 0x3FF in exp_ok]
        del offsets_all, infos
        if offsets and max(offsets) >= strtab.size:
            raise self._view.fail(f"a symbol name offset is past .dynstr (size {strtab.size})")
        strings = string_table(self._view, strtab)
        used = 0
        for first in range(0, len(offsets), chunk):
            names, used = cut_names(self._view, strings, offsets[first : first + chunk], used)
            yield names

    def symbols(self) -> Iterator[Symbol]:
        """Every dynamic symbol but the null entry at index 0, in table order."""
        sym, strtab = self._dynsym()
        keys = self._keys()
        versym = self._versym()
        strings = string_table(self._view, strtab)
        size = strtab.size
        names_bytes = 0
        for i, (st_name, st_info, st_other, st_shndx) in enumerate(keys, 1):
            if st_name >= size:
                raise self._view.fail(f"symbol name offset {st_name} is past .dynstr (size {size})")
            end = strings.find("\0" if isinstance(strings, str) else b"\0", st_name, st_name + MAX_NAME_LEN)  # type: ignore[arg-type]
            if end < 0:
                raise self._view.fail(f"a symbol name is longer than {MAX_NAME_LEN >> 10} KiB")
            name = strings[st_name:end] if isinstance(strings, str) else decode(strings[st_name:end])  # type: ignore[arg-type]
            names_bytes += len(name)
            if names_bytes > MAX_NAME_BYTES:
                raise self._view.fail(f"symbol names add up to more than {MAX_NAME_BYTES >> 20} MiB")
            yield Symbol(
                name=name,
                bind=st_info >> 4,
                type=st_info & 0xF,
                visibility=st_other & 0x3,
                defined=st_shndx != SHN_UNDEF,
                versioned=versym is not None and (versym[i] & 0x7FFF) >= 2,
            )

    def exports(self) -> SymbolTable:
        """Defined symbols that another object can bind to, by name."""
        return self._build_tables()[0]

    def imports(self) -> SymbolTable:
        """Undefined symbols this object asks the dynamic linker for, by name."""
        return self._build_tables()[1]

    def export_names(self) -> set[str]:
        return set(self._build_tables()[0])

    def import_names(self) -> set[str]:
        return set(self._build_tables()[1])

    # -- lookups through .gnu.hash -------------------------------------------------

    def find_export(self, name: str) -> Symbol | None:
        """Look one name up through ``.gnu.hash``; fall back to a full scan without one."""
        if self._tables is None:
            table = self._gnu_hash_table()
            if table is not None:
                return self._gnu_lookup(table, name)
        exports = self._build_tables()[0]
        return exports[name] if name in exports else None

    def _gnu_hash_table(self) -> _GnuHash | None:
        if self._gnu is not False:
            return self._gnu  # type: ignore[return-value]
        sec = self._first(SHT_GNU_HASH)
        result = None
        if sec is not None and self._dynsym_index is not None and sec.link == self._dynsym_index:
            sym, _ = self._dynsym()
            self._view.check_range(sec.offset, sec.size, ".gnu.hash")
            if sec.size < 16:
                raise self._view.fail(".gnu.hash is shorter than its header")
            nbuckets, symoffset, bloom_size, bloom_shift = struct.unpack_from(
                self._lay.endian + "IIII", self._view.map(), sec.offset
            )
            bloom_off = sec.offset + 16
            buckets_off = bloom_off + bloom_size * self._lay.bloom_word.size
            chain_off = buckets_off + nbuckets * 4
            end = sec.offset + sec.size
            if nbuckets == 0 or bloom_size == 0 or chain_off > end:
                raise self._view.fail(".gnu.hash header does not fit its section")
            if symoffset > sym.size // sym.entsize:
                raise self._view.fail(f".gnu.hash starts at symbol {symoffset}, past .dynsym")
            result = _GnuHash(nbuckets, symoffset, bloom_size, bloom_shift, bloom_off, buckets_off, chain_off, end)
        self._gnu = result
        return result

    def _gnu_lookup(self, t: _GnuHash, name: str) -> Symbol | None:
        return next((sym for _, sym in self._gnu_exports(t, name)), None)

    def _gnu_exports(self, t: _GnuHash, name: str) -> Iterator[tuple[int, Symbol]]:
        """(index, symbol) of each export named ``name``, walking its ``.gnu.hash`` chain
        (the bloom filter first): the loader's lookup, one home for both of its callers."""
        sym, strtab = self._dynsym()
        count = sym.size // sym.entsize
        mm = self._view.map()
        h = _hashed(name)[1]
        lay = self._lay
        wsize = lay.bloom_word.size
        bits = wsize * 8
        word = lay.bloom_word.unpack_from(mm, t.bloom_off + ((h // bits) % t.bloom_size) * wsize)[0]
        mask = (1 << (h % bits)) | (1 << ((h >> t.bloom_shift) % bits))
        if word & mask != mask:
            return
        index = lay.word.unpack_from(mm, t.buckets_off + (h % t.nbuckets) * 4)[0]
        if index == 0:
            return
        if index < t.symoffset:
            raise self._view.fail(f".gnu.hash bucket points below its first symbol ({index})")
        while True:
            at = t.chain_off + (index - t.symoffset) * 4
            if index >= count or at + 4 > t.end:
                raise self._view.fail(".gnu.hash chain runs past .dynsym")
            h2 = lay.word.unpack_from(mm, at)[0]
            if (h | 1) == (h2 | 1):
                found = self._symbol_at(sym, strtab, index)
                if found.name == name and found.is_export:
                    yield index, found
            if h2 & 1:
                return
            index += 1

    def _symbol_at(self, sym: Section, strtab: Section, index: int) -> Symbol:
        st_name, st_info, st_other, st_shndx = self._lay.sym_key.unpack_from(
            self._view.map(), sym.offset + index * sym.entsize
        )
        versym = self._versym()
        return Symbol(
            name=name_at(self._view, strtab, st_name),
            bind=st_info >> 4,
            type=st_info & 0xF,
            visibility=st_other & 0x3,
            defined=st_shndx != SHN_UNDEF,
            versioned=versym is not None and (versym[index] & 0x7FFF) >= 2,
        )

    # -- .dynamic and notes -----------------------------------------------------------

    def _dynamic_strings(self, tag: int) -> list[str]:
        sec = self._first(SHT_DYNAMIC)
        if sec is None or sec.size == 0:
            return []
        strtab = self._section(sec.link, ".dynamic")
        if strtab.type != SHT_STRTAB:
            raise self._view.fail(f".dynamic links to section {sec.link}, which is not a string table")
        self._view.check_range(strtab.offset, strtab.size, ".dynamic's string table")
        entsize = self._lay.dyn.size
        count = min(sec.size // entsize, MAX_DYNAMIC_ENTRIES)
        if self._dynamic_data is not None:
            data = self._dynamic_data[: count * entsize]
        else:
            data = self._view.bytes(sec.offset, count * entsize, ".dynamic")
        out = []
        for d_tag, d_val in self._lay.dyn.iter_unpack(data):
            if d_tag == DT_NULL:
                break
            if d_tag == tag:
                out.append(name_at(self._view, strtab, d_val))
        return out

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
        endian = self._lay.endian
        for sec in self._sections:
            if sec.type != SHT_NOTE or sec.size > MAX_NOTE_SECTION:
                continue
            data = self._view.bytes(sec.offset, sec.size, "note section")
            pos = 0
            while pos + 12 <= len(data):
                namesz, descsz, ntype = struct.unpack_from(endian + "III", data, pos)
                name_end = pos + 12 + ((namesz + 3) & ~3)
                desc_end = name_end + ((descsz + 3) & ~3)
                if desc_end > len(data):
                    break
                if ntype == NT_GNU_BUILD_ID and data[pos + 12 : pos + 12 + namesz].rstrip(b"\0") == b"GNU":
                    return data[name_end : name_end + descsz].hex()
                pos = desc_end
        return None

    # -- symbol versions and dynamic flags --------------------------------------------

    def _version_chain_size(self, at: int, entries: int, verdef: bool, what: str) -> int:
        """The byte size of a verdef/verneed chain of ``entries`` entries at ``at``."""
        if entries > MAX_VERSIONS:
            raise self._view.fail(f"{what} counts {entries} entries, more than {MAX_VERSIONS}")
        mm = self._view.map()
        end = at
        pos = at
        fmt = struct.Struct(self._lay.endian + ("HHHHIII" if verdef else "HHIII"))
        aux = struct.Struct(self._lay.endian + ("II" if verdef else "IHHII"))
        for _ in range(entries):
            self._view.check_range(pos, fmt.size, what)
            raw = fmt.unpack_from(mm, pos)
            count, aux_off, nxt = (raw[3], raw[5], raw[6]) if verdef else (raw[1], raw[3], raw[4])
            end = max(end, pos + fmt.size)
            a = pos + aux_off
            for _ in range(min(count, MAX_VERSIONS)):
                self._view.check_range(a, aux.size, what)
                end = max(end, a + aux.size)
                a_next = aux.unpack_from(mm, a)[-1]
                if not a_next:
                    break
                a += a_next
            if not nxt:
                break
            pos += nxt
        return end - at

    def versions(self) -> Versions:
        """The version definitions and needs, by index (NO_VERSIONS without either table)."""
        cached = getattr(self, "_versions_cache", None)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        if not self.has_dynsym:
            return NO_VERSIONS
        _, strtab = self._dynsym()
        defined: dict[int, str] = {}
        base: set[int] = set()
        needed: dict[int, tuple[str, str]] = {}
        mm = self._view.map()
        end = self._lay.endian
        verdef, vd_aux = struct.Struct(end + "HHHHIII"), struct.Struct(end + "II")
        verneed, vn_aux = struct.Struct(end + "HHIII"), struct.Struct(end + "IHHII")
        for sec in self._sections:
            if sec.type not in (SHT_GNU_VERDEF, SHT_GNU_VERNEED):
                continue
            what = TABLE_NAMES[sec.type]
            self._view.check_range(sec.offset, sec.size, what)
            if sec.info > MAX_VERSIONS:
                raise self._view.fail(f"{what} counts {sec.info} entries, more than {MAX_VERSIONS}")
            limit = sec.offset + sec.size
            pos = sec.offset
            for _ in range(sec.info):
                if sec.type == SHT_GNU_VERDEF:
                    if pos + verdef.size > limit:
                        raise self._view.fail(f"{what} runs past its section")
                    _, flags, ndx, cnt, _, aux_off, nxt = verdef.unpack_from(mm, pos)
                    if cnt and pos + aux_off + vd_aux.size <= limit:
                        defined[ndx & 0x7FFF] = name_at(self._view, strtab, vd_aux.unpack_from(mm, pos + aux_off)[0])
                        if flags & VER_FLG_BASE:
                            base.add(ndx & 0x7FFF)
                    elif cnt:
                        raise self._view.fail(f"{what} runs past its section")
                else:
                    if pos + verneed.size > limit:
                        raise self._view.fail(f"{what} runs past its section")
                    _, cnt, file_off, aux_off, nxt = verneed.unpack_from(mm, pos)
                    file = name_at(self._view, strtab, file_off)
                    a = pos + aux_off
                    for _ in range(min(cnt, MAX_VERSIONS)):
                        if a + vn_aux.size > limit:
                            raise self._view.fail(f"{what} runs past its section")
                        _, _, other, name_off, a_next = vn_aux.unpack_from(mm, a)
                        needed[other & 0x7FFF] = (name_at(self._view, strtab, name_off), file)
                        if not a_next:
                            break
                        a += a_next
                if not nxt:
                    break
                pos += nxt
        result = Versions(defined, frozenset(base), needed) if defined or needed else NO_VERSIONS
        self._versions_cache = result
        return result

    def _entry(self, symbol: Symbol, index: int, versym: array[int] | None, versions: Versions) -> DynamicEntry:
        word = versym[index] if versym is not None else 1
        return entry_of_word(symbol, index, word, versions)

    def dynamic_entries(self) -> list[DynamicEntry]:
        """Every dynamic symbol but the null entry, with its version (for the binding model:
        a library's imports, and every definition of a name, several versions included)."""
        versym = self._versym()
        versions = self.versions()
        return [self._entry(sym, i, versym, versions) for i, sym in enumerate(self.symbols(), 1)]

    def find_definitions(self, name: str) -> list[DynamicEntry]:
        """Every export named ``name`` (one per version) that the loader's lookup takes:
        through ``.gnu.hash`` (a scan without one), leaving out what glibc passes over (see
        _loader_takes)."""
        versym = self._versym()
        versions = self.versions()
        table = self._gnu_hash_table()
        if table is None:
            found = [(i, sym) for i, sym in enumerate(self.symbols(), 1) if sym.name == name and sym.is_export]
        else:
            found = list(self._gnu_exports(table, name))
        return [self._entry(sym, i, versym, versions) for i, sym in found if self._loader_takes(i)]

    def unseen_definitions(self, exports: SymbolTable, names: Iterable[str]) -> frozenset[int]:
        """The .dynsym indexes of ``exports``' definitions of ``names`` that the loader's
        lookup never returns: out of reach of .gnu.hash (a bloom word or a chain that misses
        them), or passed over (_loader_takes). One hash walk per name, no scan."""
        versions = self.versions()
        table = self._gnu_hash_table()
        out: set[int] = set()
        for name in names:
            reach = None if table is None else {i for i, _ in self._gnu_exports(table, name)}
            for e in exports.entries(name, versions):
                if (reach is not None and e.index not in reach) or not self._loader_takes(e.index):
                    out.add(e.index)
        return frozenset(out)

    def _loader_takes(self, index: int) -> bool:
        """glibc's do_lookup_x takes the definition at ``index``: of a code or data type
        (ALLOWED_STT), and of a value other than 0 unless SHN_ABS or TLS."""
        sym, _ = self._dynsym()
        fields = self._lay.sym.unpack_from(self._view.map(), sym.offset + index * sym.entsize)
        # ELF64: name, info, other, shndx, value, size; ELF32: name, value, size, info, other, shndx.
        info, shndx, value = (fields[1], fields[3], fields[4]) if self._lay.sym.size == 24 else (fields[3], fields[5], fields[1])
        if info & 0xF not in _LOADER_TYPES:
            return False
        return value != 0 or shndx == SHN_ABS or info & 0xF == STT_TLS

    def local_references(self) -> list[DynamicEntry]:
        """Undefined symbols the loader binds to their own library, at address 0: STB_LOCAL
        ones and those of a visibility other than default (glibc's RESOLVE_MAP looks up
        neither a local nor a hidden or internal reference; a protected one it looks up,
        then binds to the reference itself)."""
        if not self.has_dynsym:
            return []
        _, infos = self._columns()
        # Undefined (top half zero), and LOCAL binding or a visibility set in st_other.
        at = [i for i, w in enumerate(infos) if w <= 0xFFFF and ((w & 0xFF) >> 4 == STB_LOCAL or w & 0x300)]
        if not at:
            return []
        symbols = list(self.symbols())
        versym = self._versym()
        versions = self.versions()
        return [self._entry(symbols[i], i + 1, versym, versions) for i in at if symbols[i].name]

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
    def noopen(self) -> bool:
        """Linked -z nodlopen (DF_1_NOOPEN): dlopen refuses it."""
        return bool(self.dynamic_tags().get(DT_FLAGS_1, 0) & DF_1_NOOPEN)

    def dynamic_tags(self) -> dict[int, int]:
        """PT_DYNAMIC's tags (the first value of each), as the loader reads them."""
        cached = getattr(self, "_tags_cache", None)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        hdr = self._elf_header()
        segment = self._dynamic_segment(hdr[5], hdr[9], hdr[10])
        tags = {} if segment is None else segment.tags
        self._tags_cache = tags
        return tags

    @property
    def symbolic(self) -> bool:
        """Linked -Bsymbolic (DT_SYMBOLIC or DF_SYMBOLIC): its own definitions bind first."""
        tags = self.dynamic_tags()
        return DT_SYMBOLIC in tags or bool(tags.get(DT_FLAGS, 0) & DF_SYMBOLIC)


    def copy_relocated_indexes(self) -> frozenset[int]:
        """The .dynsym indexes an R_*_COPY relocation names (a program's copy of a library's
        data: the loader fills it from the first definer after the program, and binds every
        reference, the definer's own included, to the copy). Empty when the machine's COPY
        type is not known here or the tables cannot be read."""
        copy = _COPY_RELOCATION.get(self.machine)
        tags = self.dynamic_tags()
        if copy is None or not (DT_RELA in tags or DT_REL in tags):
            return frozenset()
        is64 = self._lay.sym.size == 24
        word = struct.Struct(self._lay.endian + ("Q" if is64 else "I"))
        shift, mask = (32, 0xFFFFFFFF) if is64 else (8, 0xFF)
        found: set[int] = set()
        try:
            hdr = self._elf_header()
            segment = self._dynamic_segment(hdr[5], hdr[9], hdr[10])
            if segment is None:
                return frozenset()
            for tag, size_tag, entsize in ((DT_RELA, DT_RELASZ, 24 if is64 else 12), (DT_REL, DT_RELSZ, 16 if is64 else 8)):
                if tag not in tags:
                    continue
                at = self._file_offset(segment, "a relocation table", tags[tag])
                size = tags.get(size_tag, 0)
                data = self._view.bytes(at, size - size % entsize, "a relocation table")
                for i in range(0, len(data), entsize):
                    info = word.unpack_from(data, i + word.size)[0]
                    if info & mask == copy:
                        found.add(info >> shift)
        except InputError:
            return frozenset()
        return frozenset(found)

    def lazy_symbol_indexes(self) -> frozenset[int]:
        """The .dynsym indexes that only PLT relocations (DT_JMPREL) refer to: imports the
        loader binds at their first call, not when the library loads (unless it was linked
        -z now). Empty when the relocation tables cannot be read (every import then binds
        at load, the stricter answer)."""
        found = self.relocated_symbol_indexes()
        return frozenset() if found is None else found[0]

    def relocation_bytes(self) -> int:
        """The size of its dynamic relocation tables (what reading them costs)."""
        tags = self.dynamic_tags()
        return sum(tags.get(t, 0) for t in (DT_RELASZ, DT_RELSZ, DT_PLTRELSZ))

    def relocated_symbol_indexes(self) -> tuple[frozenset[int], frozenset[int]] | None:
        """(the .dynsym indexes bound lazily, every index some dynamic relocation refers to):
        the first empty when the library binds at load (-z now); the loader looks up no
        symbol that no relocation names. None when the tables cannot be read."""
        tags = self.dynamic_tags()
        now = DT_BIND_NOW in tags or tags.get(DT_FLAGS, 0) & DF_BIND_NOW or tags.get(DT_FLAGS_1, 0) & DF_1_NOW
        rela = tags.get(DT_PLTREL, DT_RELA) == DT_RELA
        is64 = self._lay.sym.size == 24
        shift = 32 if is64 else 8
        word = struct.Struct(self._lay.endian + ("Q" if is64 else "I"))
        try:
            hdr = self._elf_header()
            segment = self._dynamic_segment(hdr[5], hdr[9], hdr[10])
            if segment is None:
                return None

            def indexes(tag: int, size_tag: int, rela: bool) -> set[int]:
                if tag not in tags:
                    return set()
                entsize = (24 if rela else 16) if is64 else (12 if rela else 8)
                at = self._file_offset(segment, "a relocation table", tags[tag])
                size = tags.get(size_tag, 0)
                data = self._view.bytes(at, size - size % entsize, "a relocation table")
                return {word.unpack_from(data, i + word.size)[0] >> shift for i in range(0, len(data), entsize)}

            plt = indexes(DT_JMPREL, DT_PLTRELSZ, rela)
            eager = indexes(DT_RELA, DT_RELASZ, True) | indexes(DT_REL, DT_RELSZ, False)
        except InputError:
            return None
        return frozenset() if now else frozenset(plt - eager), frozenset(plt | eager)
