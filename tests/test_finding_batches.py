"""Findings stream in batches (columns of one rule about one library): every format must
say exactly what the per-finding form says, across batch boundaries, partial
suppressions and names that need escaping.

The many-findings fixture is a real shim and a real reference library, compiled here,
sharing more names than one batch holds.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from aoti_shim.checks import CheckSettings, render, run_check
from aoti_shim.checks.formats.json_report import FindingEncoder, quote_each
from aoti_shim.checks.report.model import BLOCKING, Finding, FindingBatch, fingerprint
from aoti_shim.checks.rules.table import BATCH
from compile_support import compile_shared

SHARED = 5000  # several batches, the last one partial; the suppression below cuts across one
assert 2 * BATCH < 3000 < 4000 < SHARED and 3000 % BATCH and SHARED % BATCH


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("many")
    names = [f"shared_{i:05d}" for i in range(SHARED)]
    src = out / "lib.c"
    src.write_text("".join(f"int {n}(void) {{ return {i}; }}\n" for i, n in enumerate(names)))
    shim = out / "libmyrt_shim.so"
    ref = out / "libref.so"
    compile_shared(src, shim)
    compile_shared(src, ref)
    suppress = out / "suppress.toml"
    # 3000..4999: the tail of one batch and every batch after it.
    suppress.write_text('[[suppress]]\nrule = "COLLISION"\nsymbol = "shared_0[34]*"\nreason = "vendored"\n')
    return {"shim": shim, "ref": ref, "suppress": suppress}


def _check(paths: dict[str, Path], fmt: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aoti_shim", "check", "--shim", str(paths["shim"]), "--against", str(paths["ref"]),
         "--format", fmt, *extra],
        capture_output=True, text=True, check=False,
    )


def test_json_lists_every_finding_across_batches_in_name_order(many: dict[str, Path]) -> None:
    done = _check(many, "json")
    assert done.returncode == 8, done.stderr
    report = json.loads(done.stdout)
    collisions = [f for f in report["findings"] if f["rule"] == "COLLISION"]
    assert [f["symbol"] for f in collisions] == sorted(f"shared_{i:05d}" for i in range(SHARED))
    assert all(f["fingerprint"] == fingerprint(f["rule"], f["artifact"], f["symbol"]) for f in collisions)
    assert all(
        f["related"] == str(many["ref"]) and f["message"].endswith(f"exported by {many['ref']}") for f in collisions
    )
    assert report["summary"]["blocking"] == len([f for f in report["findings"] if f["severity"] == BLOCKING])


def test_streamed_formats_equal_the_whole_report_rendering(many: dict[str, Path]) -> None:
    # The command streams batches; render() of the whole report goes one finding per batch.
    report = run_check(CheckSettings(shims=(str(many["shim"]),), against=(str(many["ref"]),)))
    assert len([f for f in report.findings if f.rule == "COLLISION"]) == SHARED
    for fmt in ("json", "sarif", "text"):
        assert _check(many, fmt).stdout == render(report, fmt), fmt


def test_a_suppression_splits_a_batch(many: dict[str, Path]) -> None:
    done = _check(many, "json", "--suppressions", str(many["suppress"]))
    report = json.loads(done.stdout)
    kept = [f["symbol"] for f in report["findings"] if f["rule"] == "COLLISION"]
    assert kept == [f"shared_{i:05d}" for i in range(3000)]
    assert [s["finding"]["symbol"] for s in report["suppressed"]] == [f"shared_{i:05d}" for i in range(3000, SHARED)]
    assert report["summary"]["blocking"] == 3000
    text = _check(many, "text", "--suppressions", str(many["suppress"])).stdout
    assert f"{SHARED - 3000} suppressed" in text and re.search(r"COLLISION +3000 findings", text)


def test_text_counts_a_group_across_batches(many: dict[str, Path]) -> None:
    text = _check(many, "text").stdout
    assert re.search(rf"COLLISION +{SHARED} findings, e.g.:", text)
    assert f"... and {SHARED - 5} more" in text


# Texts as checked libraries can hold them: any character but NUL (names end at one),
# lone surrogates included (undecodable bytes of file names).
_texts = st.lists(st.text(st.characters(blacklist_characters="\0", blacklist_categories=()), max_size=12), max_size=20)


@settings(max_examples=300, deadline=None)
@given(texts=_texts)
# DEL is ASCII that json escapes: the fast path's table once lacked it (hypothesis found it).
@example(texts=["\x7f", "a"])
def test_quote_each_is_json_quoting(texts: list[str]) -> None:
    assert list(quote_each(texts)) == [json.dumps(t) for t in texts]


@settings(max_examples=200, deadline=None)
@given(symbols=_texts, artifact=st.text(max_size=8))
# Names that are no UTF-8 (lone surrogates), which the search rarely draws.
@example(symbols=["sym\udcff", "\ud800", "a b", ""], artifact="lib\udcfe.so")
# A name holding NUL (no ELF name can: strings end at one) is hashed on its own too.
@example(symbols=["a\0b", "c\udcff", ""], artifact="lib.so")
def test_batch_fingerprints_are_the_findings_fingerprints(symbols: list[str], artifact: str) -> None:
    batch = FindingBatch("COLLISION", BLOCKING, artifact, symbols, ["m"] * len(symbols), [None] * len(symbols))
    assert FindingEncoder().fingerprints(batch) == [fingerprint("COLLISION", artifact, s) for s in symbols]


def test_a_batch_is_its_findings() -> None:
    findings = [Finding("COLLISION", BLOCKING, "a.so", f"s{i}", f"m{i}", "ref.so" if i % 2 else None) for i in range(5)]
    batch = FindingBatch.from_findings(findings)
    assert list(batch.findings()) == findings and batch.size == 5
    assert list(FindingBatch.of(findings[1]).findings()) == [findings[1]]
