"""checks/formats/github.py: workflow-command annotations, their cap and escaping, and the
step summary's table."""

from __future__ import annotations

import pytest

from aoti_shim.checks.formats import render
from aoti_shim.checks.formats.github import MAX_ANNOTATIONS, render_annotations
from aoti_shim.checks.report.model import (
    AgainstSource,
)
from formats_support import (
    AGAINST,
    F_COLLISION,
    F_EXPORT,
    sample_report,
)


def test_github_annotations_say_kind_file_rule_and_symbol() -> None:
    lines = render_annotations(sample_report(), with_summary=False).splitlines()
    assert lines == [
        f"::notice title=aoti-shim against::torch: {AGAINST.describe()}",
        "::error file=lib/libshim.so,title=UNPREFIXED_EXPORT::aoti_torch_get_dim: exports aoti_torch_get_dim without "
        "the prefix",
        "::error file=lib/libshim.so,title=COLLISION::c10_thing: libc10.so exports it too",
        "::warning file=models/model.so,title=REEXPORTED_RUNTIME::_ZSt4cout: re-exports the C++ runtime",
    ]
    # A file name's ':' and ',' would end the property; '%', CR and LF the annotation.
    odd = F_EXPORT._replace(artifact="a:b,c%d.so", message="two\nlines\r")
    (line,) = render_annotations(sample_report((odd,), against=()), with_summary=False).splitlines()
    assert line == "::error file=a%3Ab%2Cc%25d.so,title=UNPREFIXED_EXPORT::aoti_torch_get_dim: two\\x0alines\\x0d"


@pytest.mark.parametrize("count", [MAX_ANNOTATIONS - 1, MAX_ANNOTATIONS, MAX_ANNOTATIONS + 1, MAX_ANNOTATIONS + 9])
def test_github_caps_the_annotations_and_says_how_many_more(count: int) -> None:
    findings = tuple(F_COLLISION._replace(symbol=f"s{i}") for i in range(count))
    lines = render_annotations(sample_report(findings, against=()), with_summary=False).splitlines()
    shown = min(count, MAX_ANNOTATIONS)
    assert [line.split("::")[2].split(":")[0] for line in lines[:shown]] == [f"s{i}" for i in range(shown)]
    tail = lines[shown:]
    assert tail == ([f"::notice title=aoti-shim::{count - MAX_ANNOTATIONS} more finding(s) in the step summary"]
                    if count > MAX_ANNOTATIONS else [])


def test_github_step_summary_tabulates_every_finding() -> None:
    out = render(sample_report(), "github")
    summary = out[out.index("## aoti-shim check") :]
    assert summary.splitlines() == [
        "## aoti-shim check",
        "",
        "Prefix: `myrt_` (given); 2 blocking, 1 warning(s), 1 suppressed.",
        "",
        "Against `torch`: torch 2.13.0 at /t/torch/lib (from argument; 3 libraries).",
        "",
        "| severity | rule | artifact | symbol | detail |",
        "| --- | --- | --- | --- | --- |",
        "| blocking | UNPREFIXED_EXPORT | lib/libshim.so | `aoti_torch_get_dim` | exports aoti\\_torch\\_get\\_dim "
        "without the prefix |",
        "| blocking | COLLISION | lib/libshim.so | `c10_thing` | libc10.so exports it too |",
        "| warning | REEXPORTED_RUNTIME | models/model.so | `_ZSt4cout` | re-exports the C++ runtime |",
        "",  # the summary's own newline, then the annotations' last one
    ]
    empty = render(sample_report((), prefix=None, prefix_source="none", against=()), "github").splitlines()
    assert empty == [
        "## aoti-shim check",
        "",
        "Prefix: `-` (none found); 0 blocking, 0 warning(s), 1 suppressed.",
        "",
        "",
    ]


@pytest.mark.parametrize(
    ("symbol", "cell"),
    [
        ("plain", "`plain`"),
        ("a`b", "``a`b``"),  # a fence longer than the longest backtick run inside
        ("x``y`z", "```x``y`z```"),
        ("`lead", "`` `lead ``"),  # padded: CommonMark strips one space each side
        ("trail`", "`` trail` ``"),
        (" sp", "`  sp `"),
        ("sp ", "` sp  `"),
        ("a|b", "`a\\|b`"),  # a table splits cells at | even inside code
        ("", ""),  # `` would be two literal backticks
    ],
)
def test_github_summary_shows_a_symbol_as_a_code_span_that_holds_it(symbol: str, cell: str) -> None:
    lines = render(sample_report((F_EXPORT._replace(symbol=symbol, message="m"),), against=()), "github").splitlines()
    assert lines[-2] == f"| blocking | UNPREFIXED_EXPORT | lib/libshim.so | {cell} | m |"


def test_github_annotation_escapes_what_ends_a_property_or_the_line() -> None:
    # Names reach the annotation made visible (\xNN), so only %, : and , are left to encode.
    odd = F_EXPORT._replace(artifact="d%0A/a:b,c.so", symbol="s%0D", message="50% of x:y,z")
    (line,) = render_annotations(sample_report((odd,), against=()), with_summary=False).splitlines()
    assert line == "::error file=d%250A/a%3Ab%2Cc.so,title=UNPREFIXED_EXPORT::s%250D: 50%25 of x:y,z"
    against = AgainstSource("t%1", "/p%2", "argument", "2.13", 2)
    assert render_annotations(sample_report((), against=(against,)), with_summary=False).splitlines() == [
        "::notice title=aoti-shim against::t%251: torch 2.13 at /p%252 (from argument; 2 libraries)"]


def test_github_summary_without_against_says_no_collision_was_judged() -> None:
    # The text verdict never reads a plain OK without --against; the step summary of
    # --format github said "0 blocking, 0 warning(s), 0 suppressed." and nothing more.
    from aoti_shim.checks.formats.github import markdown_summary

    skipped = (("COLLISION", "no --against reference given"),)
    text = markdown_summary(sample_report((), against=(), references=(), skipped_rules=skipped))
    assert "no collision with libtorch judged (no --against: add --against torch or a snapshot)" in text, text
    assert "judged" not in markdown_summary(sample_report(()))
