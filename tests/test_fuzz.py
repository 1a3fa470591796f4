"""Seeded mutation fuzzing of the ELF reader, the checker, wheels and snapshots.

Thousands of mutants of the compiled and synthetic fixtures go through every question
the checker asks. Each must end in an answer or one InputError line, never another
exception, and quickly. The seed is fixed so a failure reproduces; set
AOTI_SHIM_FUZZ_SEED / AOTI_SHIM_FUZZ_COUNT to explore further.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from aoti_shim.checks import CheckSettings, run_check
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.report.model import Finding, Report
from aoti_shim.checks.snapshot import record as snapshot_mod
from aoti_shim.errors import AotiShimError, InputError
from elf_fixtures import SYNTH_SYMBOLS, compile_fixtures, mutate, pyelftools_truth, regions, synth_elf
from wheel_support import make_wheel

SEED = int(os.environ.get("AOTI_SHIM_FUZZ_SEED", "20261130"))
COUNT = int(os.environ.get("AOTI_SHIM_FUZZ_COUNT", "4000"))
# Generous: a healthy run takes about a millisecond per mutant; a loop or a blow-up takes seconds.
PER_FILE_LIMIT_S = 2.0
SEEDS = ("tiny", "shim", "model", "kinds", "versioned", "many", "unique", "tiny32", "many32")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Path]]:
    out = tmp_path_factory.mktemp("fuzz-seeds")
    libs = compile_fixtures(out)
    seeds = [(name, libs[name]) for name in SEEDS if name in libs]
    for elf64 in (True, False):
        path = out / f"libsynth{64 if elf64 else 32}be.so"
        path.write_bytes(synth_elf(SYNTH_SYMBOLS, elf64=elf64, big_endian=True))
        seeds.append((path.stem, path))
    return seeds


def one_line(error: AotiShimError) -> None:
    message = str(error)
    assert message and "\n" not in message, repr(message)


def exercise(path: Path, probe_names: list[str]) -> None:
    """Everything the checker asks an ElfImage, lookups before scans (so .gnu.hash is read)."""
    with ElfImage(path) as image:
        # The scan's search first, over the table where it lies (no whole table read yet).
        picked = image.tables_holding(("aoti_", "torch_"), ("synth_", "__cxa_")) if image.has_dynsym else None
        for name in probe_names:
            image.find_export(name)
        _ = image.has_dynsym and image.symbol_count()
        exports = image.exports()
        if picked is not None:
            assert set(picked[0]) <= set(exports) and set(picked[1]) <= set(image.imports())
        _ = [exports[name].is_export for name in list(exports)[:5]]
        _ = list(image.imports().values())[:5]
        image.export_names()
        _ = sum(1 for _ in image.symbols())
        _ = (image.needed, image.soname, image.build_id)


def _key(finding: Finding) -> tuple[str, str, str, str]:
    return (finding.rule, finding.severity, finding.artifact, finding.symbol)


def assert_report_fits(report: Report, mutant: Path, good_ref: str, baseline: Report | None) -> None:
    """A report on a mutant says only what the mutant's own symbol table supports.

    As the shim (``baseline`` None): every finding is about the mutant, names one of its
    exports or imports, and a COLLISION's name is one good_ref exports. As the reference:
    every finding but COLLISION is the unmutated baseline's (and a LOAD_FAILURE, where the
    mutant's class, byte order or machine is another), and a COLLISION names an export of
    both. Either way the exit code is the findings' severities.
    """
    # The documented exit bits: 8 for blocking findings, 4 for warnings under --fail-on any.
    blocking = any(f.severity == "blocking" for f in report.findings)
    warning = any(f.severity == "warning" for f in report.findings)
    assert report.exit_code() == (8 if blocking else 0)
    assert report.exit_code("any") == (8 if blocking else 0) | (4 if warning else 0)
    assert report.exit_code("never") == 0
    with ElfImage(good_ref) as image:
        ref_exports = set(image.exports())
    try:
        with ElfImage(mutant) as image:
            # The checker reads a library without .dynsym as one exporting nothing; so does this.
            mutant_exports = set(image.exports()) if image.has_dynsym else set()
            mutant_imports = set(image.imports()) if image.has_dynsym else set()
    except InputError:
        # A reference is only asked single names through .gnu.hash; its whole table may be broken.
        assert baseline is not None, "the checker read a shim whose symbol table is unreadable"
        mutant_exports = ref_exports
        mutant_imports = set()
    collisions = {f.symbol for f in report.findings if f.rule == "COLLISION"}
    assert collisions <= mutant_exports & ref_exports, collisions - (mutant_exports & ref_exports)
    if baseline is None:
        assert {f.artifact for f in report.findings} <= {str(mutant)}
        # Library-level findings (NOT_A_SHIM) name no symbol; every other names a mutant export,
        # or one of its imports (the shims' own imports bind in the process too).
        assert {f.symbol for f in report.findings} - {""} <= mutant_exports | mutant_imports
    else:
        # A reference of another ELF class, byte order or machine leaves the checked libraries
        # unloadable next to it (the binding model's LOAD_FAILURE): the mutant's header says so.
        allowed = {"COLLISION"} | (
            {"LOAD_FAILURE"} if _loader_identity(mutant) != _loader_identity(Path(good_ref)) else set()
        )
        assert sorted(_key(f) for f in report.findings if f.rule not in allowed) == sorted(map(_key, baseline.findings))


def _loader_identity(path: Path) -> bytes:
    """EI_CLASS, EI_DATA and e_machine as the file holds them: what dlopen compares."""
    head = path.read_bytes()[:20]
    return head[4:6] + head[18:20]


def test_mutated_elf_files(corpus: list[tuple[str, Path]], tmp_path: Path) -> None:
    rng = random.Random(SEED)
    seeds = []
    for name, path in corpus:
        data = path.read_bytes()
        with ElfImage(path) as image:
            probes = sorted(image.exports())[:3] + ["aoti_torch_empty_strided", "no_such_name"]
        seeds.append((name, data, regions(path), probes))
    target = tmp_path / "libmutant.so"
    outcomes = {"answered": 0, "input_error": 0}
    slowest = (0.0, "")
    # A shim with aoti_torch_ exports, so that the reports below have findings to get wrong.
    good_ref = str(dict(corpus)["shim"])
    # What the reference-free rules say of good_ref in both roles: a mutated reference changes only COLLISION.
    baseline = run_check(CheckSettings(shims=(good_ref,), models=(good_ref,)))
    assert baseline.findings, "good_ref in both roles defines its shims twice: the baseline is not empty"
    checked = 0
    for i in range(COUNT):
        name, data, reg, probes = seeds[i % len(seeds)]
        mutant = mutate(data, reg, rng)
        target.write_bytes(mutant)
        started = time.perf_counter()
        try:
            exercise(target, probes)
            outcomes["answered"] += 1
        except InputError as e:
            one_line(e)
            outcomes["input_error"] += 1
        except Exception as e:
            keep = tmp_path / f"crash-{i}-{name}.so"
            keep.write_bytes(mutant)
            raise AssertionError(f"mutant {i} of {name} (seed {SEED}, kept at {keep}) raised {e!r}") from e
        # Every 8th mutant also goes through the whole checker, as a shim and as a reference.
        if i % 8 == 0:
            for as_reference, settings in (
                (False, CheckSettings(shims=(str(target),), against=(good_ref,))),
                (True, CheckSettings(shims=(good_ref,), models=(good_ref,), against=(str(target),))),
            ):
                try:
                    report = run_check(settings)
                except AotiShimError as e:
                    one_line(e)
                    continue
                assert_report_fits(report, target, good_ref, baseline if as_reference else None)
                checked += 1
        elapsed = time.perf_counter() - started
        if elapsed > slowest[0]:
            slowest = (elapsed, f"mutant {i} of {name}")
    assert slowest[0] < PER_FILE_LIMIT_S, slowest
    # Both outcomes must occur, or the mutator is too gentle (or too brutal) to prove anything.
    assert outcomes["answered"] > COUNT // 20 and outcomes["input_error"] > COUNT // 20, outcomes
    assert checked > COUNT // 80, checked


def _printable(names: set[str]) -> set[str]:
    # The readers escape undecodable bytes differently (backslash escapes against U+FFFD): compare the rest.
    return {n for n in names if "\\x" not in n and "\ufffd" not in n}


def test_mutants_agree_with_pyelftools_where_both_answer(corpus: list[tuple[str, Path]], tmp_path: Path) -> None:
    rng = random.Random(SEED + 3)
    seeds = [
        (name, path.read_bytes(), regions(path)) for name, path in corpus if name in ("tiny", "shim", "kinds", "tiny32")
    ]
    target = tmp_path / "libmutant.so"
    compared = 0
    for i in range(max(COUNT // 8, 100)):
        name, data, reg = seeds[i % len(seeds)]
        target.write_bytes(mutate(data, reg, rng))
        try:
            with ElfImage(target) as image:
                exports, imports = set(image.exports()), set(image.imports())
        except InputError:
            continue
        try:
            truth = pyelftools_truth(target)
        except Exception:  # noqa: BLE001 - pyelftools gives up on many mutants; only shared answers count
            continue
        assert _printable(exports) == _printable(truth.exports), f"mutant {i} of {name}"
        assert _printable(imports) == _printable(truth.imports), f"mutant {i} of {name}"
        compared += 1
    assert compared > COUNT // 40


def _wheel_bytes(library: bytes, folder: Path) -> bytes:
    return make_wheel(folder / "pristine-1.0-py3-none-any.whl", {
        "pkg/__init__.py": "",
        "pkg/lib/libshim.so": library,
        "pkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n",
    }, compression=zipfile.ZIP_DEFLATED).read_bytes()


def test_mutated_wheels(corpus: list[tuple[str, Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    rng = random.Random(SEED + 1)
    shim = dict(corpus)["shim"].read_bytes()
    wheel = _wheel_bytes(shim, tmp_path)
    target = tmp_path / "pkg-1.0-py3-none-any.whl"
    for i in range(max(COUNT // 10, 50)):
        out = bytearray(wheel)
        for _ in range(rng.randint(1, 6)):
            at = rng.randrange(len(out))
            out[at] = rng.randrange(256) if rng.random() < 0.7 else out[at] ^ 0x80
        if rng.random() < 0.15:
            del out[rng.randrange(len(out)) :]
        target.write_bytes(bytes(out))
        started = time.perf_counter()
        try:
            run_check(CheckSettings(shims=(str(target),), member_limit=1 << 20))
        except AotiShimError as e:
            one_line(e)
        except Exception as e:
            keep = tmp_path / f"crash-{i}.whl"
            keep.write_bytes(bytes(out))
            raise AssertionError(f"wheel mutant {i} (kept at {keep}) raised {e!r}") from e
        assert time.perf_counter() - started < PER_FILE_LIMIT_S
        # The workspace is gone afterwards: nothing half-extracted stays behind.
        assert not list(scratch.iterdir())


def test_mutated_snapshots(corpus: list[tuple[str, Path]], tmp_path: Path) -> None:
    lib_dir = tmp_path / "lib"
    lib_dir.mkdir()
    for name in ("shim", "kinds"):
        (lib_dir / f"libtorch_{name}.so").write_bytes(
            dict(corpus)[name].read_bytes()
        )  # torch's names: a snapshot is of torch
    good = snapshot_mod.encode(snapshot_mod.capture(lib_dir, torch_version="0.0"))
    good_path = tmp_path / "good.json.gz"
    good_path.write_bytes(good)
    expected = _snapshot_answers(good_path)
    assert expected and any(names for _, names, _ in expected)
    rng = random.Random(SEED + 2)
    target = tmp_path / "snap.json.gz"
    outcomes = {"same": 0, "input_error": 0, "not_a_snapshot": 0}
    for i in range(max(COUNT // 10, 50)):
        out = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            out[rng.randrange(len(out))] = rng.randrange(256)
        target.write_bytes(bytes(out))
        try:
            if not snapshot_mod.is_snapshot(target):
                outcomes["not_a_snapshot"] += 1
                continue
            answers = _snapshot_answers(target)
        except InputError as e:
            one_line(e)
            outcomes["input_error"] += 1
            continue
        except Exception as e:
            raise AssertionError(f"snapshot mutant {i} raised {e!r}") from e
        # Every member is CRC-checked gzip: a mutant that loads at all (a byte in a gzip
        # header's timestamp, say) must load as exactly what was written.
        assert answers == expected, f"snapshot mutant {i} loaded as something else"
        outcomes["same"] += 1
    assert outcomes["input_error"] > COUNT // 20, outcomes
    assert outcomes["same"] + outcomes["not_a_snapshot"] > 0, outcomes


def _snapshot_answers(path: Path) -> list[tuple[str, list[str], bool]]:
    return [
        (lib.name, sorted(lib.export_names()), lib.find_export("aoti_torch_empty_strided") is not None)
        for lib in snapshot_mod.load(path)
    ]
