"""What each output format of ``check`` says (checks/formats/): the values of its fields
for one known report (rule ids, severities, files, symbols, counts, levels), not only
that the document is valid. Schemas and escaping have tests of their own
(test_hostile_names.py, test_finding_batches.py)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from aoti_shim import __version__
from aoti_shim.checks.formats import FORMATS, render, render_stream
from aoti_shim.checks.formats.github import MAX_ANNOTATIONS, render_annotations
from aoti_shim.checks.formats.json_report import render_json, report_dict
from aoti_shim.checks.formats.sarif import SARIF_SCHEMA, render_sarif
from aoti_shim.checks.formats.text import SAMPLE, SUPPRESSED_SHOWN
from aoti_shim.checks.report.model import (
    BLOCKING,
    WARNING,
    AgainstSource,
    CheckedArtifact,
    Finding,
    FindingBatch,
    Report,
    Suppressed,
    Tally,
    fingerprint,
    header_of,
)
from aoti_shim.checks.rules.table import RULES
from aoti_shim.errors import UsageError

SHIM, MODEL = "lib/libshim.so", "models/model.so"
F_EXPORT = Finding(
    "UNPREFIXED_EXPORT", BLOCKING, SHIM, "aoti_torch_get_dim", "exports aoti_torch_get_dim without the prefix"
)
F_COLLISION = Finding("COLLISION", BLOCKING, SHIM, "c10_thing", "libc10.so exports it too", "libc10.so")
F_RUNTIME = Finding("REEXPORTED_RUNTIME", WARNING, MODEL, "_ZSt4cout", "re-exports the C++ runtime")
F_HIDDEN = Finding("UNPREFIXED_IMPORT", BLOCKING, MODEL, "aoti_torch_empty", "imports it unprefixed")
AGAINST = AgainstSource("torch", "/t/torch/lib", "argument", "2.13.0", 3)


def _report(findings: tuple[Finding, ...] = (F_EXPORT, F_COLLISION, F_RUNTIME), **kw: object) -> Report:
    base: dict[str, object] = dict(
        findings=findings,
        prefix="myrt_",
        prefix_source="given",
        artifacts=(CheckedArtifact(SHIM, "shim"), CheckedArtifact(MODEL, "model")),
        references=("/t/torch/lib/libtorch_cpu.so",),
        suppressed=(Suppressed(F_HIDDEN, "known, issue 9"),),
        unused_suppressions=("MANGLED_SHIM in *.so",),
        skipped_rules=(("LOAD_FAILURE", "no reference library"),),
        against=(AGAINST,),
    )
    base.update(kw)
    return Report(**base)


def _rule_index(rule: str) -> int:
    return [r.id for r in RULES].index(rule)


# -- text --------------------------------------------------------------------------------


def test_text_says_each_group_and_the_verdict() -> None:
    assert render(_report()).splitlines() == [
        "prefix: myrt_ (given)",
        "checked: 1 shim library, 1 model(s) against 1 reference(s)",
        "against: torch: torch 2.13.0 at /t/torch/lib (from argument; 3 libraries)",
        "skipped: LOAD_FAILURE (no reference library)",
        "lib/libshim.so",
        "  blocking  UNPREFIXED_EXPORT  exports aoti_torch_get_dim without the prefix",
        "  blocking  COLLISION          libc10.so exports it too",
        "models/model.so",
        "  warning  REEXPORTED_RUNTIME  re-exports the C++ runtime",
        "suppressed: UNPREFIXED_IMPORT aoti_torch_empty in models/model.so (known, issue 9)",
        "unused suppression: MANGLED_SHIM in *.so",
        "FAILED: 2 blocking, 1 warning(s), 1 suppressed",
    ]


def test_text_verdicts_counts_and_colours() -> None:
    warnings_only = _report((F_RUNTIME,), suppressed=(), unused_suppressions=(), skipped_rules=(), against=())
    assert render(warnings_only).splitlines()[-1] == "WARNINGS: 0 blocking, 1 warning(s), 0 suppressed"
    clean = _report(
        (), suppressed=(), prefix=None, prefix_source="none", artifacts=(CheckedArtifact(SHIM, "shim"),) * 2
    )
    lines = render(clean).splitlines()
    assert lines[:2] == ["prefix: - (none found)", "checked: 2 shim libraries, 0 model(s) against 1 reference(s)"]
    assert lines[-1] == "OK: 0 blocking, 0 warning(s), 0 suppressed"
    red, yellow, green, dim, reset = "\033[31m", "\033[33m", "\033[32m", "\033[2m", "\033[0m"
    coloured = render(_report(), color=True).splitlines()
    assert coloured[3] == f"{dim}skipped: LOAD_FAILURE (no reference library){reset}"
    assert coloured[5] == f"{red}  blocking  UNPREFIXED_EXPORT  exports aoti_torch_get_dim without the prefix{reset}"
    assert coloured[8] == f"{yellow}  warning  REEXPORTED_RUNTIME  re-exports the C++ runtime{reset}"
    assert coloured[-1] == f"{red}FAILED: 2 blocking, 1 warning(s), 1 suppressed{reset}"
    assert render(warnings_only, color=True).splitlines()[-1].startswith(f"{yellow}WARNINGS: ")
    assert render(clean, color=True).splitlines()[-1] == f"{green}OK: 0 blocking, 0 warning(s), 0 suppressed{reset}"


def test_text_verbose_lists_artifacts_references_and_what_it_did_not_check() -> None:
    from aoti_shim.checks.formats.text import stream_text

    header = header_of(_report())
    header = type(header)(**{**header.__dict__, "ignored": (("w.whl!bin/tool", "executable"), ("b/main.o", "object"))})
    quiet: list[str] = []
    stream_text(header, [], Tally(), quiet.append)
    assert quiet[0].splitlines()[3] == (
        "not checked: 2 ELF file(s) in folders or wheels that are no shared library (programs, objects; -v lists them)"
    )
    loud: list[str] = []
    stream_text(header, [], Tally(), loud.append, verbose=True)
    assert loud[0].splitlines()[3:9] == [
        "  shim: lib/libshim.so",
        "  model: models/model.so",
        "  reference: /t/torch/lib/libtorch_cpu.so",
        "  not checked (executable, no shared library): w.whl!bin/tool",
        "  not checked (object, no shared library): b/main.o",
        "skipped: LOAD_FAILURE (no reference library)",
    ]


@pytest.mark.parametrize("count", [1, SAMPLE - 1, SAMPLE, SAMPLE + 1, 3 * SAMPLE])
def test_text_samples_a_group_and_counts_the_rest(count: int) -> None:
    findings = tuple(F_COLLISION._replace(symbol=f"s{i}", message=f"m{i}") for i in range(count))
    # In two batches, so the group is counted across them.
    batches = [
        FindingBatch.from_findings(findings[:2]),
        *(FindingBatch.from_findings(findings[2:]) for _ in [0] if count > 2),
    ]
    from aoti_shim.checks.formats.text import stream_text

    tally = Tally()
    for b in batches:
        tally.count(b)
    out: list[str] = []
    stream_text(header_of(_report(())), batches, tally, out.append)
    lines = out[0].splitlines()
    at = lines.index(SHIM)
    shown = min(count, SAMPLE)
    if count == 1:
        assert lines[at + 1] == "  blocking  COLLISION  m0"
        group = lines[at + 1 : at + 2]
    else:
        assert lines[at + 1] == f"  blocking  COLLISION  {count} findings, e.g.:"
        assert lines[at + 2 : at + 2 + shown] == [f"      m{i}" for i in range(shown)]
        more = lines[at + 2 + shown]
        if count > SAMPLE:
            assert more == f"      ... and {count - SAMPLE} more (--format json, sarif or junit lists them all)"
        else:
            assert not more.startswith("      ")
        group = lines[at + 1 : at + 2 + shown + (count > SAMPLE)]
    assert lines[at + 1 + len(group)] == "FAILED: " + f"{count} blocking, 0 warning(s), 0 suppressed"


@pytest.mark.parametrize("count", [SUPPRESSED_SHOWN - 1, SUPPRESSED_SHOWN, SUPPRESSED_SHOWN + 1, SUPPRESSED_SHOWN + 7])
def test_text_shows_a_bounded_list_of_suppressed_findings(count: int) -> None:
    suppressed = tuple(Suppressed(F_HIDDEN._replace(symbol=f"n{i}"), "why") for i in range(count))
    lines = render(_report((), suppressed=suppressed, unused_suppressions=())).splitlines()
    listed = [line for line in lines if line.startswith("suppressed: ")]
    shown = min(count, SUPPRESSED_SHOWN)
    assert listed[:shown] == [f"suppressed: UNPREFIXED_IMPORT n{i} in models/model.so (why)" for i in range(shown)]
    assert listed[shown:] == (
        [f"suppressed: ... and {count - SUPPRESSED_SHOWN} more"] if count > SUPPRESSED_SHOWN else []
    )
    assert lines[-1] == f"OK: 0 blocking, 0 warning(s), {count} suppressed"


# -- JSON --------------------------------------------------------------------------------


def _finding_dict(f: Finding) -> dict[str, object]:
    return {"rule": f.rule, "severity": f.severity, "artifact": f.artifact, "symbol": f.symbol,
            "message": f.message, "related": f.related, "fingerprint": f.fingerprint}


def test_json_says_every_field() -> None:
    doc = json.loads(render(_report(), "json"))
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
        "findings": [_finding_dict(f) for f in (F_EXPORT, F_COLLISION, F_RUNTIME)],
        "suppressed": [{"finding": _finding_dict(F_HIDDEN), "reason": "known, issue 9"}],
        "unused_suppressions": ["MANGLED_SHIM in *.so"],
        "skipped_rules": [{"rule": "LOAD_FAILURE", "reason": "no reference library"}],
        "summary": {"blocking": 2, "warning": 1},
    }
    # The fingerprint hashes the rule, the file's base name and the symbol: a folder does not change it.
    moved = json.loads(render(_report((F_EXPORT._replace(artifact="other/dir/libshim.so"),)), "json"))
    assert moved["findings"][0]["fingerprint"] == F_EXPORT.fingerprint
    other = {F_EXPORT._replace(symbol="x").fingerprint, F_EXPORT._replace(rule="COLLISION").fingerprint,
             F_EXPORT._replace(artifact="lib/libother.so").fingerprint}
    assert len(other | {F_EXPORT.fingerprint}) == 4 and all(len(f) == 32 for f in other)


def test_a_fingerprint_is_the_hash_of_rule_file_name_and_symbol() -> None:
    import hashlib

    want = hashlib.sha256(b"UNPREFIXED_EXPORT\0libshim.so\0aoti_torch_get_dim").hexdigest()[:32]
    for artifact in ("libshim.so", "lib/libshim.so", "/a/b/c/libshim.so"):
        assert F_EXPORT._replace(artifact=artifact).fingerprint == want, artifact
    (listed,) = json.loads(render(_report((F_EXPORT._replace(artifact="libshim.so"),)), "json"))["findings"]
    assert listed["fingerprint"] == want


def test_json_of_no_findings_is_the_same_document() -> None:
    doc = json.loads(render(_report((), suppressed=(), unused_suppressions=(), skipped_rules=()), "json"))
    assert doc["findings"] == [] and doc["suppressed"] == [] and doc["summary"] == {"blocking": 0, "warning": 0}


# -- SARIF -------------------------------------------------------------------------------


def test_sarif_says_rule_ids_levels_files_and_symbols() -> None:
    doc = json.loads(render(_report(), "sarif"))
    assert doc["$schema"] == SARIF_SCHEMA and doc["version"] == "2.1.0" and len(doc["runs"]) == 1
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("aoti-shim", __version__)
    assert [r["id"] for r in driver["rules"]] == [r.id for r in RULES]
    for described, rule in zip(driver["rules"], RULES):
        assert described["name"] == rule.id.title().replace("_", "")  # UNPREFIXED_EXPORT: UnprefixedExport
        assert described["shortDescription"] == {"text": rule.doc}
        assert described["defaultConfiguration"] == {"level": "error" if rule.severity == BLOCKING else "warning"}
    assert run["properties"] == {"against": [AGAINST.as_dict()]}
    assert run["results"] == [
        {
            "ruleId": f.rule,
            "ruleIndex": _rule_index(f.rule),
            "level": level,
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": f.artifact}},
                           "logicalLocations": [{"name": f.symbol, "kind": "function"}]}],
            "partialFingerprints": {"aotiShimFinding/v1": f.fingerprint},
        }
        for f, level in ((F_EXPORT, "error"), (F_COLLISION, "error"), (F_RUNTIME, "warning"))
    ]


def test_sarif_names_no_symbol_for_a_whole_library_and_encodes_file_names() -> None:
    whole = Finding("NOT_A_SHIM", WARNING, "odd dir/x#1:y?.so", "", "exports no aoti_torch_* name")
    run = json.loads(render(_report((whole,)), "sarif"))["runs"][0]
    (result,) = run["results"]
    assert result["locations"] == [{"physicalLocation": {"artifactLocation": {"uri": "odd%20dir/x%231%3Ay%3F.so"}}}]
    assert (result["ruleId"], result["level"], result["ruleIndex"]) == (
        "NOT_A_SHIM",
        "warning",
        _rule_index("NOT_A_SHIM"),
    )
    assert json.loads(render(_report(()), "sarif"))["runs"][0]["results"] == []


# -- JUnit -------------------------------------------------------------------------------


def test_junit_has_a_case_per_rule_and_library_failed_by_its_blocking_findings() -> None:
    two = _report((F_EXPORT, F_EXPORT._replace(symbol="aoti_torch_clone", message="and clone"), F_COLLISION, F_RUNTIME))
    root = ET.fromstring(render(two, "junit"))
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "aoti-shim check"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == (str(2 * len(RULES)), "2", "0")
    props = [(p.get("name"), p.get("value")) for p in suite.iter("property")]
    assert props == [("against torch", AGAINST.describe())]
    cases = {(c.get("classname"), c.get("name")): c for c in suite.findall("testcase")}
    assert set(cases) == {(f"aoti-shim.{r.id}", a) for r in RULES for a in (SHIM, MODEL)}
    export = cases[("aoti-shim.UNPREFIXED_EXPORT", SHIM)].find("failure")
    assert export is not None and export.attrib == {"message": "2 finding(s)", "type": "UNPREFIXED_EXPORT"}
    assert export.text == ("aoti_torch_get_dim: exports aoti_torch_get_dim without the prefix\n"
                           "aoti_torch_clone: and clone")
    collision = cases[("aoti-shim.COLLISION", SHIM)].find("failure")
    assert (
        collision is not None
        and collision.get("message") == "1 finding(s)"
        and collision.text == "c10_thing: libc10.so exports it too"
    )
    warned = cases[("aoti-shim.REEXPORTED_RUNTIME", MODEL)]
    assert warned.find("failure") is None
    assert warned.findtext("system-out") == "warning: _ZSt4cout: re-exports the C++ runtime"
    quiet = [c for key, c in cases.items() if key[0] not in ("aoti-shim.UNPREFIXED_EXPORT", "aoti-shim.COLLISION",
                                                             "aoti-shim.REEXPORTED_RUNTIME")]
    assert all(len(c) == 0 for c in quiet)
    assert cases[("aoti-shim.COLLISION", MODEL)].find("failure") is None  # same rule, other library


def test_junit_without_against_has_no_properties() -> None:
    root = ET.fromstring(render(_report((), against=()), "junit"))
    assert root.find("testsuite/properties") is None and root.find("testsuite").get("failures") == "0"


# -- GitHub ------------------------------------------------------------------------------


def test_github_annotations_say_kind_file_rule_and_symbol() -> None:
    lines = render_annotations(_report(), with_summary=False).splitlines()
    assert lines == [
        f"::notice title=aoti-shim against::torch: {AGAINST.describe()}",
        "::error file=lib/libshim.so,title=UNPREFIXED_EXPORT::aoti_torch_get_dim: exports aoti_torch_get_dim without "
        "the prefix",
        "::error file=lib/libshim.so,title=COLLISION::c10_thing: libc10.so exports it too",
        "::warning file=models/model.so,title=REEXPORTED_RUNTIME::_ZSt4cout: re-exports the C++ runtime",
    ]
    # A file name's ':' and ',' would end the property; '%', CR and LF the annotation.
    odd = F_EXPORT._replace(artifact="a:b,c%d.so", message="two\nlines\r")
    (line,) = render_annotations(_report((odd,), against=()), with_summary=False).splitlines()
    assert line == "::error file=a%3Ab%2Cc%25d.so,title=UNPREFIXED_EXPORT::aoti_torch_get_dim: two\\x0alines\\x0d"


@pytest.mark.parametrize("count", [MAX_ANNOTATIONS - 1, MAX_ANNOTATIONS, MAX_ANNOTATIONS + 1, MAX_ANNOTATIONS + 9])
def test_github_caps_the_annotations_and_says_how_many_more(count: int) -> None:
    findings = tuple(F_COLLISION._replace(symbol=f"s{i}") for i in range(count))
    lines = render_annotations(_report(findings, against=()), with_summary=False).splitlines()
    shown = min(count, MAX_ANNOTATIONS)
    assert [line.split("::")[2].split(":")[0] for line in lines[:shown]] == [f"s{i}" for i in range(shown)]
    tail = lines[shown:]
    assert tail == ([f"::notice title=aoti-shim::{count - MAX_ANNOTATIONS} more finding(s) in the step summary"]
                    if count > MAX_ANNOTATIONS else [])


def test_github_step_summary_tabulates_every_finding() -> None:
    out = render(_report(), "github")
    summary = out[out.index("## aoti-shim check") :]
    assert summary.splitlines() == [
        "## aoti-shim check",
        "",
        "Prefix: `myrt_` (given); 2 blocking, 1 warning(s), 1 suppressed.",
        "",
        "Against `torch`: torch 2.13.0 at /t/torch/lib (from argument; 3 libraries).",
        "",
        "| severity | rule | artifact | symbol | detail |",
        "| --- | --- | --- | --- | --- |",
        "| blocking | UNPREFIXED_EXPORT | lib/libshim.so | `aoti_torch_get_dim` | exports aoti\\_torch\\_get\\_dim "
        "without the prefix |",
        "| blocking | COLLISION | lib/libshim.so | `c10_thing` | libc10.so exports it too |",
        "| warning | REEXPORTED_RUNTIME | models/model.so | `_ZSt4cout` | re-exports the C++ runtime |",
        "",  # the summary's own newline, then the annotations' last one
    ]
    empty = render(_report((), prefix=None, prefix_source="none", against=()), "github").splitlines()
    assert empty == [
        "## aoti-shim check",
        "",
        "Prefix: `-` (none found); 0 blocking, 0 warning(s), 1 suppressed.",
        "",
        "",
    ]


# -- every format ------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_streamed_rendering_equals_the_whole_report_rendering(fmt: str) -> None:
    report = _report()
    tally = Tally.of(report)
    parts: list[str] = []
    render_stream(fmt, header_of(report), map(FindingBatch.of, report.findings), tally, parts.append)
    assert "".join(parts) == render(report, fmt)


def test_an_unknown_format_names_the_choices() -> None:
    with pytest.raises(UsageError, match=r"unknown format 'xml'; choose from text, json, sarif, github, junit"):
        render(_report(), "xml")


# -- batches of several findings, as the command streams them ----------------------------

# A rule's findings about one library arrive as columns (FindingBatch); render() above goes
# one finding per batch. Several per batch, a related column that mixes names and None, and
# texts that need JSON escaping.
_B_COLLISION = FindingBatch(
    "COLLISION",
    BLOCKING,
    SHIM,
    ["c10_a", "c10_b", "c10_c"],
    ["libc10.so exports it too", "libtorch_cpu.so exports it too", 'say "c"\\é\x01'],
    ["libc10.so", None, "libtorch_cpu.so"],
)
_B_RUNTIME = FindingBatch(
    "REEXPORTED_RUNTIME", WARNING, MODEL, ["_ZSt4cout", "_ZSt4cerr"], ["re-exports it", "and this"], [None, None]
)
_B_WHOLE = FindingBatch("NOT_A_SHIM", WARNING, MODEL, [""], ["exports no aoti_torch_* name"], [None])
_BATCHES = (_B_COLLISION, _B_RUNTIME, _B_WHOLE)
_FINDINGS = (
    Finding("COLLISION", BLOCKING, SHIM, "c10_a", "libc10.so exports it too", "libc10.so"),
    Finding("COLLISION", BLOCKING, SHIM, "c10_b", "libtorch_cpu.so exports it too", None),
    Finding("COLLISION", BLOCKING, SHIM, "c10_c", 'say "c"\\é\x01', "libtorch_cpu.so"),
    Finding("REEXPORTED_RUNTIME", WARNING, MODEL, "_ZSt4cout", "re-exports it"),
    Finding("REEXPORTED_RUNTIME", WARNING, MODEL, "_ZSt4cerr", "and this"),
    Finding("NOT_A_SHIM", WARNING, MODEL, "", "exports no aoti_torch_* name"),
)


def _streamed(fmt: str, batches: tuple[FindingBatch, ...], report: Report, **kw: bool) -> str:
    tally = Tally()
    for batch in batches:
        tally.count(batch)
    tally.suppressed, tally.unused_suppressions = list(report.suppressed), report.unused_suppressions
    parts: list[str] = []
    render_stream(fmt, header_of(report), iter(batches), tally, parts.append, **kw)
    return "".join(parts)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_batches_of_several_findings_say_what_one_finding_a_batch_says(fmt: str) -> None:
    report = _report(_FINDINGS)
    assert _streamed(fmt, _BATCHES, report) == render(report, fmt)
    assert _streamed(fmt, _BATCHES, report, color=True, verbose=True) == render(report, fmt, color=True, verbose=True)
    nothing = _report(())
    assert _streamed(fmt, (), nothing) == render(nothing, fmt)


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_json_and_sarif_pass_over_an_empty_batch(fmt: str) -> None:
    # No rule yields one, but the writers take care not to write an empty line or a
    # stray comma for it.
    empty = FindingBatch("UNPREFIXED_EXPORT", BLOCKING, SHIM, [], [], [])
    report = _report(_FINDINGS)
    assert _streamed(fmt, (empty, *_BATCHES[:1], empty, *_BATCHES[1:], empty), report) == render(report, fmt)
    nothing = _report(())
    assert _streamed(fmt, (empty, empty), nothing) == render(nothing, fmt)


def test_json_of_batches_lists_every_field_of_every_finding_one_a_line() -> None:
    out = _streamed("json", _BATCHES, _report(_FINDINGS))
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
    assert "      say \"c\"\\é\\x01" in _streamed("text", _BATCHES, _report(_FINDINGS)).splitlines()


def test_sarif_of_batches_gives_each_finding_its_result() -> None:
    run = json.loads(_streamed("sarif", _BATCHES, _report(_FINDINGS)))["runs"][0]

    def where(f: Finding) -> dict[str, object]:
        at: dict[str, object] = {"physicalLocation": {"artifactLocation": {"uri": f.artifact}}}
        if f.symbol:
            at["logicalLocations"] = [{"name": f.symbol, "kind": "function"}]
        return at

    assert run["results"] == [
        {
            "ruleId": f.rule,
            "ruleIndex": _rule_index(f.rule),
            "level": {"blocking": "error", "warning": "warning"}[f.severity],
            "message": {"text": f.message},
            "locations": [where(f)],
            "partialFingerprints": {"aotiShimFinding/v1": fingerprint(f.rule, f.artifact, f.symbol)},
        }
        for f in _FINDINGS
    ]
    assert run["properties"] == {"against": [AGAINST.as_dict()]}


# -- the whole-report JSON and SARIF functions -------------------------------------------


def test_render_json_report_dict_and_render_sarif_say_what_the_stream_says() -> None:
    # A name that is no UTF-8 (surrogateescape) becomes visible \xNN text; the rest stays.
    odd = Finding("COLLISION", BLOCKING, "lib/bad\udcff.so", "sym\udcfe", 'q"é\x01', "lib\udcfdc10.so")
    report = _report((*_FINDINGS, odd), suppressed=(Suppressed(odd, "why\udcff"),), unused_suppressions=("x\udcff",))
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


# -- words each format shows -------------------------------------------------------------


def test_a_torch_of_no_known_version_and_one_library_in_words() -> None:
    found = AgainstSource("snap", "/s/torch.json", "search path", None, 1)
    assert found.describe() == "torch version unknown at /s/torch.json (from search path; 1 library)"
    report = _report((), against=(found,))
    assert (
        "against: snap: torch version unknown at /s/torch.json (from search path; 1 library)"
        in render(report).splitlines()
    )
    assert render(report, "github").splitlines()[0] == (
        "::notice title=aoti-shim against::snap: torch version unknown at /s/torch.json (from search path; 1 library)"
    )
    (prop,) = ET.fromstring(render(report, "junit")).iter("property")
    assert prop.attrib == {"name": "against snap", "value": found.describe()}


@pytest.mark.parametrize(
    ("inferred_from", "words"), [("models", "the models' imports"), ("shims", "the shims' exports")]
)
def test_every_format_that_names_the_prefix_says_where_it_came_from(inferred_from: str, words: str) -> None:
    report = _report((), prefix_source="inferred", prefix_inferred_from=inferred_from)
    assert render(report).splitlines()[0] == f"prefix: myrt_ (inferred from {words})"
    summary = render(report, "github").splitlines()
    assert f"Prefix: `myrt_` (inferred from {words}); 0 blocking, 0 warning(s), 1 suppressed." in summary
    streamed: list[str] = []
    render_stream("github", header_of(report), iter(()), Tally.of(report), streamed.append)
    assert "".join(streamed) == render(report, "github")


def test_text_paints_each_line_of_a_group_and_not_the_count_of_the_rest() -> None:
    red, yellow, reset = "\033[31m", "\033[33m", "\033[0m"
    many = tuple(F_COLLISION._replace(symbol=f"s{i}", message=f"m{i}") for i in range(SAMPLE + 2))
    warned = tuple(F_RUNTIME._replace(symbol=f"w{i}", message=f"w{i}") for i in range(2))
    lines = render(_report((*many, *warned), suppressed=(), unused_suppressions=()), color=True).splitlines()
    at = lines.index(SHIM)
    assert lines[at + 1 : at + 2 + SAMPLE + 1] == [
        f"{red}  blocking  COLLISION  {SAMPLE + 2} findings, e.g.:{reset}",
        *(f"{red}      m{i}{reset}" for i in range(SAMPLE)),
        "      ... and 2 more (--format json, sarif or junit lists them all)",
    ]
    at = lines.index(MODEL)
    assert lines[at + 1 : at + 4] == [
        f"{yellow}  warning  REEXPORTED_RUNTIME  2 findings, e.g.:{reset}",
        f"{yellow}      w0{reset}",
        f"{yellow}      w1{reset}",
    ]


def test_render_verbose_lists_what_was_checked() -> None:
    lines = render(_report(()), verbose=True).splitlines()
    assert lines[3:6] == [
        "  shim: lib/libshim.so",
        "  model: models/model.so",
        "  reference: /t/torch/lib/libtorch_cpu.so",
    ]
    assert "  shim: lib/libshim.so" not in render(_report(()))


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


@pytest.mark.parametrize(
    ("symbol", "cell"),
    [
        ("plain", "`plain`"),
        ("a`b", "``a`b``"),  # a fence longer than the longest backtick run inside
        ("x``y`z", "```x``y`z```"),
        ("`lead", "`` `lead ``"),  # padded: CommonMark strips one space each side
        ("trail`", "`` trail` ``"),
        (" sp", "`  sp `"),
        ("sp ", "` sp  `"),
        ("a|b", "`a\\|b`"),  # a table splits cells at | even inside code
        ("", ""),  # `` would be two literal backticks
    ],
)
def test_github_summary_shows_a_symbol_as_a_code_span_that_holds_it(symbol: str, cell: str) -> None:
    lines = render(_report((F_EXPORT._replace(symbol=symbol, message="m"),), against=()), "github").splitlines()
    assert lines[-2] == f"| blocking | UNPREFIXED_EXPORT | lib/libshim.so | {cell} | m |"


def test_github_annotation_escapes_what_ends_a_property_or_the_line() -> None:
    # Names reach the annotation made visible (\xNN), so only %, : and , are left to encode.
    odd = F_EXPORT._replace(artifact="d%0A/a:b,c.so", symbol="s%0D", message="50% of x:y,z")
    (line,) = render_annotations(_report((odd,), against=()), with_summary=False).splitlines()
    assert line == "::error file=d%250A/a%3Ab%2Cc.so,title=UNPREFIXED_EXPORT::s%250D: 50%25 of x:y,z"
    against = AgainstSource("t%1", "/p%2", "argument", "2.13", 2)
    assert render_annotations(_report((), against=(against,)), with_summary=False).splitlines() == [
        "::notice title=aoti-shim against::t%251: torch 2.13 at /p%252 (from argument; 2 libraries)"]


def test_a_message_is_escaped_when_it_is_the_batch_s_only_unsafe_text() -> None:
    # LOAD_FAILURE names no symbol and no related library, yet its message quotes the
    # loader's reason, which can hold a dependency's hostile file name.
    failure = FindingBatch(
        "LOAD_FAILURE", BLOCKING, SHIM, [""], ["cannot be loaded: libx\x1b[2J.so: no such file"], [None]
    )
    report = _report(tuple(failure.findings()), suppressed=(), unused_suppressions=(), skipped_rules=(), against=())
    for fmt, shown in (("text", "  blocking  LOAD_FAILURE  cannot be loaded: libx\\x1b[2J.so: no such file"),
                       ("json", '"message": "cannot be loaded: libx\\u001b[2J.so: no such file"')):
        out = _streamed(fmt, (failure,), report)
        assert shown in out and "\x1b" not in out, fmt


def test_text_of_models_only_and_of_a_library_with_both_severities() -> None:
    only_models = _report((), artifacts=(CheckedArtifact(MODEL, "model"),) * 2)
    assert render(only_models).splitlines()[1] == "checked: 0 shim libraries, 2 model(s) against 1 reference(s)"
    both = _report((F_EXPORT, F_RUNTIME._replace(artifact=SHIM)), suppressed=(), unused_suppressions=())
    at = render(both).splitlines().index(SHIM)
    # One column of severities, one of rules, per library.
    assert render(both).splitlines()[at + 1 : at + 3] == [
        "  blocking  UNPREFIXED_EXPORT   exports aoti_torch_get_dim without the prefix",
        "  warning   REEXPORTED_RUNTIME  re-exports the C++ runtime",
    ]


def test_junit_properties_and_the_output_of_several_warnings() -> None:
    warned = (F_RUNTIME, F_RUNTIME._replace(symbol="_ZSt4cerr", message="and cerr"))
    root = ET.fromstring(render(_report(warned), "junit"))
    assert [(p.get("name"), p.get("value")) for p in root.iterfind("testsuite/properties/property")] == [
        ("against torch", AGAINST.describe())]
    case = root.find("testsuite/testcase[@classname='aoti-shim.REEXPORTED_RUNTIME'][@name='models/model.so']")
    assert case is not None and case.find("failure") is None
    assert case.findtext("system-out") == "warning: _ZSt4cout: re-exports the C++ runtime\nwarning: _ZSt4cerr: and cerr"


def test_a_fingerprint_hashes_undecodable_bytes_as_they_were() -> None:
    import hashlib

    # scan's JSON fingerprints its raw findings: a name that is no UTF-8 hashes the bytes
    # Python's surrogateescape stands for, encoded as it holds them (surrogatepass).
    want = hashlib.sha256(b"HIJACK\0lib\xed\xb3\xbex.so\0sym\xed\xb3\xbf").hexdigest()[:32]
    assert fingerprint("HIJACK", "d/lib\udcfex.so", "sym\udcff") == want
    assert Finding("HIJACK", BLOCKING, "d/lib\udcfex.so", "sym\udcff", "m").fingerprint == want


def test_github_summary_without_against_says_no_collision_was_judged() -> None:
    # The text verdict never reads a plain OK without --against; the step summary of
    # --format github said "0 blocking, 0 warning(s), 0 suppressed." and nothing more.
    from aoti_shim.checks.formats.github import markdown_summary

    skipped = (("COLLISION", "no --against reference given"),)
    text = markdown_summary(_report((), against=(), references=(), skipped_rules=skipped))
    assert "no collision with libtorch judged (no --against: add --against torch or a snapshot)" in text, text
    assert "judged" not in markdown_summary(_report(()))
