"""The PE reader against llvm-readobj and LIEF, on DLLs a seeded generator draws.

Each DLL (tests/pe_fixtures.py) imports from generated dependency names, some
delay-loaded, some names by ordinal, and exports by name, by ordinal only and by
forwarder. llvm-readobj --coff-imports --coff-exports judges imports and exports; LIEF
judges the export directory's DLL name and the forwarders (LLVM 14's readobj shows
neither). Mutants of the fixtures must give facts or one InputError line, in time.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lief
import pytest

from aoti_shim.checks.bounded.view import view_of_bytes
from aoti_shim.checks.pe import PEFacts, read
from aoti_shim.checks.pe.headers import parse, rva_offset
from aoti_shim.errors import InputError
from pe_fixtures import PESpec, build, mutate, specs

SEED = int(os.environ.get("AOTI_SHIM_PE_SEED", "3602"))
COUNT = int(os.environ.get("AOTI_SHIM_PE_COUNT", "6"))
FUZZ_SEED = int(os.environ.get("AOTI_SHIM_FUZZ_SEED", "20261203"))
FUZZ_COUNT = int(os.environ.get("AOTI_SHIM_FUZZ_COUNT", "1500"))
PER_FILE_LIMIT_S = 2.0


@pytest.fixture(scope="module")
def pe_built(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[PESpec, Path]]:
    out = tmp_path_factory.mktemp("pe")
    return [(spec, build(spec, out / spec.name)) for spec in specs(SEED, COUNT)]


def readobj(path: Path) -> tuple[list[tuple[str, bool, tuple[str, ...]]], set[tuple[int, str | None]]]:
    """llvm-readobj's imports, [(DLL, delay-loaded, names)] in order (``#N`` for an ordinal),
    and exports {(ordinal, name or None)}."""
    done = subprocess.run(["llvm-readobj", "--coff-imports", "--coff-exports", str(path)],
                          capture_output=True, text=True, check=True)
    imports: list[tuple[str, bool, tuple[str, ...]]] = []
    exports: set[tuple[int, str | None]] = set()
    block, ordinal = None, None
    for line in done.stdout.splitlines():
        if not line.startswith(" ") and line.endswith("{"):
            block = line.split()[0]
            continue
        field = line.strip()
        if block in ("Import", "DelayImport") and field.startswith("Name: ") and line.startswith("  Name"):
            imports.append((field.removeprefix("Name: "), block == "DelayImport", ()))
        elif block in ("Import", "DelayImport") and field.startswith("Symbol:"):
            symbol = re.fullmatch(r"Symbol: (\S*) \((\d+)\)", field)
            assert symbol, field
            name = symbol.group(1) or f"#{symbol.group(2)}"
            dll, delay, names = imports[-1]
            imports[-1] = (dll, delay, names + (name,))
        elif block == "Export" and field.startswith("Ordinal: "):
            ordinal = int(field.removeprefix("Ordinal: "))
        elif block == "Export" and field.startswith("Name:"):
            assert ordinal is not None
            exports.add((ordinal, field.removeprefix("Name:").strip() or None))
    return imports, exports


def grouped(facts: PEFacts) -> list[tuple[str, bool, tuple[str, ...]]]:
    groups: list[tuple[str, bool, tuple[str, ...]]] = []
    for dependency in facts.dependencies:
        names = tuple(
            i.name for i in facts.imports if i.dll == dependency.name and i.delay == (dependency.kind == "delay")
        )
        groups.append((dependency.name, dependency.kind == "delay", names))
    return groups


def test_imports_and_exports_match_readobj(pe_built: list[tuple[PESpec, Path]]) -> None:
    for spec, path in pe_built:
        facts = read(path)
        imports, exports = readobj(path)
        assert grouped(facts) == imports, spec.name
        assert {(e.ordinal, e.name) for e in facts.exports} == exports, spec.name


def test_dll_name_machine_and_forwarders_match_lief(pe_built: list[tuple[PESpec, Path]]) -> None:
    for spec, path in pe_built:
        facts = read(path)
        binary: Any = lief.PE.parse(str(path))
        assert facts.is_dll and facts.architecture == spec.arch
        assert facts.architecture == {"AMD64": "x86_64", "ARM64": "arm64"}[binary.header.machine.name]
        table = binary.get_export()
        assert facts.dll_name == table.name == spec.dll
        lief_forwarders = {(e.ordinal, f"{e.forward_information.library}.{e.forward_information.function}")
                           for e in table.entries if e.is_forwarded}
        assert {(e.ordinal, e.forwarder) for e in facts.exports if e.forwarder} == lief_forwarders
        assert [(d.name, [e.name if not e.is_ordinal else f"#{e.ordinal}" for e in d.entries])
                for d in binary.delay_imports] == [(g[0], list(g[2])) for g in grouped(facts) if g[1]]


def test_facts_are_what_the_generator_meant(pe_built: list[tuple[PESpec, Path]]) -> None:
    for spec, path in pe_built:
        facts = read(path)
        # The import directory comes first, then the delay-load one; each in link order.
        assert [(d.name, d.kind) for d in facts.dependencies] == \
            [(dep.dll, "normal") for dep in spec.deps if not dep.delay] + \
            [(dep.dll, "delay") for dep in spec.deps if dep.delay]
        for dep in spec.deps:
            taken = {i.name for i in facts.imports if i.dll == dep.dll}
            assert taken == set(dep.names) | {f"#{n}" for n in dep.ordinals}, dep
            assert all(i.delay == dep.delay for i in facts.imports if i.dll == dep.dll)
        named = {e.name for e in facts.exports}
        assert set(spec.exports) <= named
        if spec.noname_ordinal is not None:
            assert any(e.ordinal == spec.noname_ordinal and e.name is None for e in facts.exports)
        if spec.forwarder:
            assert any(e.name == spec.forwarder[0] and e.forwarder == spec.forwarder[1] for e in facts.exports)


def test_the_generator_covers_what_the_reader_must_tell_apart(pe_built: list[tuple[PESpec, Path]]) -> None:
    every = [read(path) for _, path in pe_built]
    assert {d.kind for f in every for d in f.dependencies} == {"normal", "delay"}
    assert any(i.name.startswith("#") for f in every for i in f.imports)
    assert any(e.name is None for f in every for e in f.exports)
    assert any(e.forwarder for f in every for e in f.exports)
    assert {f.architecture for f in every} == {"x86_64", "arm64"}


class Hang(Exception):
    """A read that ran past its time limit."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def expire(_signum: int, _frame: object) -> None:
        raise Hang(f"read ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _hot_ranges(path: Path) -> list[tuple[int, int]]:
    """The headers and each section that holds a directory (names and thunks lie there too)."""
    view = view_of_bytes(path.read_bytes(), str(path))
    headers = parse(view)
    found = [(0, 1024)]
    for rva, _size in headers.directories:
        if rva:
            try:
                at = rva_offset(view, headers, rva, "a directory")
            except InputError:
                continue
            found += [(s.file_offset, s.file_size) for s in headers.sections
                      if s.file_offset <= at < s.file_offset + s.file_size]
    return found


def test_mutated_dlls_give_facts_or_one_input_error(pe_built: list[tuple[PESpec, Path]], tmp_path: Path) -> None:
    seeds = [path for _, path in pe_built[:4]]
    hot = {seed: _hot_ranges(seed) for seed in seeds}
    rng = random.Random(FUZZ_SEED)
    outcomes = {"facts": 0, "error": 0}
    target = tmp_path / "mutant.dll"
    for _ in range(FUZZ_COUNT):
        seed = rng.choice(seeds)
        target.write_bytes(mutate(seed.read_bytes(), rng, hot[seed]))
        started = time.monotonic()
        try:
            with time_limit(PER_FILE_LIMIT_S):
                facts = read(target)
            assert isinstance(facts, PEFacts)
            outcomes["facts"] += 1
        except InputError as error:
            assert str(error) and "\n" not in str(error), repr(str(error))
            assert str(error).startswith(str(target)), str(error)
            outcomes["error"] += 1
        assert time.monotonic() - started < PER_FILE_LIMIT_S
    assert outcomes["facts"] > FUZZ_COUNT // 10 and outcomes["error"] > FUZZ_COUNT // 10, outcomes


def test_hostile_shapes_give_one_line(tmp_path: Path) -> None:
    """A lone MZ, an e_lfanew past the end, a FIFO: each one line naming the file."""
    fifo = tmp_path / "fifo.dll"
    os.mkfifo(fifo)
    lone = tmp_path / "lone.dll"
    lone.write_bytes(b"MZ" + bytes(62))
    far = tmp_path / "far.dll"
    far.write_bytes(b"MZ" + bytes(58) + (0x7FFFFFFF).to_bytes(4, "little"))
    for path, expected in ((fifo, "not a regular file"), (lone, "no PE signature"), (far, "PE signature")):
        with time_limit(PER_FILE_LIMIT_S), pytest.raises(InputError, match=expected):
            read(path)
