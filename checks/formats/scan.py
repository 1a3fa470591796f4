"""``scan``'s report in check's five formats: text, JSON (schema in schemas/scan-v1.schema.json),
SARIF, GitHub annotations with a step summary, JUnit.

Every name comes from anyone's files (distribution names, paths, symbols), so each format
escapes as check's does: visible escapes where people or XML read (text, GitHub, JUnit),
valid UTF-8 for JSON and SARIF. A scan's findings are few (one per library pair, a batch per
colliding pair), so each format renders from the whole report.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from aoti_shim import __version__
from aoti_shim.checks.formats.escape import printable, valid_unicode
from aoti_shim.checks.formats.github import _md_code, _md_text, annotations, findings_table, table_row
from aoti_shim.checks.formats.junit import junit_document
from aoti_shim.checks.formats.sarif import SARIF_SCHEMA, artifact_uri, level, rule_descriptors
from aoti_shim.checks.report.model import BLOCKING, Finding, fingerprint
from aoti_shim.checks.scan.judge import NOBODY, SCAN_RULES, LibraryFacts
from aoti_shim.checks.scan.run import ScanReport
from aoti_shim.errors import UsageError

SCHEMA_VERSION = 1
Escape = Callable[[str], str]
_RED, _YELLOW, _GREEN, _DIM, _RESET = "\033[31m", "\033[33m", "\033[32m", "\033[2m", "\033[0m"
# Messages shown per (library, rule) group in the text.
SAMPLE = 5


def _prefix_text(prefix: str) -> str:
    return prefix if prefix else "(unprefixed)"


def _verdict(report: ScanReport) -> tuple[str, str]:
    summary = f"{report.blocking} blocking, {report.warnings} warning(s), {len(report.suppressed)} suppressed"
    if report.blocking:
        return f"FAILED: {summary}", _RED
    if report.warnings:
        return f"WARNINGS: {summary}", _YELLOW
    return f"OK: {summary}", _GREEN


def _counts(report: ScanReport) -> str:
    s = report.scanned
    libs = sum(len(d.libraries) for d in s.distributions)
    with_libs = sum(1 for d in s.distributions if d.libraries)
    return (
        f"{len(s.distributions)} distribution(s), {with_libs} with ELF libraries ({libs} libraries), "
        f"{len(s.unowned)} librar{'y' if len(s.unowned) == 1 else 'ies'} outside any distribution"
    )


# -- text -------------------------------------------------------------------------------------


def render_text(report: ScanReport, *, color: bool = False, verbose: bool = False) -> str:
    f = printable
    s = report.scanned

    def paint(text: str, code: str) -> str:
        return f"{code}{text}{_RESET}" if color else text

    lines = [f"environment: {f(s.description)}", f"scanned: {_counts(report)}"]
    if verbose:
        for folder in s.site_folders:
            lines.append(f"  site folder: {f(folder)}")
    for d in s.distributions:
        if not d.libraries and not verbose:
            continue
        editable = ", editable" if d.editable else ""
        lines.append(f"{f(d.label)} ({f(d.location)}{editable})" if verbose else f"{f(d.label)}{editable}")
        for lib in d.libraries:
            lines.append(f"  {f(lib.display)}: {lib.describe_roles()}")
    if s.unowned:
        lines.append(f"{NOBODY}:")
        for lib in s.unowned:
            lines.append(f"  {f(lib.display)}: {lib.describe_roles()}")
    if verbose:
        for name, kind in s.ignored:
            lines.append(f"  not a library ({kind}): {f(name)}")
        for name in s.programs:
            lines.append(f"  not a library (a program with no shim-ABI symbol): {f(name)}")
    rows = report.providers
    if rows:
        lines.append("shim providers:")
        table = [(f(r.distribution), f(r.library), f(_prefix_text(r.prefix)), str(r.names)) for r in rows]
        heads = ("distribution", "library", "prefix", "names")
        widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(heads)]
        for row in (heads, *table):
            lines.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    else:
        lines.append("shim providers: none")
    groups: dict[str, dict[str, list[Finding]]] = {}
    for x in report.findings:
        groups.setdefault(x.artifact, {}).setdefault(x.rule, []).append(x)
    for artifact, by_rule in groups.items():
        lines.append(f(artifact))
        for rule, found in by_rule.items():
            code = _RED if found[0].severity == BLOCKING else _YELLOW
            lead = f"  {found[0].severity.ljust(8)}  {rule}  "
            if len(found) == 1:
                lines.append(paint(lead + f(found[0].message), code))
                continue
            lines.append(paint(lead + f"{len(found)} findings, e.g.:", code))
            for x in found[:SAMPLE]:
                lines.append(paint(f"      {f(x.message)}", code))
            if len(found) > SAMPLE:
                lines.append(f"      ... and {len(found) - SAMPLE} more (--format json, sarif or junit lists them all)")
    for sup in report.suppressed[:20]:
        lines.append(f"suppressed: {sup.finding.rule} {f(sup.finding.symbol)} in {f(sup.finding.artifact)} ({f(sup.reason)})")
    if len(report.suppressed) > 20:
        lines.append(f"suppressed: ... and {len(report.suppressed) - 20} more")
    for desc in report.unused_suppressions:
        lines.append(f"unused suppression: {f(desc)}")
    verdict, code = _verdict(report)
    lines.append(paint(verdict, code))
    return "\n".join(lines) + "\n"


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
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "aoti-shim",
                        "version": __version__,
                        "rules": rule_descriptors(SCAN_RULES),
                    }
                },
                "results": results,
                "properties": {"environment": f(report.scanned.description)},
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


# -- GitHub -----------------------------------------------------------------------------------


def markdown_summary(report: ScanReport) -> str:
    f = printable
    verdict, _ = _verdict(report)
    lines = ["## aoti-shim scan", "", f"{_md_text(f(report.scanned.description))}: {_md_text(_counts(report))}. {verdict}.", ""]
    if report.providers:
        lines += ["| distribution | library | prefix | shim names |", "| --- | --- | --- | --- |"]
        for r in report.providers:
            lines.append(table_row([_md_text(f(r.distribution)), _md_text(f(r.library)), _md_code(f(_prefix_text(r.prefix))), str(r.names)]))
        lines.append("")
    lines += findings_table(report.findings, "library", printable)
    return "\n".join(lines) + "\n"


def render_annotations(report: ScanReport, *, with_summary: bool = True) -> str:
    out = annotations(report.findings, "aoti-shim scan", printable)
    if with_summary:
        out.append(markdown_summary(report))
    return "\n".join(out) + "\n"


# -- JUnit ------------------------------------------------------------------------------------


def render_junit(report: ScanReport) -> str:
    return junit_document(
        "aoti-shim scan",
        [("environment", printable(report.scanned.description))],
        [rule.id for rule in SCAN_RULES],
        [lib.display for lib in report.scanned.libraries],
        report.findings,
        classname="aoti-shim.scan.",
        text=printable,
    )


SCAN_FORMATS: dict[str, Callable[..., str]] = {
    "text": render_text,
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
