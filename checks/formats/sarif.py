"""SARIF 2.1.0 for code scanning: binaries as artifact locations, symbols as logical ones."""

from __future__ import annotations

import json

from aoti_shim import __version__
from aoti_shim.checks.report import BLOCKING, Report
from aoti_shim.checks.rules import RULES

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def render_sarif(report: Report) -> str:
    rules = [
        {
            "id": rule.id,
            "name": rule.id.title().replace("_", ""),
            "shortDescription": {"text": rule.doc},
            "defaultConfiguration": {"level": "error" if rule.severity == BLOCKING else "warning"},
        }
        for rule in RULES
    ]
    index = {rule.id: i for i, rule in enumerate(RULES)}
    results = [
        {
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": "error" if f.severity == BLOCKING else "warning",
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {"artifactLocation": {"uri": f.artifact}},
                    # A finding about a whole library (NOT_A_SHIM) names no symbol.
                    **({"logicalLocations": [{"name": f.symbol, "kind": "function"}]} if f.symbol else {}),
                }
            ],
            "partialFingerprints": {"aotiShimFinding/v1": f.fingerprint},
        }
        for f in report.findings
    ]
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "aoti-shim", "version": __version__, "rules": rules}},
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"
