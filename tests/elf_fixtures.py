"""ELF files for the reader's tests: compiled from fixtures/elf/, synthesised, and mutated.

Compiled fixtures come from gcc/g++ (64-bit, 32-bit with ``-m32 -nostdlib``, GNU and
SysV hash styles). Big-endian files cannot come from this machine's linker, so
:func:`synth_elf` writes minimal but complete ones (``.dynsym``, ``.dynstr``,
``.gnu.version``, ``.gnu.hash``, ``.dynamic``, a build-id note) in any class and byte
order; pyelftools, not our reader, is the judge of what they contain.
"""

from __future__ import annotations

import random
import shutil
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from compile_support import compile_shared

REPO = Path(__file__).resolve().parents[1]
SOURCES = REPO / "fixtures" / "elf"

# name -> (source, extra compiler flags); 32-bit ones link without libc (no multilib here).
COMPILED: dict[str, tuple[str, tuple[str, ...]]] = {
    "kinds": ("kinds.c", ()),
    "kinds_sysv": ("kinds.c", ("-Wl,--hash-style=sysv",)),
    "versioned": ("versioned.c", ("-Wl,--version-script=" + str(SOURCES / "versioned.map"),)),
    "many": ("many.c", ()),
    "shim": ("shim.c", ()),
    "model": ("model.c", ()),
    "tiny": ("tiny.c", ()),
    "unique": ("unique.cpp", ()),
    "tiny32": ("tiny.c", ("-m32", "-nostdlib", "-Wl,--hash-style=both")),
    "many32": ("many.c", ("-m32", "-nostdlib", "-Wl,--hash-style=gnu")),
    "many32_sysv": ("many.c", ("-m32", "-nostdlib", "-Wl,--hash-style=sysv")),
}


def compile_fixtures(out: Path) -> dict[str, Path]:
    """Compile what this machine can; 32-bit ones are skipped without 32-bit binutils."""
    out.mkdir(parents=True, exist_ok=True)
    built: dict[str, Path] = {}
    for name, (source, flags) in COMPILED.items():
        target = out / f"lib{name}.so"
        done = compile_shared(SOURCES / source, target, flags, check=False)
        if done.returncode != 0:
            if "-m32" in flags:
                continue
            raise AssertionError(f"building {name} failed:\n{done.stderr}")
        built[name] = target
    stripped = out / "libkinds_stripped.so"
    shutil.copyfile(built["kinds"], stripped)
    if shutil.which("strip"):
        subprocess.run(["strip", "--strip-all", str(stripped)], check=True)
        built["kinds_stripped"] = stripped
    return built


# -- pyelftools as the independent judge -----------------------------------------


@dataclass
class Truth:
    exports: set[str]
    imports: set[str]
    needed: list[str]
    soname: str | None
    build_id: str | None
    kinds: dict[str, tuple[str, str]] = field(default_factory=dict)  # export -> (bind, type)


_BINDS = {"STB_GLOBAL", "STB_WEAK", "STB_GNU_UNIQUE", "STB_LOOS"}


def pyelftools_truth(path: Path) -> Truth:
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import NoteSection

    exports: set[str] = set()
    imports: set[str] = set()
    kinds: dict[str, tuple[str, str]] = {}
    needed: list[str] = []
    soname = build_id = None
    with open(path, "rb") as f:
        elf = ELFFile(f)
        for sec in elf.iter_sections():
            if sec["sh_type"] == "SHT_DYNSYM":
                for i, sym in enumerate(sec.iter_symbols()):
                    if i == 0 or not sym.name:
                        continue
                    bind = sym["st_info"]["bind"]
                    vis = sym["st_other"]["visibility"]
                    if sym["st_shndx"] == "SHN_UNDEF":
                        if bind != "STB_LOCAL":
                            imports.add(sym.name)
                    elif bind in _BINDS and vis in ("STV_DEFAULT", "STV_PROTECTED"):
                        exports.add(sym.name)
                        kinds.setdefault(sym.name, (bind, sym["st_info"]["type"]))
            elif isinstance(sec, DynamicSection):
                for tag in sec.iter_tags():
                    if tag.entry.d_tag == "DT_NEEDED":
                        needed.append(tag.needed)
                    elif tag.entry.d_tag == "DT_SONAME":
                        soname = tag.soname
            elif isinstance(sec, NoteSection):
                for note in sec.iter_notes():
                    if note["n_type"] == "NT_GNU_BUILD_ID" and build_id is None:
                        build_id = note["n_desc"]
    return Truth(exports, imports, needed, soname, build_id, kinds)


# -- synthetic ELF in any class and byte order ---------------------------------------


def nm_exports(path: Path) -> dict[str, str]:
    """binutils' view of ``path``'s dynamic exports, name -> nm type letter (a judge that is not ours)."""
    nm = shutil.which("nm")
    assert nm, "nm (binutils) is needed"
    out = subprocess.run(
        [nm, "-D", "--defined-only", "-P", str(path)], capture_output=True, text=True, check=True
    ).stdout
    exports: dict[str, str] = {}
    for line in out.splitlines():
        name, kind = line.split()[:2]
        # Lower case is a local symbol (torch's .dynsym holds LOCAL TLS ones), except for
        # u (unique), v/w (weak) and i (IFUNC), which nm spells in lower case whatever the binding.
        if kind.isupper() or kind in "uvwi":
            exports[name.split("@", 1)[0]] = kind
    return exports


def gnu_hash(name: bytes) -> int:
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


@dataclass(frozen=True)
class SynthSymbol:
    name: str
    bind: int = 1  # GLOBAL
    type: int = 2  # FUNC
    visibility: int = 0
    defined: bool = True
    versioned: bool = False


def synth_elf(
    symbols: list[SynthSymbol],
    *,
    elf64: bool = True,
    big_endian: bool = False,
    needed: tuple[str, ...] = ("libc.so.6",),
    soname: str | None = "libsynth.so",
    build_id: bytes = bytes(range(20)),
    nbuckets: int = 3,
) -> bytes:
    """A shared object with a consistent dynamic symbol table (section view only)."""
    e = ">" if big_endian else "<"
    ptr = "Q" if elf64 else "I"
    undefined = [s for s in symbols if not s.defined]
    defined = [s for s in symbols if s.defined]
    # .gnu.hash wants the hashed (defined) symbols last, grouped by bucket.
    defined.sort(key=lambda s: gnu_hash(s.name.encode()) % nbuckets)
    ordered = undefined + defined

    strtab = bytearray(b"\0")
    offsets: dict[str, int] = {}

    def add_str(text: str) -> int:
        if text not in offsets:
            offsets[text] = len(strtab)
            strtab.extend(text.encode() + b"\0")
        return offsets[text]

    for s in ordered:
        add_str(s.name)
    for lib in needed:
        add_str(lib)
    if soname:
        add_str(soname)

    text_index = 8  # .text below
    syms = bytearray()
    sym_fmt = e + ("IBBHQQ" if elf64 else "IIIBBH")
    syms += struct.pack(sym_fmt, *((0, 0, 0, 0, 0, 0)))
    for n, s in enumerate(ordered, 1):
        info = s.bind << 4 | s.type
        shndx = text_index if s.defined else 0
        value = 0x1000 + 16 * n if s.defined else 0
        if elf64:
            syms += struct.pack(sym_fmt, offsets[s.name], info, s.visibility, shndx, value, 8)
        else:
            syms += struct.pack(sym_fmt, offsets[s.name], value, 8, info, s.visibility, shndx)
    versym = bytearray(struct.pack(e + "H", 0))
    for s in ordered:
        versym += struct.pack(e + "H", 2 if s.versioned else 1)

    # .gnu.hash: one bloom word, shift 6.
    symoffset = 1 + len(undefined)
    bits = 64 if elf64 else 32
    bloom = 0
    buckets = [0] * nbuckets
    chains = []
    hashes = [gnu_hash(s.name.encode()) for s in defined]
    for i, h in enumerate(hashes):
        bloom |= 1 << (h % bits) | 1 << ((h >> 6) % bits)
        b = h % nbuckets
        if buckets[b] == 0:
            buckets[b] = symoffset + i
        last = i + 1 == len(hashes) or hashes[i + 1] % nbuckets != b
        chains.append((h & ~1) | (1 if last else 0))
    gnu = struct.pack(e + "IIII", nbuckets, symoffset, 1, 6) + struct.pack(e + ptr, bloom)
    gnu += struct.pack(e + f"{nbuckets}I", *buckets) + struct.pack(e + f"{len(chains)}I", *chains)

    dyn_fmt = e + ("qQ" if elf64 else "iI")
    dynamic = b"".join(struct.pack(dyn_fmt, 1, offsets[lib]) for lib in needed)
    if soname:
        dynamic += struct.pack(dyn_fmt, 14, offsets[soname])
    dynamic += struct.pack(dyn_fmt, 0, 0)
    note = struct.pack(e + "III", 4, len(build_id), 3) + b"GNU\0" + build_id
    note += b"\0" * (-len(note) % 4)
    text = b"\xc3" * 64

    shnames = [b"", b".dynstr", b".dynsym", b".gnu.version", b".gnu.hash", b".dynamic"]
    shnames += [b".note.gnu.build-id", b".shstrtab", b".text"]
    shstrtab = bytearray(b"\0")
    name_off = [0]
    for n in shnames[1:]:
        name_off.append(len(shstrtab))
        shstrtab += n + b"\0"

    ehdr_size = 64 if elf64 else 52
    blobs = [bytes(strtab), bytes(syms), bytes(versym), gnu, dynamic, note, bytes(shstrtab), text]
    body = bytearray()
    placed = []
    pos = ehdr_size
    for blob in blobs:
        pad = -pos % 8
        body += b"\0" * pad
        pos += pad
        placed.append(pos)
        body += blob
        pos += len(blob)
    pad = -pos % 8
    body += b"\0" * pad
    shoff = pos + pad

    sym_size = 24 if elf64 else 16
    dyn_size = 16 if elf64 else 8
    # (type, link, info, entsize, flags)
    meta = [
        (3, 0, 0, 0, 2),
        (11, 1, 1, sym_size, 2),
        (0x6FFFFFFF, 2, 0, 2, 2),
        (0x6FFFFFF6, 2, 0, 0, 2),
        (6, 1, 0, dyn_size, 3),
        (7, 0, 0, 0, 2),
        (3, 0, 0, 0, 0),
        (1, 0, 0, 0, 6),
    ]
    shdr_fmt = e + ("IIQQQQIIQQ" if elf64 else "IIIIIIIIII")
    shdrs = struct.pack(shdr_fmt, *([0] * 10))
    for i, (sh_type, link, info, entsize, flags) in enumerate(meta):
        shdrs += struct.pack(
            shdr_fmt, name_off[i + 1], sh_type, flags, placed[i], placed[i], len(blobs[i]), link, info, 8, entsize
        )
    ident = b"\x7fELF" + bytes([2 if elf64 else 1, 2 if big_endian else 1, 1, 0]) + b"\0" * 8
    machine = (21 if elf64 else 20) if big_endian else (62 if elf64 else 3)
    ehdr_fmt = e + ("16sHHIQQQIHHHHHH" if elf64 else "16sHHIIIIIHHHHHH")
    shentsize = 64 if elf64 else 40
    ehdr = struct.pack(ehdr_fmt, ident, 3, machine, 1, 0, 0, shoff, 0, ehdr_size, 0, 0, shentsize, len(shnames), 7)
    return ehdr + bytes(body) + shdrs


SYNTH_SYMBOLS = [
    SynthSymbol("aoti_torch_empty_strided"),
    SynthSymbol("aoti_torch_get_dim"),
    SynthSymbol("synth_object", type=1),
    SynthSymbol("synth_weak", bind=2),
    SynthSymbol("synth_protected", visibility=3),
    SynthSymbol("synth_hidden", visibility=2),
    SynthSymbol("synth_versioned", versioned=True),
    SynthSymbol("synth_tls", type=6),
    SynthSymbol("synth_unique", bind=10, type=1),
    SynthSymbol("memcpy", defined=False),
    SynthSymbol("myrt_aoti_torch_get_dim", defined=False),
    SynthSymbol("synth_weak_import", bind=2, type=0, defined=False),
] + [SynthSymbol(f"synth_many_{i}") for i in range(40)]


# -- mutation ------------------------------------------------------------------------

INTERESTING_32 = (
    0,
    1,
    2,
    0x7F,
    0x80,
    0xFF,
    0x100,
    0x7FFF,
    0xFFFF,
    0x10000,
    0x7FFFFFFF,
    0x80000000,
    0xFFFFFFFE,
    0xFFFFFFFF,
)


@dataclass(frozen=True)
class Regions:
    """Where the interesting bytes of a well-formed file are (from pyelftools)."""

    elf64: bool
    little: bool
    shoff: int
    shentsize: int
    shnum: int
    phoff: int
    phentsize: int
    phnum: int
    sections: tuple[tuple[int, int, int], ...]  # (sh_type, offset, size)


def regions(path: Path) -> Regions:
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        elf = ELFFile(f)
        secs = tuple((_type_number(s["sh_type"]), s["sh_offset"], s["sh_size"]) for s in elf.iter_sections())
        return Regions(
            elf64=elf.elfclass == 64,
            little=elf.little_endian,
            shoff=elf["e_shoff"],
            shentsize=elf["e_shentsize"],
            shnum=elf["e_shnum"],
            phoff=elf["e_phoff"],
            phentsize=elf["e_phentsize"],
            phnum=elf["e_phnum"],
            sections=secs,
        )


def _type_number(sh_type: object) -> int:
    names = {"SHT_STRTAB": 3, "SHT_DYNAMIC": 6, "SHT_NOTE": 7, "SHT_DYNSYM": 11}
    names.update({"SHT_GNU_HASH": 0x6FFFFFF6, "SHT_GNU_versym": 0x6FFFFFFF})
    return names.get(sh_type, -1) if isinstance(sh_type, str) else int(sh_type)


def mutate(data: bytes, reg: Regions, rng: random.Random) -> bytes:
    """One mutant: random, or aimed at a header field, a section header, a symbol, .gnu.hash."""
    out = bytearray(data)
    e = "<" if reg.little else ">"
    strategy = rng.randrange(10)
    if strategy == 0:  # a few random bytes anywhere
        for _ in range(rng.randint(1, 8)):
            out[rng.randrange(len(out))] = rng.randrange(256)
    elif strategy == 1:  # ELF header bytes
        for _ in range(rng.randint(1, 3)):
            out[rng.randrange(64 if reg.elf64 else 52)] = rng.randrange(256)
    elif strategy == 2:  # truncation
        del out[rng.randrange(len(out)) :]
    elif strategy == 3:  # a section header field set to an interesting value
        index = rng.randrange(reg.shnum)
        base = reg.shoff + index * reg.shentsize
        fields = (
            [(4, 4), (24, 8), (32, 8), (40, 4), (56, 8)] if reg.elf64 else [(4, 4), (16, 4), (20, 4), (24, 4), (36, 4)]
        )
        at, width = rng.choice(fields)
        value = rng.choice(INTERESTING_32 + (len(data), len(data) - 1, len(data) + 1, rng.randrange(1 << 32)))
        if width == 8 and rng.random() < 0.3:
            value = rng.choice((1 << 63, (1 << 64) - 1, 1 << 40))
        if base + at + width <= len(out):
            out[base + at : base + at + width] = struct.pack(
                e + ("Q" if width == 8 else "I"), value & ((1 << (8 * width)) - 1)
            )
    elif strategy == 4:  # a field inside .dynsym / .gnu.hash / .dynamic / .gnu.version / a note
        wanted = [s for s in reg.sections if s[0] in (11, 0x6FFFFFF6, 6, 0x6FFFFFFF, 7, 3) and s[2] >= 4]
        _, off, size = rng.choice(wanted)
        at = off + rng.randrange(size - 3) // 4 * 4
        out[at : at + 4] = struct.pack(e + "I", rng.choice(INTERESTING_32 + (rng.randrange(1 << 32),)))
    elif strategy == 5:  # a whole section header zeroed or filled
        index = rng.randrange(reg.shnum)
        base = reg.shoff + index * reg.shentsize
        fill = rng.choice((0, 0xFF))
        out[base : base + reg.shentsize] = bytes([fill]) * min(reg.shentsize, len(out) - base)
    elif strategy == 6:  # the string table's terminators eaten
        strs = [s for s in reg.sections if s[0] == 3 and s[2]]
        _, off, size = rng.choice(strs)
        for _ in range(rng.randint(1, 16)):
            out[off + rng.randrange(size)] = rng.choice((0x41, 0xFF, 0xC3, 0x00))
    elif strategy == 7:  # junk appended or a block duplicated over another
        if rng.random() < 0.5:
            out += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        else:
            a, b = rng.randrange(len(out)), rng.randrange(len(out))
            n = rng.randint(1, 256)
            out[b : b + n] = out[a : a + n]
    elif strategy == 8 or not reg.phnum:  # class or byte order flipped: every field is read the other way
        out[4 + rng.randrange(2)] ^= 3
    else:  # a program header field: the loader's view must still agree with the sections'
        base = reg.phoff + rng.randrange(reg.phnum) * reg.phentsize
        at = base + rng.randrange(reg.phentsize // 4) * 4
        if at + 4 <= len(out):
            out[at : at + 4] = struct.pack(e + "I", rng.choice(INTERESTING_32 + (rng.randrange(1 << 32),)))
    return bytes(out)
