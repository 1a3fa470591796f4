"""Versioned JSON; the schema ships as aoti_shim/checks/schemas/report-v1.schema.json."""

from __future__ import annotations

import json
from typing import Any

from aoti_shim import __version__
from aoti_shim.checks.report import Finding, Report

SCHEMA_VERSION = 1


def _finding(f: Finding) -> dict[str, Any]:
    return {
        "rule": f.rule,
        "severity": f.severity,
        "artifact": f.artifact,
        "symbol": f.symbol,
        "message": f.message,
        "related": f.related,
        "fingerprint": f.fingerprint,
    }


def report_dict(report: Report) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "aoti-shim", "version": __version__},
        "prefix": report.prefix,
        "prefix_source": report.prefix_source,
        "artifacts": [{"path": a.display, "role": a.role} for a in report.artifacts],
        "references": list(report.references),
        "findings": [_finding(f) for f in report.findings],
        "suppressed": [{"finding": _finding(s.finding), "reason": s.reason} for s in report.suppressed],
        "unused_suppressions": list(report.unused_suppressions),
        "skipped_rules": [{"rule": r, "reason": why} for r, why in report.skipped_rules],
        "summary": {"blocking": len(report.blocking), "warning": len(report.warnings)},
    }


def render_json(report: Report) -> str:
    return json.dumps(report_dict(report), indent=2) + "\n"
