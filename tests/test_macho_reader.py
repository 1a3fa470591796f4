"""The Mach-O reader against independent readers, on fixtures a seeded generator draws.

Each fixture (tests/macho_fixtures.py) is compiled from generated C and linked here. Its
facts are held to llvm-objdump's (dyld-info opcodes, load commands, export trie: LLVM 14
cannot decode chained fixups), to LIEF's and llvm-nm's for chained-fixups files, and to
what the generator meant (which names are flat, two-level, weak imports). Fat files, made
by llvm-lipo and by a header written here, must give each slice's facts unchanged.
"""

from __future__ import annotations

import os
import random
import re
import signal
import struct
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lief
import pytest

from aoti_shim.checks.bounded.view import view_of_bytes
from aoti_shim.checks.macho import read
from aoti_shim.checks.macho.binds import read_chained_imports, read_opcodes
from aoti_shim.checks.macho.commands import parse
from aoti_shim.checks.macho.exports import read_trie
from aoti_shim.checks.macho.facts import FLAT, MAIN_EXECUTABLE, SELF, TWO_LEVEL, WEAK, MachOFacts
from aoti_shim.checks.macho.fat import slices
from aoti_shim.errors import InputError
from macho_fixtures import MachOSpec, build, ld64_lld, llvm_lipo, mutate, specs, write_fat

SEED = int(os.environ.get("AOTI_SHIM_MACHO_SEED", "3601"))
COUNT = int(os.environ.get("AOTI_SHIM_MACHO_COUNT", "4"))
_SPECIAL_COLUMNS = {"flat-namespace": FLAT, "weak": WEAK, "this-image": SELF, "main-executable": MAIN_EXECUTABLE}
_DYLIB_COMMANDS = {"LC_LOAD_DYLIB": "load", "LC_LOAD_WEAK_DYLIB": "weak", "LC_REEXPORT_DYLIB": "reexport",
                   "LC_LAZY_LOAD_DYLIB": "lazy", "LC_LOAD_UPWARD_DYLIB": "upward"}


@pytest.fixture(scope="module")
def macho_built(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[MachOSpec, Path]]:
    out = tmp_path_factory.mktemp("macho")
    return [(spec, build(spec, out / spec.name)) for spec in specs(SEED, COUNT, with_lld=ld64_lld() is not None)]


class Hang(Exception):
    """A read that ran past its time limit."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise Hang in the reader if it runs past ``seconds`` (a loop must fail the test, not stall it)."""

    def expire(_signum: int, _frame: object) -> None:
        raise Hang(f"read ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _objdump(path: Path, *flags: str) -> list[str]:
    done = subprocess.run(["llvm-objdump", "--macho", *flags, str(path)], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def short_name(install_name: str) -> str:
    """llvm-objdump's column for a library: the file name without directory, .dylib, or a .A/.B version."""
    base = install_name.rsplit("/", 1)[-1].removesuffix(".dylib")
    return re.sub(r"\.[A-Z]$", "", base)


@dataclass(frozen=True)
class ObjdumpHeaders:
    cputype: str
    filetype: str
    flags: frozenset[str]
    install_name: str | None
    dylibs: tuple[tuple[str, str], ...]
    rpaths: tuple[str, ...]


def objdump_headers(path: Path) -> ObjdumpHeaders:
    """Architecture, filetype and flags, LC_ID_DYLIB, the dylib commands and LC_RPATHs."""
    lines = _objdump(path, "--private-headers")
    values = lines[lines.index(next(x for x in lines if x.split()[:2] == ["magic", "cputype"])) + 1].split()
    install_name, dylibs, rpaths = None, [], []
    command = None
    for line in lines:
        words = line.split()
        if words[:1] == ["cmd"]:
            command = words[1]
        elif words[:1] in (["name"], ["path"]) and command:
            value = line.split(None, 1)[1].rsplit(" (offset ", 1)[0]
            if command == "LC_ID_DYLIB":
                install_name = value
            elif command in _DYLIB_COMMANDS:
                dylibs.append((value, _DYLIB_COMMANDS[command]))
            elif command == "LC_RPATH":
                rpaths.append(value)
    return ObjdumpHeaders(values[1], values[4], frozenset(values[7:]), install_name, tuple(dylibs), tuple(rpaths))


def objdump_binds(path: Path) -> tuple[set[tuple[str, str]], set[str]]:
    """{(symbol, dylib column)} over the bind, lazy-bind and weak-bind tables, and the
    names the bind table marks weak_import."""
    binds: set[tuple[str, str]] = set()
    weak_imports: set[str] = set()
    for flag, dylib_col, name_col in (("--bind", 5, 6), ("--lazy-bind", 3, 4), ("--weak-bind", None, 5)):
        rows = _objdump(path, flag)
        header = next(i for i, line in enumerate(rows) if line.startswith("segment"))
        for line in rows[header + 1 :]:
            words = line.split()
            if not words or "strong" in words:
                continue
            binds.add((words[name_col], "weak" if dylib_col is None else words[dylib_col]))
            if "(weak_import)" in words:
                weak_imports.add(words[name_col])
    return binds, weak_imports


def objdump_exports(path: Path) -> set[tuple[str, bool]]:
    rows = _objdump(path, "--exports-trie")
    return {(line.split()[1], "[weak_def]" in line) for line in rows[rows.index("Exports trie:") + 1 :] if line.strip()}


def lief_facts(path: Path) -> tuple[set[tuple[str, str]], set[str], set[tuple[str, bool]]]:
    """LIEF's binds (as objdump's columns), weak imports and exports: the judge for chained fixups."""
    binary: Any = lief.MachO.parse(str(path)).at(0)
    binds: set[tuple[str, str]] = set()
    weak_imports: set[str] = set()
    for bind in binary.bindings:
        ordinal = bind.library_ordinal
        column = short_name(bind.library.name) if ordinal > 0 else \
            {0: "this-image", -1: "main-executable", -2: "flat-namespace", -3: "weak"}[ordinal]
        binds.add((bind.symbol.name, column))
        if bind.weak_import:
            weak_imports.add(bind.symbol.name)
    exports = {(s.name, bool(s.export_info.flags & 0x4)) for s in binary.exported_symbols}
    return binds, weak_imports, exports


def nm_undefined(path: Path) -> dict[str, str]:
    """llvm-nm -m's undefined names: name -> "flat" or the library it says (from the symbol table)."""
    done = subprocess.run(["llvm-nm", "-m", str(path)], capture_output=True, text=True, check=True)
    found = {}
    for line in done.stdout.splitlines():
        if "(undefined)" in line:
            name = re.search(r"external (\S+)", line)
            library = re.search(r"\(from (\S+)\)", line)
            if name:
                found[name.group(1)] = library.group(1) if library else "flat"
    return found


def as_columns(facts: MachOFacts) -> set[tuple[str, str]]:
    return {(i.name, short_name(i.library) if i.binding == TWO_LEVEL and i.library else
             {v: k for k, v in _SPECIAL_COLUMNS.items()}[i.binding]) for i in facts.imports}


def only(path: Path) -> MachOFacts:
    facts = read(path)
    assert len(facts) == 1
    return facts[0]


def test_headers_and_load_commands_match_objdump(macho_built: list[tuple[MachOSpec, Path]]) -> None:
    for spec, path in macho_built:
        facts, truth = only(path), objdump_headers(path)
        assert facts.architecture == {"ARM64": "arm64", "X86_64": "x86_64"}[truth.cputype] == spec.arch
        assert facts.filetype.upper() == truth.filetype and facts.filetype == spec.filetype
        assert facts.two_level == ("TWOLEVEL" in truth.flags)
        assert facts.weak_defines == ("WEAK_DEFINES" in truth.flags)
        assert facts.binds_to_weak == ("BINDS_TO_WEAK" in truth.flags)
        assert facts.install_name == truth.install_name == (spec.install_name if spec.filetype == "dylib" else None)
        assert tuple((d.name, d.kind) for d in facts.dependencies) == truth.dylibs
        assert (spec.dep_install_name, spec.dep_link) in truth.dylibs
        assert facts.rpaths == truth.rpaths == spec.rpaths
        assert facts.fixups == ("chained" if spec.linker == "lld" else "dyld_info")


def test_binds_and_exports_match_an_independent_reader(macho_built: list[tuple[MachOSpec, Path]]) -> None:
    for spec, path in macho_built:
        facts = only(path)
        if spec.linker == "zig":
            binds, weak_imports = objdump_binds(path)
            exports = objdump_exports(path)
        else:
            binds, weak_imports, exports = lief_facts(path)
        assert as_columns(facts) == binds, spec.name
        assert {i.name for i in facts.imports if i.weak_import} >= weak_imports, spec.name
        assert {(e.name, e.weak_definition) for e in facts.exports} == exports, spec.name


def test_imports_are_classified_as_the_generator_meant(macho_built: list[tuple[MachOSpec, Path]]) -> None:
    """Flat for -undefined dynamic_lookup names, two-level to the dependency's install name
    for its names, weak_import where the source said so; llvm-nm's symbol table agrees."""
    for spec, path in macho_built:
        facts = only(path)
        by_name = {(i.name, i.binding): i for i in facts.imports}
        for name in spec.flat + spec.flat_weak:
            assert by_name[("_" + name, FLAT)].library is None, name
            assert by_name[("_" + name, FLAT)].weak_import == (name in spec.flat_weak), name
        for name in spec.dep_functions + spec.dep_data + spec.dep_weak_imports:
            bound = by_name[("_" + name, TWO_LEVEL)]
            assert bound.library == spec.dep_install_name, name
            assert bound.weak_import == (name in spec.dep_weak_imports or spec.dep_link == "weak"), name
        undefined = nm_undefined(path)
        for imported in facts.imports:
            if imported.binding == TWO_LEVEL and imported.name in undefined:
                assert undefined[imported.name] == short_name(imported.library or ""), imported
            elif imported.binding == FLAT:
                assert undefined[imported.name] == "flat", imported
        exported = {e.name: e.weak_definition for e in facts.exports}
        assert all(exported["_" + n] is False for n in spec.exports)
        assert all(exported["_" + n] is True for n in spec.weak_exports)


def test_the_generator_covers_what_the_reader_must_tell_apart(macho_built: list[tuple[MachOSpec, Path]]) -> None:
    """The seeded draw has flat, weak and two-level imports, weak definitions, both
    architectures, every dependency kind its linkers offer, and bundles where lld links."""
    all_facts = [only(path) for _, path in macho_built]
    bindings = {i.binding for f in all_facts for i in f.imports}
    assert {FLAT, TWO_LEVEL} <= bindings
    assert any(i.weak_import for f in all_facts for i in f.imports)
    assert any(e.weak_definition for f in all_facts for e in f.exports)
    assert {f.architecture for f in all_facts} == {"arm64", "x86_64"}
    kinds = {d.kind for f in all_facts for d in f.dependencies}
    assert {"load", "weak"} <= kinds
    if ld64_lld():
        assert "reexport" in kinds and {f.fixups for f in all_facts} == {"chained", "dyld_info"}
        assert "bundle" in {f.filetype for f in all_facts}


def _strip_path(facts: MachOFacts) -> tuple[object, ...]:
    return (facts.architecture, facts.filetype, facts.flags, facts.install_name, facts.dependencies,
            facts.rpaths, facts.exports, facts.imports, facts.fixups)


@pytest.mark.parametrize("maker", ["lipo", "fat32", "fat64"])
def test_fat_files_give_each_slice(macho_built: list[tuple[MachOSpec, Path]], tmp_path: Path, maker: str) -> None:
    zig = [path for spec, path in macho_built if spec.linker == "zig"]
    parts = [zig[0], zig[1]]  # arm64 then x86_64
    if maker == "lipo":
        tool = llvm_lipo()
        if tool is None:
            pytest.skip("no llvm-lipo")
        fat = tmp_path / "fat.dylib"
        subprocess.run([tool, "-create", *map(str, parts), "-output", str(fat)], check=True)
        listed = subprocess.run([tool, "-archs", str(fat)], capture_output=True, text=True, check=True).stdout.split()
    else:
        fat = write_fat(parts, tmp_path / "fat.dylib", wide=maker == "fat64")
        listed = ["arm64", "x86_64"]
    sliced = read(fat)
    assert sorted(f.architecture for f in sliced) == sorted(listed)
    by_arch = {f.architecture: f for f in sliced}
    for part in parts:
        thin = only(part)
        assert _strip_path(by_arch[thin.architecture]) == _strip_path(thin)
        assert by_arch[thin.architecture].path.startswith(str(fat))


FUZZ_SEED = int(os.environ.get("AOTI_SHIM_FUZZ_SEED", "20261203"))
FUZZ_COUNT = int(os.environ.get("AOTI_SHIM_FUZZ_COUNT", "1500"))
# A healthy read takes about a millisecond; a loop or a blow-up takes far longer.
PER_FILE_LIMIT_S = 2.0


def _hot_ranges(path: Path) -> list[tuple[int, int]]:
    """Where the tables lie (from the reader itself: the mutants need not agree with it)."""
    data = path.read_bytes()
    view = view_of_bytes(data, str(path))
    found = [(0, 64)]
    for part in slices(view):
        commands = parse(part)
        for extent in (commands.bind, commands.lazy_bind, commands.weak_bind, commands.exports_trie,
                       commands.chained_fixups):
            if extent is not None:
                found.append((part.start + extent.offset, extent.size))
    return found


def test_mutated_files_give_facts_or_one_input_error(macho_built: list[tuple[MachOSpec, Path]], tmp_path: Path) -> None:
    zig = [path for spec, path in macho_built if spec.linker == "zig"]
    seeds = [zig[0], zig[1], write_fat(zig[:2], tmp_path / "fat.dylib", wide=False)]
    seeds += [path for spec, path in macho_built if spec.linker == "lld"][:2]
    rng = random.Random(FUZZ_SEED)
    hot = {seed: _hot_ranges(seed) for seed in seeds}
    outcomes = {"facts": 0, "error": 0}
    target = tmp_path / "mutant"
    for _ in range(FUZZ_COUNT):
        seed = rng.choice(seeds)
        target.write_bytes(mutate(seed.read_bytes(), rng, hot[seed]))
        started = time.monotonic()
        try:
            with time_limit(PER_FILE_LIMIT_S):
                facts = read(target)
            assert all(isinstance(f, MachOFacts) for f in facts) and facts
            outcomes["facts"] += 1
        except InputError as error:
            assert str(error) and "\n" not in str(error), repr(str(error))
            assert str(error).startswith(str(target)), str(error)
            outcomes["error"] += 1
        assert time.monotonic() - started < PER_FILE_LIMIT_S
    # Both outcomes must occur, or the mutants are too timid (or too brutal) to test anything.
    assert outcomes["facts"] > FUZZ_COUNT // 10 and outcomes["error"] > FUZZ_COUNT // 10, outcomes


def test_hostile_shapes_give_one_line(tmp_path: Path) -> None:
    """Files no fuzzer is likely to make: a loop in the export trie, a Java class file's
    magic, a FIFO, an empty file, an ordinal past the dylib list."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    java = tmp_path / "Main.class"
    java.write_bytes(b"\xca\xfe\xba\xbe\x00\x00\x00\x41" + bytes(64))
    for path, expected in ((fifo, "not a regular file"), (empty, "empty file"), (java, "Java class")):
        with time_limit(PER_FILE_LIMIT_S), pytest.raises(InputError, match=expected):
            read(path)
    # A trie whose root's one child is the root itself.
    loop = view_of_bytes(b"\x00\x01_\x00\x00", "loop")
    with pytest.raises(InputError, match="twice"):
        read_trie(loop)


def test_an_image_without_mh_twolevel_is_looked_up_flat(
    macho_built: list[tuple[MachOSpec, Path]], tmp_path: Path
) -> None:
    """dyld ignores the library ordinals of a flat-namespace image: every bind is a flat lookup."""
    spec, path = next((s, p) for s, p in macho_built if s.linker == "zig")
    data = bytearray(path.read_bytes())
    flags = int.from_bytes(data[24:28], "little")
    assert flags & 0x80
    data[24:28] = (flags & ~0x80).to_bytes(4, "little")
    flat = tmp_path / "flat.dylib"
    flat.write_bytes(bytes(data))
    two_level, flattened = only(path), only(flat)
    assert not flattened.two_level
    assert {(i.name, i.weak_import) for i in flattened.imports if i.binding == FLAT} == \
        {(i.name, i.weak_import) for i in two_level.imports if i.binding != WEAK}
    assert any(i.binding == TWO_LEVEL for i in two_level.imports) and all(i.library is None for i in flattened.imports)


def _chained_blob(imports: list[tuple[str, int, bool]], imports_format: int) -> bytes:
    """An LC_DYLD_CHAINED_FIXUPS payload: header, imports table in ``imports_format``, names."""
    names = b""
    offsets = []
    for name, _, _ in imports:
        offsets.append(len(names))
        names += name.encode() + b"\0"
    table = b""
    for (_, ordinal, weak), offset in zip(imports, offsets):
        if imports_format == 3:
            table += ((ordinal & 0xFFFF) | weak << 16 | offset << 32).to_bytes(8, "little") + (7).to_bytes(8, "little")
        else:
            word = ((ordinal & 0xFF) | weak << 8 | offset << 9).to_bytes(4, "little")
            table += word + ((5).to_bytes(4, "little") if imports_format == 2 else b"")
    header_size = 28
    starts = header_size
    imports_at = starts + 4
    names_at = imports_at + len(table)
    header = struct.pack("<7I", 0, starts, imports_at, names_at, len(imports), imports_format, 0)
    return header + (0).to_bytes(4, "little") + table + names


@pytest.mark.parametrize("imports_format", [1, 2, 3])
def test_every_chained_imports_format(imports_format: int) -> None:
    """ld64.lld writes format 1 only; Apple's ld writes 2 and 3 (addends, 16-bit ordinals), so
    these payloads are written here: each import's ordinal (special ones too) and weak bit."""
    rng = random.Random(imports_format)
    wanted = [(f"_aoti_torch_{i}_{rng.randrange(1 << 16):x}", rng.choice((1, 2, 3, 0, -1, -2, -3)), rng.random() < 0.3)
              for i in range(rng.randint(5, 20))]
    found = read_chained_imports(view_of_bytes(_chained_blob(wanted, imports_format), "chained"))
    assert [(b.name, b.ordinal, b.weak_import) for b in found] == wanted
    with pytest.raises(InputError, match="^chained: "):
        read_chained_imports(view_of_bytes(_chained_blob(wanted, imports_format)[:-40], "chained"))


def _uleb(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _opcode_stream(rng: random.Random, table: str) -> tuple[bytes, set[tuple[str, int, bool]]]:
    """A random dyld-info opcode stream (every opcode kind) and the binds it must give."""
    out, expected = bytearray(), set()
    for index in range(rng.randint(3, 12)):
        name = f"_sym_{index}_{rng.randrange(1 << 20):x}"
        ordinal = rng.choice((1, 2, 15, 16, 300, 0, -1, -2, -3))
        if table != "weak_bind":
            if ordinal > 15:
                out += bytes([0x20]) + _uleb(ordinal)  # SET_DYLIB_ORDINAL_ULEB
            elif ordinal > 0:
                out.append(0x10 | ordinal)  # SET_DYLIB_ORDINAL_IMM
            else:
                out.append(0x30 | (ordinal & 0xF))  # SET_DYLIB_SPECIAL_IMM
        flags = rng.choice((0, 1, 8)) if table != "lazy_bind" else rng.choice((0, 1))
        out += bytes([0x40 | flags]) + name.encode() + b"\0"  # SET_SYMBOL_TRAILING_FLAGS_IMM
        out += bytes([0x51, 0x72]) + _uleb(rng.randrange(1 << 20))  # SET_TYPE_IMM, SET_SEGMENT_AND_OFFSET_ULEB
        out += bytes([0x60]) + bytes([0x7F])  # SET_ADDEND_SLEB (-1)
        # One of the five ways to bind; a strong definition in the weak table binds nothing.
        out += rng.choice((b"\x90", b"\xa0" + _uleb(8), b"\xb3", b"\xc0" + _uleb(1 << 30) + _uleb(8), b"\x80\x08\x90"))
        if table == "weak_bind":
            if not flags & 8:
                expected.add((name, -3, False))
        else:
            expected.add((name, ordinal if table != "weak_bind" else -3, bool(flags & 1)))
        if table == "lazy_bind":
            out.append(0x00)  # DONE ends each lazy stub's stream, not the table
    if table != "lazy_bind":
        out += b"\xd0" + _uleb(4) + b"\xd1\x00" + b"\x90" * 3  # THREADED ops, then DONE, then ignored bytes
    return bytes(out), expected


@pytest.mark.parametrize("table", ["bind", "lazy_bind", "weak_bind"])
def test_every_bind_opcode(table: str) -> None:
    """zig's streams use few opcodes; Apple's ld uses the rest (ULEB ordinals, repeated and
    scaled binds, threaded binds): streams written here from a seeded draw."""
    rng = random.Random(table)
    for _ in range(50):
        stream, expected = _opcode_stream(rng, table)
        found = read_opcodes(view_of_bytes(stream, table), table)
        assert {(b.name, b.ordinal, b.weak_import) for b in found} == expected
    with pytest.raises(InputError, match="unknown bind opcode 0xe0"):
        read_opcodes(view_of_bytes(b"\x11\x40_a\x00\xe0", "bad"), "bind")
    with pytest.raises(InputError, match="before any symbol name"):
        read_opcodes(view_of_bytes(b"\x11\x90", "bad"), "bind")
