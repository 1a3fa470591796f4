"""checks/scan/environment.py: the fast paths the scan takes over a whole site folder agree
with the standard library readers they stand in for (email's header parser, csv's reader,
importlib.metadata's order) and with the exact file-name rule they pre-filter for."""

from __future__ import annotations

import csv
import importlib.metadata
import io
import os
from email.parser import HeaderParser
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from aoti_shim.checks.scan import environment
from aoti_shim.errors import InputError

_HEADER_PIECES = st.sampled_from(
    [
        "Name",
        "name",
        "Version",
        "VERSION",
        "Summary",
        "Name ",
        "X-Y",
        "From ",
        " ",
        "\t",
        ":",
        ": ",
        "\n",
        "\r\n",
        "\r",
        "foo",
        "1.0",
        "a b",
        "é",
        "\x0c",
        "\u2028",
        "-",
        "Name:",
        "Version:",
        "Name: x\n",
    ]
)


@settings(max_examples=1000, deadline=None)
@given(st.lists(_HEADER_PIECES, max_size=30).map("".join))
def test_metadata_name_and_version_are_what_emails_parser_reads(text: str) -> None:
    head = HeaderParser().parsestr(text, headersonly=True)
    truth = str(head.get("Name") or "").strip(), str(head.get("Version") or "").strip()
    assert environment._metadata_header(text) == truth


_NAME_PIECES = st.sampled_from(
    ["lib", "x", ".", "so", ".so", ".so.", "1", "py", "h", "é", "ü", "-", "_", "/", "\n", "a.b/"]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.lists(_NAME_PIECES, min_size=1, max_size=8).map("".join), max_size=20))
def test_the_bulk_prefilter_keeps_exactly_what_the_name_rule_keeps(paths: list[str]) -> None:
    # Over RECORD paths and folder entries alike: the rule reads the last name only.
    expected = [p for p in paths if environment._may_be_elf(p.rpartition("/")[2])]
    assert environment._elf_candidates(paths) == expected


_FIELD = st.text(alphabet=st.sampled_from('ab/.,"\n\r é'), max_size=8)


def _csv_rows(text: str) -> list[str] | str:
    """The reader the fast path stands in for: csv's, the first field of each row, or the
    broken line's number."""
    out = []
    for number, row in enumerate(csv.reader(io.StringIO(text, newline="")), 1):
        if row and (len(row) != 3 or not row[0]):
            return f"line {number} has {len(row)} field(s)"
        out += row[:1]
    return out


@settings(max_examples=600, deadline=None)
@given(
    st.lists(st.tuples(_FIELD, _FIELD, _FIELD), max_size=10),
    st.sampled_from(["\n", "\r\n"]),
    st.lists(st.sampled_from(["", ",", "x", "\n", "\r"]), max_size=3).map("".join),
)
def test_record_rows_read_as_csvs_reader_reads_them(rows: list[tuple[str, str, str]], end: str, tail: str) -> None:
    out = io.StringIO()
    csv.writer(out, lineterminator=end).writerows(rows)
    text = out.getvalue() + tail
    truth = _csv_rows(text)
    try:
        got: list[str] | str = environment._record_rows(text, "RECORD")
    except InputError as e:
        got = str(e)
        assert isinstance(truth, str) and truth in got, (got, truth)
    else:
        assert got == truth


def test_a_record_as_pip_writes_it_takes_the_fast_path() -> None:
    # pip writes RECORD with csv's writer and its default CRLF line ends; csv's reader over
    # 15k rows of torch's RECORD was a tenth of a venv's scan (issue 35 §4).
    out = io.StringIO()
    rows = [("torch/lib/libc10.so", "sha256=x", "10"), ("torch/__init__.py", "sha256=y", "2"), ("bin/t,a", "", "")]
    csv.writer(out).writerows(rows[:2])
    assert environment._plain_rows(out.getvalue()) == _csv_rows(out.getvalue()) == [r[0] for r in rows[:2]]
    # A quoted row and a lone CR (a line end to csv) still go to csv's reader.
    csv.writer(out).writerows(rows[2:])
    for text in (out.getvalue(), "a,b,c\rd,e,f\r\n"):
        assert environment._plain_rows(text) is None
        assert environment._record_rows(text, "RECORD") == _csv_rows(text)


def test_a_broken_record_row_is_named_by_csvs_reader_on_the_fast_path_too() -> None:
    for text, says in (("a,b,c\nd,e\n", "line 2 has 2 field(s)"), (",b,c\n", "line 1 has 3 field(s)")):
        try:
            environment._record_rows(text, "RECORD")
        except InputError as e:
            assert says in str(e), str(e)
        else:
            raise AssertionError(f"{text!r} was read")


def test_dist_info_folders_come_in_importlib_metadatas_order(tmp_path: Path) -> None:
    # Names that normalise alike group together, in directory order, as its Lookup does.
    for name in ("zeta-1.0", "Alpha_B-2.0", "alpha.b-1.0", "mid-3", "ALPHA-B-0.1", "egg-1.egg-info"):
        suffix = "" if name.endswith(".egg-info") else ".dist-info"
        (tmp_path / f"{name}{suffix}").mkdir()
    (tmp_path / "file-1.0.dist-info").write_text("")  # not a folder: no distribution
    dists = importlib.metadata.distributions(path=[str(tmp_path)])
    folders = [os.fspath(d._path) for d in dists]  # type: ignore[attr-defined]  # PathDistribution's folder: no public name
    truth = [f for f in folders if f.endswith(".dist-info") and os.path.isdir(f)]
    assert environment._metadata_folders(str(tmp_path)) == truth
    assert len(truth) == 5
