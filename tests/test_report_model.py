"""The report every format is rendered from (checks/report/model.py): its exit bits, counts,
the words for where the prefix came from, batches of findings and their fingerprints."""

from __future__ import annotations

import pytest

from aoti_shim.checks.report.model import (
    BLOCKING,
    WARNING,
    Finding,
    FindingBatch,
    Report,
    Tally,
    exit_bits,
    fingerprint,
    prefix_origin,
    validate_fail_on,
)
from aoti_shim.errors import EXIT_BLOCKING, EXIT_WARNINGS, UsageError
from formats_support import F_COLLISION, SHIM

# (blocking, warnings) -> exit status under each --fail-on: the warning bit counts only
# under "any", and both bits together make 12.
_TABLE = {
    (False, False): {"blocking": 0, "any": 0, "never": 0},
    (True, False): {"blocking": 8, "any": 8, "never": 0},
    (False, True): {"blocking": 0, "any": 4, "never": 0},
    (True, True): {"blocking": 8, "any": 12, "never": 0},
}


@pytest.mark.parametrize(
    ("found", "fail_on"), [(found, fail_on) for found in _TABLE for fail_on in ("blocking", "any", "never")]
)
def test_exit_bits_for_every_mix_of_findings(found: tuple[bool, bool], fail_on: str) -> None:
    blocking, warnings = found
    code = _TABLE[found][fail_on]
    assert exit_bits(blocking, warnings, fail_on) == code
    findings = (Finding("COLLISION", BLOCKING, "a.so", "x", "m"),) * blocking + (
        Finding("NOT_A_SHIM", WARNING, "b.so", "", "m"),
    ) * warnings
    report = Report(findings=findings, prefix=None, prefix_source="none", artifacts=(), references=())
    assert report.exit_code(fail_on) == code
    assert report.exit_code() == _TABLE[found]["blocking"]  # the default counts blocking findings
    assert Tally.of(report).exit_code(fail_on) == code
    assert (EXIT_BLOCKING, EXIT_WARNINGS) == (8, 4)


def test_a_tally_counts_batches_by_their_size() -> None:
    tally = Tally()
    tally.count(FindingBatch("COLLISION", BLOCKING, "a.so", ("x", "y", "z"), ("m",) * 3, (None,) * 3))
    tally.count(Finding("NOT_A_SHIM", WARNING, "b.so", "", "m"))
    tally.count(FindingBatch("REEXPORTED_RUNTIME", WARNING, "b.so", ("u", "v"), ("m",) * 2, (None,) * 2))
    assert (tally.blocking, tally.warnings) == (3, 3)
    assert tally.exit_code() == 8 and tally.exit_code("any") == 12


def test_default_fail_on_is_blocking_and_others_are_refused() -> None:
    assert Tally().exit_code() == 0
    for good in ("blocking", "any", "never"):
        assert validate_fail_on(good) == good
    for bad in ("all", "", None, 1):
        with pytest.raises(UsageError, match=r"^--fail-on must be one of blocking, any, never, not "):
            validate_fail_on(bad)
    with pytest.raises(UsageError, match=r"^fail-on in pyproject.toml must be one of"):
        validate_fail_on("Any", "fail-on in pyproject.toml")


def test_prefix_origin_in_words() -> None:
    assert prefix_origin("inferred", "models") == "inferred from the models' imports"
    assert prefix_origin("inferred", "shims") == "inferred from the shims' exports"
    assert prefix_origin("inferred", "") == "inferred from the shims' exports"
    assert prefix_origin("given", "") == "given" and prefix_origin("none", "") == "none found"
    assert prefix_origin("CMAKE_ARGS", "") == "CMAKE_ARGS"


def test_a_report_assembled_from_a_stream_carries_every_header_field_and_the_tally() -> None:
    from aoti_shim.checks.report.model import AgainstSource, CheckedArtifact, Header, Suppressed, assemble, header_of

    found = Finding("COLLISION", BLOCKING, "a.so", "x", "m", "b.so")
    header = Header(
        prefix="myrt_", prefix_source="inferred", artifacts=(CheckedArtifact("a.so", "shim"),), references=("r.so",),
        skipped_rules=(("LOAD_FAILURE", "why"),), prefix_inferred_from="models",
        against=(AgainstSource("torch", "/t", "argument", "2.13.0", 3),), ignored=(("tool", "executable"),),
    )
    tally = Tally()
    tally.suppressed = [Suppressed(found._replace(symbol="y"), "known")]
    tally.unused_suppressions = ("NOT_A_SHIM in *.so",)
    report = assemble(header, (found,), tally)
    assert report == Report(
        findings=(found,), prefix="myrt_", prefix_source="inferred", artifacts=header.artifacts, references=("r.so",),
        suppressed=(Suppressed(found._replace(symbol="y"), "known"),), unused_suppressions=("NOT_A_SHIM in *.so",),
        skipped_rules=(("LOAD_FAILURE", "why"),), prefix_inferred_from="models", against=header.against,
    )
    # And back: the header a report says before its findings (what a file listed as not checked is, it does not keep).
    assert header_of(report) == Header(**{**header.__dict__, "ignored": ()})


def test_a_batch_from_findings_takes_the_first_one_s_rule_and_library() -> None:
    (one,) = FindingBatch.from_findings([F_COLLISION]).findings()
    assert one == F_COLLISION
    batch = FindingBatch.from_findings([F_COLLISION, F_COLLISION._replace(symbol="other", message="m2", related=None)])
    assert (
        batch.rule,
        batch.severity,
        batch.artifact,
        list(batch.symbols),
        list(batch.messages),
        list(batch.related),
    ) == ("COLLISION", BLOCKING, SHIM, ["c10_thing", "other"], ["libc10.so exports it too", "m2"], ["libc10.so", None])


def test_a_fingerprint_hashes_undecodable_bytes_as_they_were() -> None:
    import hashlib

    # scan's JSON fingerprints its raw findings: a name that is no UTF-8 hashes the bytes
    # Python's surrogateescape stands for, encoded as it holds them (surrogatepass).
    want = hashlib.sha256(b"HIJACK\0lib\xed\xb3\xbex.so\0sym\xed\xb3\xbf").hexdigest()[:32]
    assert fingerprint("HIJACK", "d/lib\udcfex.so", "sym\udcff") == want
    assert Finding("HIJACK", BLOCKING, "d/lib\udcfex.so", "sym\udcff", "m").fingerprint == want
