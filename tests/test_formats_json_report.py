"""checks/formats/json_report.py: every field of the JSON document, streamed from batches or
rendered from a whole report, and the fingerprint it lists."""

from __future__ import annotations

import json

from aoti_shim import __version__
from aoti_shim.checks.formats import render
from aoti_shim.checks.formats.json_report import render_json, report_dict
from aoti_shim.checks.formats.sarif import render_sarif
from aoti_shim.checks.report.model import (
    BLOCKING,
    Finding,
    Suppressed,
    fingerprint,
)
from formats_support import (
    BATCH_FINDINGS,
    BATCHES,
    F_COLLISION,
    F_EXPORT,
    F_HIDDEN,
    F_RUNTIME,
    MODEL,
    SHIM,
    sample_report,
    streamed_output,
)


def _finding_dict(f: Finding) -> dict[str, object]:
    return {"rule": f.rule, "severity": f.severity, "artifact": f.artifact, "symbol": f.symbol,
            "message": f.message, "related": f.related, "fingerprint": f.fingerprint}


def test_json_says_every_field() -> None:
    doc = json.loads(render(sample_report(), "json"))
    assert doc == {
        "schema_version": 1,
        "tool": {"name": "aoti-shim", "version": __version__},
        "prefix": "myrt_",
        "prefix_source": "given",
        "artifacts": [{"path": SHIM, "role": "shim"}, {"path": MODEL, "role": "model"}],
        "references": ["/t/torch/lib/libtorch_cpu.so"],
        "against": [
            {"item": "torch", "path": "/t/torch/lib", "found_by": "argument", "torch_version": "2.13.0", "libraries": 3}
        ],
        "machine_facts": [],
        "findings": [_finding_dict(f) for f in (F_EXPORT, F_COLLISION, F_RUNTIME)],
        "suppressed": [{"finding": _finding_dict(F_HIDDEN), "reason": "known, issue 9"}],
        "unused_suppressions": ["MANGLED_SHIM in *.so"],
        "skipped_rules": [{"rule": "LOAD_FAILURE", "reason": "no reference library"}],
        "summary": {"blocking": 2, "warning": 1},
    }
    # The fingerprint hashes the rule, the file's base name and the symbol: a folder does not change it.
    moved = json.loads(render(sample_report((F_EXPORT._replace(artifact="other/dir/libshim.so"),)), "json"))
    assert moved["findings"][0]["fingerprint"] == F_EXPORT.fingerprint
    other = {F_EXPORT._replace(symbol="x").fingerprint, F_EXPORT._replace(rule="COLLISION").fingerprint,
             F_EXPORT._replace(artifact="lib/libother.so").fingerprint}
    assert len(other | {F_EXPORT.fingerprint}) == 4 and all(len(f) == 32 for f in other)


def test_a_fingerprint_is_the_hash_of_rule_file_name_and_symbol() -> None:
    import hashlib

    want = hashlib.sha256(b"UNPREFIXED_EXPORT\0libshim.so\0aoti_torch_get_dim").hexdigest()[:32]
    for artifact in ("libshim.so", "lib/libshim.so", "/a/b/c/libshim.so"):
        assert F_EXPORT._replace(artifact=artifact).fingerprint == want, artifact
    (listed,) = json.loads(render(sample_report((F_EXPORT._replace(artifact="libshim.so"),)), "json"))["findings"]
    assert listed["fingerprint"] == want


def test_json_of_no_findings_is_the_same_document() -> None:
    doc = json.loads(render(sample_report((), suppressed=(), unused_suppressions=(), skipped_rules=()), "json"))
    assert doc["findings"] == [] and doc["suppressed"] == [] and doc["summary"] == {"blocking": 0, "warning": 0}


def test_json_of_batches_lists_every_field_of_every_finding_one_a_line() -> None:
    out = streamed_output("json", BATCHES, sample_report(BATCH_FINDINGS))
    doc = json.loads(out)
    assert doc["findings"] == [
        {
            "rule": "COLLISION",
            "severity": "blocking",
            "artifact": SHIM,
            "symbol": "c10_a",
            "message": "libc10.so exports it too",
            "related": "libc10.so",
            "fingerprint": fingerprint("COLLISION", SHIM, "c10_a"),
        },
        {
            "rule": "COLLISION",
            "severity": "blocking",
            "artifact": SHIM,
            "symbol": "c10_b",
            "message": "libtorch_cpu.so exports it too",
            "related": None,
            "fingerprint": fingerprint("COLLISION", SHIM, "c10_b"),
        },
        {
            "rule": "COLLISION",
            "severity": "blocking",
            "artifact": SHIM,
            "symbol": "c10_c",
            "message": 'say "c"\\é\x01',
            "related": "libtorch_cpu.so",
            "fingerprint": fingerprint("COLLISION", SHIM, "c10_c"),
        },
        {
            "rule": "REEXPORTED_RUNTIME",
            "severity": "warning",
            "artifact": MODEL,
            "symbol": "_ZSt4cout",
            "message": "re-exports it",
            "related": None,
            "fingerprint": fingerprint("REEXPORTED_RUNTIME", MODEL, "_ZSt4cout"),
        },
        {
            "rule": "REEXPORTED_RUNTIME",
            "severity": "warning",
            "artifact": MODEL,
            "symbol": "_ZSt4cerr",
            "message": "and this",
            "related": None,
            "fingerprint": fingerprint("REEXPORTED_RUNTIME", MODEL, "_ZSt4cerr"),
        },
        {
            "rule": "NOT_A_SHIM",
            "severity": "warning",
            "artifact": MODEL,
            "symbol": "",
            "message": "exports no aoti_torch_* name",
            "related": None,
            "fingerprint": fingerprint("NOT_A_SHIM", MODEL, ""),
        },
    ]
    assert doc["summary"] == {"blocking": 3, "warning": 3}
    # One finding a line (a reader can follow the stream line by line).
    listed = [line.strip().rstrip(",") for line in out.splitlines() if line.startswith('    {"rule": ')]
    assert [json.loads(line) for line in listed] == doc["findings"]
    # JSON escapes the control character itself (\u0001); text makes it visible (\x01).
    assert out.isascii() and '"say \\"c\\"\\\\\\u00e9\\u0001"' in out
    assert "      say \"c\"\\é\\x01" in streamed_output("text", BATCHES, sample_report(BATCH_FINDINGS)).splitlines()


def test_render_json_report_dict_and_render_sarif_say_what_the_stream_says() -> None:
    # A name that is no UTF-8 (surrogateescape) becomes visible \xNN text; the rest stays.
    odd = Finding("COLLISION", BLOCKING, "lib/bad\udcff.so", "sym\udcfe", 'q"é\x01', "lib\udcfdc10.so")
    report = sample_report(
        (*BATCH_FINDINGS, odd), suppressed=(Suppressed(odd, "why\udcff"),), unused_suppressions=("x\udcff",)
    )
    doc = report_dict(report)
    assert doc == json.loads(render(report, "json"))
    assert render_json(report) == render(report, "json")
    assert render_sarif(report) == render(report, "sarif")
    shown = doc["findings"][-1]
    assert (shown["artifact"], shown["symbol"], shown["message"], shown["related"]) == (
        "lib/bad\\xff.so", "sym\\xfe", 'q"é\x01', "lib\\xfdc10.so")
    assert shown["fingerprint"] == fingerprint("COLLISION", "lib/bad\\xff.so", "sym\\xfe")
    assert doc["suppressed"] == [{"finding": shown, "reason": "why\\xff"}]
    assert doc["unused_suppressions"] == ["x\\xff"]
    assert doc["summary"] == {"blocking": 4, "warning": 3}
    (result,) = [r for r in json.loads(render_sarif(report))["runs"][0]["results"] if r["message"]["text"] == 'q"é\x01']
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "lib/bad%5Cxff.so"
    assert result["locations"][0]["logicalLocations"] == [{"name": "sym\\xfe", "kind": "function"}]


def test_the_schemas_name_every_rule() -> None:
    """A report holding any rule's finding is valid by the shipped schema: at b6b8817 the check
    schema's rule enum lacked LOAD_FAILURE, UNSEEN_DEPENDENCY, MANGLED_SHIM and
    BINDS_OUTSIDE_SHIMS, so a report with a finding of one failed validation."""
    import json
    from importlib import resources

    from aoti_shim.checks.rules.table import RULES
    from aoti_shim.checks.scan.judge import SCAN_RULES

    schemas = resources.files("aoti_shim.checks").joinpath("schemas")
    for name, rules in (("report-v1", RULES), ("scan-v1", SCAN_RULES)):
        schema = json.loads(schemas.joinpath(f"{name}.schema.json").read_text())
        named = schema["$defs"]["finding"]["properties"]["rule"]["enum"]
        assert sorted(named) == sorted(r.id for r in rules), name
