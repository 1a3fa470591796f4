"""A table for people; colour only when asked (the CLI asks on a terminal)."""

from __future__ import annotations

from aoti_shim.checks.report import BLOCKING, Report

_RED, _YELLOW, _GREEN, _DIM, _RESET = "\033[31m", "\033[33m", "\033[32m", "\033[2m", "\033[0m"


def _paint(text: str, code: str, color: bool) -> str:
    return f"{code}{text}{_RESET}" if color else text


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def render_text(report: Report, *, color: bool = False) -> str:
    lines: list[str] = []
    lines.append(f"prefix: {report.prefix or '-'} ({report.prefix_origin})")
    roles = {"shim": 0, "model": 0}
    for art in report.artifacts:
        roles[art.role] = roles.get(art.role, 0) + 1
    lines.append(
        f"checked: {roles['shim']} shim librar{'y' if roles['shim'] == 1 else 'ies'}, "
        f"{roles['model']} model(s) against {len(report.references)} reference(s)"
    )
    for rule, why in report.skipped_rules:
        lines.append(_paint(f"skipped: {rule} ({why})", _DIM, color))
    by_artifact: dict[str, list] = {}
    for f in report.findings:
        by_artifact.setdefault(f.artifact, []).append(f)
    for artifact, findings in by_artifact.items():
        lines.append(artifact)
        rows = [(f.severity, f.rule, f.message) for f in findings]
        for finding, line in zip(findings, _table(rows)):
            lines.append("  " + _paint(line, _RED if finding.severity == BLOCKING else _YELLOW, color))
    for s in report.suppressed:
        lines.append(f"suppressed: {s.finding.rule} {s.finding.symbol} in {s.finding.artifact} ({s.reason})")
    for desc in report.unused_suppressions:
        lines.append(f"unused suppression: {desc}")
    nb, nw = len(report.blocking), len(report.warnings)
    summary = f"{nb} blocking, {nw} warning(s), {len(report.suppressed)} suppressed"
    if nb:
        lines.append(_paint(f"FAILED: {summary}", _RED, color))
    elif nw:
        # Not "OK": with --fail-on any these warnings fail the run.
        lines.append(_paint(f"WARNINGS: {summary}", _YELLOW, color))
    else:
        lines.append(_paint(f"OK: {summary}", _GREEN, color))
    return "\n".join(lines) + "\n"
