"""checks/report/options.py: the report options check and scan share, parsed by a bare
parser (their defaults, choices and help sentences), and the step summary appended to.
The commands' own --help texts: tests/test_cli_texts.py."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from aoti_shim.checks.formats import FORMATS
from aoti_shim.checks.report.model import FAIL_ON_CHOICES
from aoti_shim.checks.report.options import (
    COLOR_HELP,
    FAIL_ON_HELP,
    FORMAT_HELP,
    add_report_options,
    append_step_summary,
)


def _parser(format_help: dict[str, str] = FORMAT_HELP) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="t", exit_on_error=False)
    add_report_options(p, format_help)
    return p


def test_the_defaults_are_text_to_standard_output_failing_on_blocking() -> None:
    got = vars(_parser().parse_args([]))
    assert got == {
        "format": "text", "output": None, "suppressions": None, "fail_on": "blocking", "color": "auto"
    }
    got = vars(_parser().parse_args(["--format", "sarif", "-o", "r.sarif", "--fail-on", "any", "--color", "never"]))
    assert (got["format"], got["output"], got["fail_on"], got["color"]) == ("sarif", "r.sarif", "any", "never")


def test_every_choice_has_its_sentence_and_only_the_formats_there_are() -> None:
    assert set(FORMAT_HELP) == set(FORMATS)
    assert tuple(FAIL_ON_HELP) == tuple(FAIL_ON_CHOICES)
    assert set(COLOR_HELP) == {"auto", "always", "never"}


def test_the_help_names_each_choice_with_its_sentence_and_the_default() -> None:
    text = " ".join(_parser({"text": "for people", "json": "for tools"}).format_help().split())
    assert "text: for people; json: for tools (default: text)" in text
    assert "blocking: exit 8 on blocking findings; warnings are reported only;" in text
    assert "never: no colour (default: auto)" in text


@pytest.mark.parametrize(
    "argv", [["--format", "xml"], ["--fail-on", "warnings"], ["--color", "yes"], ["-o", ""], ["--suppressions", ""]]
)
def test_a_choice_not_offered_or_an_empty_path_is_refused(argv: list[str]) -> None:
    with pytest.raises(argparse.ArgumentError):
        _parser().parse_args(argv)


def test_a_format_the_command_does_not_offer_is_refused() -> None:
    with pytest.raises(argparse.ArgumentError):
        _parser({"text": "t"}).parse_args(["--format", "json"])


def test_the_step_summary_is_appended_to(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    append_step_summary(str(summary), "## aoti-shim\n")
    append_step_summary(str(summary), "again\n")
    assert summary.read_text() == "# earlier step\n## aoti-shim\nagain\n"
