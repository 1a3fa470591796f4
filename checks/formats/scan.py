"""``scan``'s report in check's five formats: text, JSON (schema in schemas/scan-v1.schema.json),
SARIF, GitHub annotations with a step summary, JUnit.

Every name comes from anyone's files (distribution names, paths, symbols), so each format
escapes as check's does: visible escapes where people or XML read (text, GitHub, JUnit),
valid UTF-8 for JSON and SARIF. A scan's findings are few (one per library pair, a batch per
colliding pair), so each format renders from the whole report.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aoti_shim import __version__
from aoti_shim.checks.formats.escape import printable, valid_unicode
from aoti_shim.checks.formats.scan_text import counts, prefix_text, render_text, verdict
from aoti_shim.checks.report.model import Finding, fingerprint
from aoti_shim.checks.scan.judge import SCAN_RULES, LibraryFacts
from aoti_shim.checks.scan.run import ScanReport
from aoti_shim.errors import UsageError

SCHEMA_VERSION = 1
Escape = Callable[[str], str]


def _fingerprint(x: Finding) -> str:
    """A scan finding's id: its related library too (one HIJACK finding per consumer)."""
    return fingerprint(x.rule, x.artifact, x.symbol, x.related)


# -- JSON -------------------------------------------------------------------------------------


def _finding_dict(x: Finding, f: Escape) -> dict[str, Any]:
    return {
        "rule": x.rule,
        "severity": x.severity,
        "artifact": f(x.artifact),
        "symbol": f(x.symbol),
        "message": f(x.message),
        "related": None if x.related is None else f(x.related),
        "fingerprint": _fingerprint(x),
    }


def _library_dict(lib: LibraryFacts, f: Escape) -> dict[str, Any]:
    return {
        "path": f(lib.display),
        "kind": lib.kind,
        "roles": list(lib.roles),
        "export_prefixes": sorted(f(p) for p in lib.export_prefixes),
        "shim_exports": len(lib.shim_exports),
        "shim_imports": len(lib.shim_imports),
        "unprefixed_shim_imports": len(lib.unprefixed_imports),
        "runtime_exports": len(lib.runtime_exports),
        "cuda_runtime_exports": len(lib.cuda_exports),
        "symbols": lib.symbols,
    }


def report_dict(report: ScanReport) -> dict[str, Any]:
    f = valid_unicode
    s = report.scanned
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "aoti-shim", "version": __version__, "command": "scan"},
        "environment": {"description": f(s.description), "site_folders": [f(p) for p in s.site_folders]},
        "distributions": [
            {
                "name": f(d.name),
                "version": f(d.version),
                "location": f(d.location),
                "editable": d.editable,
                "source": d.source,
                "libraries": [_library_dict(lib, f) for lib in d.libraries],
            }
            for d in s.distributions
        ],
        "unowned": [_library_dict(lib, f) for lib in s.unowned],
        "ignored": [{"path": f(name), "kind": kind} for name, kind in s.ignored]
        + [{"path": f(name), "kind": "program"} for name in s.programs],
        "providers": [
            {"distribution": f(r.distribution), "library": f(r.library), "prefix": f(r.prefix), "names": r.names}
            for r in report.providers
        ],
        "findings": [_finding_dict(x, f) for x in report.findings],
        "suppressed": [{"finding": _finding_dict(x.finding, f), "reason": f(x.reason)} for x in report.suppressed],
        "unused_suppressions": [f(u) for u in report.unused_suppressions],
        "summary": {"blocking": report.blocking, "warning": report.warnings},
    }


def render_json(report: ScanReport) -> str:
    return json.dumps(report_dict(report), indent=2) + "\n"


# -- SARIF ------------------------------------------------------------------------------------


def render_sarif(report: ScanReport) -> str:
    from aoti_shim.checks.formats.sarif import artifact_uri, level, rule_descriptors, sarif_document

    f = valid_unicode
    index = {rule.id: i for i, rule in enumerate(SCAN_RULES)}
    results = []
    for x in report.findings:
        result: dict[str, Any] = {
            "ruleId": x.rule,
            "ruleIndex": index[x.rule],
            "level": level(x.severity),
            "message": {"text": f(x.message)},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": artifact_uri(f(x.artifact))}}}],
            "partialFingerprints": {"aotiShimFinding/v1": _fingerprint(x)},
        }
        if x.symbol:
            result["locations"][0]["logicalLocations"] = [{"name": f(x.symbol), "kind": "function"}]
        results.append(result)
    doc = sarif_document(rule_descriptors(SCAN_RULES), results, {"environment": f(report.scanned.description)})
    return json.dumps(doc, indent=2) + "\n"


# -- GitHub -----------------------------------------------------------------------------------


def markdown_summary(report: ScanReport) -> str:
    from aoti_shim.checks.formats.github import findings_table, md_code, md_text, table_row

    f = printable
    verdict_line, _ = verdict(report)
    lines = [
        "## aoti-shim scan",
        "",
        f"{md_text(f(report.scanned.description))}: {md_text(counts(report))}. {verdict_line}.",
        "",
    ]
    if report.providers:
        lines += ["| distribution | library | prefix | shim names |", "| --- | --- | --- | --- |"]
        for r in report.providers:
            lines.append(
                table_row(
                    [md_text(f(r.distribution)), md_text(f(r.library)), md_code(f(prefix_text(r.prefix))), str(r.names)]
                )
            )
        lines.append("")
    lines += findings_table(report.findings, "library", printable)
    return "\n".join(lines) + "\n"


def render_annotations(report: ScanReport, *, with_summary: bool = True) -> str:
    from aoti_shim.checks.formats.github import annotation_lines

    out = annotation_lines(report.findings, "aoti-shim scan", printable)
    if with_summary:
        out.append(markdown_summary(report))
    return "\n".join(out) + "\n"


# -- JUnit ------------------------------------------------------------------------------------


def render_junit(report: ScanReport) -> str:
    from aoti_shim.checks.formats.junit import junit_document

    return junit_document(
        "aoti-shim scan",
        [("environment", printable(report.scanned.description))],
        [rule.id for rule in SCAN_RULES],
        # Mach-O and PE libraries too: HIJACK and DLL_COLLISION name them.
        [lib.display for lib in report.scanned.libraries] + [lib.display for lib in report.scanned.native],
        report.findings,
        classname="aoti-shim.scan.",
        text=printable,
    )


SCAN_FORMATS: dict[str, Callable[..., str]] = {
    "text": render_text,  # checks/formats/scan_text.py
    "json": lambda r, **_: render_json(r),
    "sarif": lambda r, **_: render_sarif(r),
    "github": lambda r, **_: render_annotations(r),
    "junit": lambda r, **_: render_junit(r),
}


def render_scan(report: ScanReport, fmt: str = "text", *, color: bool = False, verbose: bool = False) -> str:
    try:
        renderer = SCAN_FORMATS[fmt]
    except KeyError:
        raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(SCAN_FORMATS)}") from None
    return renderer(report, color=color, verbose=verbose)
