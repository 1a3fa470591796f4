"""GitHub Actions: ``::error`` annotations (capped) and a Markdown step summary."""

from __future__ import annotations

from aoti_shim.checks.formats.escape import for_terminal
from aoti_shim.checks.report import BLOCKING, Report

# GitHub shows only a few annotations per step; the summary carries the full table.
MAX_ANNOTATIONS = 50


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def markdown_summary(report: Report) -> str:
    report = for_terminal(report)
    lines = [
        "## aoti-shim check",
        "",
        f"Prefix: `{report.prefix or '-'}` ({report.prefix_origin}); "
        f"{len(report.blocking)} blocking, {len(report.warnings)} warning(s), {len(report.suppressed)} suppressed.",
        "",
    ]
    lines += [f"Against `{s.item}`: {s.describe()}." for s in report.against]
    if report.against:
        lines.append("")
    if report.findings:
        lines += ["| severity | rule | artifact | symbol | detail |", "| --- | --- | --- | --- | --- |"]
        for f in report.findings:
            cells = [f.severity, f.rule, f.artifact, f"`{f.symbol}`", f.message]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def render_annotations(report: Report, *, with_summary: bool = True) -> str:
    """The annotations, then the Markdown summary unless the caller writes it to
    ``$GITHUB_STEP_SUMMARY`` itself (the command does; rendering writes no file)."""
    summary_report, report = report, for_terminal(report)
    out = [f"::notice title=aoti-shim against::{_escape(f'{s.item}: {s.describe()}')}" for s in report.against]
    for f in report.findings[:MAX_ANNOTATIONS]:
        kind = "error" if f.severity == BLOCKING else "warning"
        out.append(f"::{kind} file={_escape_property(f.artifact)},title={_escape_property(f.rule)}::{_escape(f.symbol + ': ' + f.message)}")
    if len(report.findings) > MAX_ANNOTATIONS:
        out.append(f"::notice title=aoti-shim::{len(report.findings) - MAX_ANNOTATIONS} more finding(s) in the step summary")
    if with_summary:
        out.append(markdown_summary(summary_report))
    return "\n".join(out) + "\n"
