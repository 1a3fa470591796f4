"""GitHub Actions: ``::error`` annotations (capped) and a Markdown step summary."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from aoti_shim.checks.formats.escape import for_terminal
from aoti_shim.checks.formats.text import machine_line
from aoti_shim.checks.report.model import BLOCKING, Finding, Report

# GitHub shows only a few annotations per step; the summary carries the full table.
MAX_ANNOTATIONS = 50


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


# Markdown's inline syntax in names and messages: emphasis, code, links and images, raw HTML
# (an <img> tag in a symbol name would load in the step summary), table cells, strikethrough.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_<>&\[\]|~!])")
_BACKTICKS = re.compile(r"`+")


def md_text(text: str) -> str:
    """``text`` as literal Markdown table-cell text (every special character backslash-escaped)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def md_code(text: str) -> str:
    """``text`` as a code span in a table cell: a fence longer than any backtick run inside
    (a single backtick in a symbol name closed the span), padded when the text touches it."""
    if not text:
        return ""  # `` is no empty code span: two literal backticks
    fence = "`" * (max(map(len, _BACKTICKS.findall(text)), default=0) + 1)
    if text[:1] in ("`", " ") or text[-1:] in ("`", " "):
        text = f" {text} "  # CommonMark strips one space each side
    cell = text.replace("|", "\\|")  # a table splits cells at | even inside code
    return f"{fence}{cell}{fence}"


def table_row(cells: Sequence[str]) -> str:
    """A Markdown table row of cells already made safe (``md_text``, ``md_code``)."""
    return "| " + " | ".join(cells) + " |"


def findings_table(findings: Sequence[Finding], artifact: str, text: Callable[[str], str] = str) -> list[str]:
    """The summary's table of ``findings`` (none: no lines), its artifact column headed
    ``artifact``; ``text`` makes names visible where the caller has not (scan's report)."""
    if not findings:
        return []
    lines = [f"| severity | rule | {artifact} | symbol | detail |", "| --- | --- | --- | --- | --- |"]
    for f in findings:
        lines.append(
            table_row(
                [f.severity, f.rule, md_text(text(f.artifact)), md_code(text(f.symbol)), md_text(text(f.message))]
            )
        )
    return lines


def annotation_lines(findings: Sequence[Finding], tool: str, text: Callable[[str], str] = str) -> list[str]:
    """An ``::error`` or ``::warning`` line for each of the first MAX_ANNOTATIONS findings,
    then a notice titled ``tool`` that counts the rest; ``text`` as for :func:`findings_table`."""
    out = []
    for f in findings[:MAX_ANNOTATIONS]:
        kind = "error" if f.severity == BLOCKING else "warning"
        out.append(
            f"::{kind} file={_escape_property(text(f.artifact))},title={_escape_property(f.rule)}::"
            f"{_escape(text(f.symbol) + ': ' + text(f.message))}"
        )
    if len(findings) > MAX_ANNOTATIONS:
        out.append(f"::notice title={tool}::{len(findings) - MAX_ANNOTATIONS} more finding(s) in the step summary")
    return out


def markdown_summary(report: Report) -> str:
    report = for_terminal(report)
    lines = [
        "## aoti-shim check",
        "",
        f"Prefix: `{report.prefix or '-'}` ({report.prefix_origin}); "
        f"{len(report.blocking)} blocking, {len(report.warnings)} warning(s), {len(report.suppressed)} suppressed.",
        "",
    ]
    if any(rule == "COLLISION" for rule, _ in report.skipped_rules):
        # As the text verdict: the check that matters most did not run.
        lines += ["Verdict: no collision with libtorch judged (no --against: add --against torch or a snapshot).", ""]
    lines += [f"Against {md_code(s.item)}: {md_text(s.describe())}." for s in report.against]
    if report.against:
        lines.append("")
    # The text report's line, as there only when a fact of this machine decided a need.
    for line in machine_line(report.machine_facts, False):
        lines += [md_text(line[0].upper() + line[1:]) + ".", ""]
    lines += findings_table(report.findings, "artifact")
    return "\n".join(lines) + "\n"


def render_annotations(report: Report, *, with_summary: bool = True) -> str:
    """The annotation_lines, then the Markdown summary unless the caller writes it to
    ``$GITHUB_STEP_SUMMARY`` itself (the command does; rendering writes no file)."""
    summary_report, report = report, for_terminal(report)
    out = [f"::notice title=aoti-shim against::{_escape(f'{s.item}: {s.describe()}')}" for s in report.against]
    facts = machine_line(report.machine_facts, False)
    out += [f"::notice title=aoti-shim loader facts::{_escape(line)}" for line in facts]
    out += annotation_lines(report.findings, "aoti-shim")
    if with_summary:
        out.append(markdown_summary(summary_report))
    return "\n".join(out) + "\n"
