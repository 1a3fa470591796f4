"""checks/formats/sarif.py: rule ids, levels, files and symbols of the SARIF results."""

from __future__ import annotations

import json

from aoti_shim import __version__
from aoti_shim.checks.formats import render
from aoti_shim.checks.formats.sarif import SARIF_SCHEMA
from aoti_shim.checks.report.model import (
    BLOCKING,
    WARNING,
    Finding,
    fingerprint,
)
from aoti_shim.checks.rules.table import ELF_RULES as RULES  # an ELF report lists the ELF rules
from formats_support import (
    AGAINST,
    BATCH_FINDINGS,
    BATCHES,
    F_COLLISION,
    F_EXPORT,
    F_RUNTIME,
    rule_index,
    sample_report,
    streamed_output,
)


def test_sarif_says_rule_ids_levels_files_and_symbols() -> None:
    doc = json.loads(render(sample_report(), "sarif"))
    assert doc["$schema"] == SARIF_SCHEMA and doc["version"] == "2.1.0" and len(doc["runs"]) == 1
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("aoti-shim", __version__)
    assert [r["id"] for r in driver["rules"]] == [r.id for r in RULES]
    for described, rule in zip(driver["rules"], RULES):
        assert described["name"] == rule.id.title().replace("_", "")  # UNPREFIXED_EXPORT: UnprefixedExport
        assert described["shortDescription"] == {"text": rule.doc}
        assert described["defaultConfiguration"] == {"level": "error" if rule.severity == BLOCKING else "warning"}
    assert run["properties"] == {"against": [AGAINST.as_dict()], "machineFacts": []}
    assert run["results"] == [
        {
            "ruleId": f.rule,
            "ruleIndex": rule_index(f.rule),
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
    run = json.loads(render(sample_report((whole,)), "sarif"))["runs"][0]
    (result,) = run["results"]
    assert result["locations"] == [{"physicalLocation": {"artifactLocation": {"uri": "odd%20dir/x%231%3Ay%3F.so"}}}]
    assert (result["ruleId"], result["level"], result["ruleIndex"]) == (
        "NOT_A_SHIM",
        "warning",
        rule_index("NOT_A_SHIM"),
    )
    assert json.loads(render(sample_report(()), "sarif"))["runs"][0]["results"] == []


def test_sarif_of_batches_gives_each_finding_its_result() -> None:
    run = json.loads(streamed_output("sarif", BATCHES, sample_report(BATCH_FINDINGS)))["runs"][0]

    def where(f: Finding) -> dict[str, object]:
        at: dict[str, object] = {"physicalLocation": {"artifactLocation": {"uri": f.artifact}}}
        if f.symbol:
            at["logicalLocations"] = [{"name": f.symbol, "kind": "function"}]
        return at

    assert run["results"] == [
        {
            "ruleId": f.rule,
            "ruleIndex": rule_index(f.rule),
            "level": {"blocking": "error", "warning": "warning"}[f.severity],
            "message": {"text": f.message},
            "locations": [where(f)],
            "partialFingerprints": {"aotiShimFinding/v1": fingerprint(f.rule, f.artifact, f.symbol)},
        }
        for f in BATCH_FINDINGS
    ]
    assert run["properties"] == {"against": [AGAINST.as_dict()], "machineFacts": []}
