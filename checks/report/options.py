"""The options of a command that writes a findings report (check, scan), and its GitHub step summary.

Shared by both commands' parsers without the checker behind them: ``--help`` and a parse
error import this, not the rules and the ELF reader (issue 35 §4).
"""

from __future__ import annotations

import argparse

from aoti_shim.arguments import path_text
from aoti_shim.checks.report.model import FAIL_ON_CHOICES
from aoti_shim.guard import append_text

# One sentence per choice, shown by --help (a test keeps them in step with the choices).
FORMAT_HELP = {
    "text": "a table for people, coloured per --color",
    "json": "versioned JSON (schema in aoti_shim/checks/schemas/)",
    "sarif": "SARIF 2.1.0, for code-scanning uploads",
    "github": "GitHub Actions annotations, plus a table in $GITHUB_STEP_SUMMARY when it is set",
    "junit": "JUnit XML, one test case per rule and checked file, for CI test reporters",
}
FAIL_ON_HELP = {
    "blocking": "exit 8 on blocking findings; warnings are reported only",
    "any": "warnings fail too (exit bit 4)",
    "never": "always exit 0 once the check ran (a report only)",
}
COLOR_HELP = {
    "auto": "colour on a terminal or with FORCE_COLOR set, never with NO_COLOR set",
    "always": "colour even into a file or pipe",
    "never": "no colour",
}


def _choices_help(described: dict[str, str], default: str) -> str:
    return "; ".join(f"{name}: {what}" for name, what in described.items()) + f" (default: {default})"


def add_report_options(p: argparse.ArgumentParser, format_help: dict[str, str]) -> None:
    """The options of a command that writes a findings report (check, scan): its format
    (``format_help`` names the choices), file, suppressions, failing level and colour."""
    p.add_argument("--format", default="text", choices=tuple(format_help), help=_choices_help(format_help, "text"))
    p.add_argument(
        "--output", "-o", type=path_text, metavar="FILE", help="write the report here instead of standard output"
    )
    p.add_argument(
        "--suppressions",
        type=path_text,
        metavar="TOML",
        help="a file of [[suppress]] tables (rule, symbol, artifact, reason)",
    )
    p.add_argument(
        "--fail-on", default="blocking", choices=FAIL_ON_CHOICES, help=_choices_help(FAIL_ON_HELP, "blocking")
    )
    p.add_argument("--color", default="auto", choices=tuple(COLOR_HELP), help=_choices_help(COLOR_HELP, "auto"))


SUMMARY = "$GITHUB_STEP_SUMMARY"


def append_step_summary(path: str, markdown: str, inputs: tuple[str, ...] = ()) -> None:
    append_text(path, markdown, what=SUMMARY, inputs=inputs)
