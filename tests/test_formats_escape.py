"""checks/formats/escape.py: what each transform makes visible and what it leaves alone, on
one name at a time and across a report, a batch, a header and a streaming tally. Whole
reports of hostile names in every format are tests/test_hostile_names.py's."""

from __future__ import annotations

import pytest

from aoti_shim.checks.formats import escape
from aoti_shim.checks.report.model import (
    BLOCKING,
    AgainstSource,
    CheckedArtifact,
    Finding,
    FindingBatch,
    Header,
    Suppressed,
    Tally,
)
from formats_support import sample_report

# A byte that is no UTF-8, as os.fsdecode hands it over (surrogateescape).
BAD_BYTE = "\udcff"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("aoti_torch_empty", "aoti_torch_empty"),
        ("é and 中文", "é and 中文"),  # printable Unicode stays
        ("a\nb", "a\\x0ab"),
        ("\x1b[2J", "\\x1b[2J"),
        ("del\x7f", "del\\x7f"),
        ("c1\x85", "c1\\x85"),
        ("rtl\u202eevil", "rtl\\u202eevil"),  # a bidi override could reorder what follows
        ("line\u2028sep", "line\\u2028sep"),
        ("bom\ufeff", "bom\\ufeff"),
        (f"lib{BAD_BYTE}.so", "lib\\xff.so"),  # the byte itself, not the surrogate
        ("\ud800", "\\ud800"),  # a surrogate no byte stands for
    ],
)
def test_printable_makes_every_steering_character_visible(text: str, shown: str) -> None:
    assert escape.printable(text) == shown
    assert escape.printable(shown) == shown  # visible text stays as it is


def test_valid_unicode_makes_only_undecodable_bytes_visible() -> None:
    # JSON and SARIF escape control characters themselves; only lone surrogates cannot encode.
    assert escape.valid_unicode(f"a\nb\x1b{BAD_BYTE}\u202e") == "a\nb\x1b\\xff\u202e"
    assert escape.valid_unicode(f"a\nb\x1b{BAD_BYTE}").encode("utf-8")
    assert escape.valid_unicode("plain") == "plain"


def test_a_finding_with_nothing_to_escape_is_the_same_object() -> None:
    clean = Finding("COLLISION", BLOCKING, "lib.so", "sym", "message", "other.so")
    assert escape.finding(clean, escape.printable) is clean


def test_every_text_field_of_a_finding_is_escaped_and_its_rule_and_severity_kept() -> None:
    odd = Finding("COLLISION", BLOCKING, "lib\n.so", "sym\x1b", "m\u202e", f"rel{BAD_BYTE}")
    assert escape.finding(odd, escape.printable) == Finding(
        "COLLISION", BLOCKING, "lib\\x0a.so", "sym\\x1b", "m\\u202e", "rel\\xff"
    )
    assert escape.finding(odd._replace(related=None), escape.printable).related is None


def test_a_batch_is_escaped_column_by_column() -> None:
    b = FindingBatch("COLLISION", BLOCKING, "a\n.so", ["x\x1b", "y"], ["m1", "m\n2"], ["r\x00", None])
    got = escape.batch(b, escape.printable)
    assert (got.rule, got.severity, got.artifact) == ("COLLISION", BLOCKING, "a\\x0a.so")
    assert (list(got.symbols), list(got.messages), list(got.related)) == (
        ["x\\x1b", "y"],
        ["m1", "m\\x0a2"],
        ["r\\x00", None],
    )


def test_a_header_escapes_every_name_it_shows_but_not_the_roles_and_kinds() -> None:
    h = Header(
        prefix="p\x1b_",
        prefix_source="given",
        artifacts=(CheckedArtifact("s\n.so", "shim"),),
        references=("r\x1b.so",),
        skipped_rules=(("R\n", "why\x1b"),),
        against=(AgainstSource("t\n", "/p\x1b", "found\x07", "2.1\n", 1),),
        ignored=(("tool\n", "executable"),),
    )
    got = escape.header(h, escape.printable)
    assert got.prefix == "p\\x1b_" and got.prefix_source == "given"
    assert got.artifacts == (CheckedArtifact("s\\x0a.so", "shim"),)
    assert got.references == ("r\\x1b.so",)
    assert got.skipped_rules == (("R\\x0a", "why\\x1b"),)
    assert got.against == (AgainstSource("t\\x0a", "/p\\x1b", "found\\x07", "2.1\\x0a", 1),)
    assert got.ignored == (("tool\\x0a", "executable"),)
    assert escape.header(Header(None, "none", (), ()), escape.printable).prefix is None


def test_an_escaped_tally_reads_the_tally_as_it_fills() -> None:
    tally = Tally()
    view = escape.EscapedTally(tally, escape.printable)
    assert view.suppressed == [] and view.unused_suppressions == ()
    hidden = Finding("UNPREFIXED_IMPORT", BLOCKING, "m\n.so", "s", "msg")
    tally.suppressed.append(Suppressed(hidden, "known\x1b"))
    tally.unused_suppressions = ("R in *\n",)
    tally.blocking = 3
    assert view.suppressed == [Suppressed(hidden._replace(artifact="m\\x0a.so"), "known\\x1b")]
    assert view.unused_suppressions == ("R in *\\x0a",)
    assert view.blocking == 3  # everything else is the tally's own


def test_a_report_for_the_terminal_and_for_unicode() -> None:
    odd = Finding("COLLISION", BLOCKING, f"lib{BAD_BYTE}\n.so", "s", "m")
    report = sample_report((odd,), unused_suppressions=(f"x{BAD_BYTE}",))
    shown = escape.for_terminal(report)
    assert shown.findings == (odd._replace(artifact="lib\\xff\\x0a.so"),)
    assert shown.unused_suppressions == ("x\\xff",)
    unicode = escape.for_unicode(report)
    assert unicode.findings == (odd._replace(artifact="lib\\xff\n.so"),)
    assert (shown.prefix, shown.against, shown.references) == (report.prefix, report.against, report.references)


def test_a_batch_read_escaped_escapes_what_is_read_as_a_whole_batch_would() -> None:
    # The text report reads a sample of each group: its columns are escaped as they are read.
    raw = FindingBatch(
        "COLLISION", "blocking", "lib\x1b[2J.so", ["a\x07", "b", "c\u202e"], ["m\x1b", "n", "o\n"],
        [None, "r\x00", None],
    )
    lazy, whole = escape.read_escaped(raw, escape.printable), escape.batch(raw, escape.printable)
    assert lazy.artifact == whole.artifact == "lib\\x1b[2J.so"
    assert lazy.messages[:2] == list(whole.messages[:2]) == ["m\\x1b", "n"]
    assert lazy.messages[2] == "o\\x0a" and len(lazy.symbols) == lazy.size == 3
    assert list(lazy.symbols) == whole.symbols and list(lazy.related) == whole.related == [None, "r\\x00", None]
