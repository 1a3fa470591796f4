"""Symbol names that are anyone's bytes (quotes, backslashes, control characters, bytes that
are no UTF-8, bidi controls, Markdown and XML syntax, very long names), in a library with
more collisions than one batch holds so they land in different batches: every format is
valid, escaped, and the streamed command says exactly what render() of the whole report says.

The libraries are real ELF files: an assembly file with quoted symbol names (GNU as takes
any byte but NUL and newline in them) compiled by the system compiler.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.dom.minidom
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from aoti_shim.checks import CheckSettings, render, run_check
from aoti_shim.checks.formats.escape import printable
from aoti_shim.checks.rules.table import BATCH
from compile_support import compile_shared

HOSTILE = (
    b'q"uote', b"back\\slash", b"ctl\x01\x1b[31m\x7f", b"bidi\xe2\x80\xaeevil", b"bad\xff\xfe", b"sp ace",
    b"tab\there", b"lt<&>]]>", b"cr\rx", b"pct%0A::,=", b"L" * 3000, b"sur\xed\xa0\x80", b"ap'os",
    b"\xc2\x85nel", b"\xe2\x80\xa8ls", b"-->", b"`md`*_|", b"<img src=x>", b"[a](http://x)", b"``",
)
SHARED = 2 * BATCH + 500


def _assemble(names: list[bytes], out: Path) -> Path:
    def quoted(name: bytes) -> bytes:
        return b'"' + b"".join(b"\\" + bytes([c]) if c in b'"\\' else bytes([c]) for c in name) + b'"'

    body = b"".join(b".globl %s\n.type %s,@function\n%s:\n ret\n" % ((quoted(n),) * 3) for n in names)
    source = out.with_suffix(".s")
    source.write_bytes(b".text\n" + body + b'.section .note.GNU-stack,"",@progbits\n')
    compile_shared(source, out)
    return out


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("hostile")
    # A hostile name every 97 names: in every batch, at batch edges' neighbours too.
    names = [b"shared_%05d" % i + (HOSTILE[(i // 97) % len(HOSTILE)] if i % 97 == 0 else b"") for i in range(SHARED)]
    small = [b"h_" + h for h in HOSTILE]
    suppress = out / "suppress.toml"
    # Part of a batch, and one hostile name in several batches (quotes and wildcards in TOML).
    suppress.write_text('[[suppress]]\nrule = "COLLISION"\nsymbol = "shared_01*"\nreason = "x"\n'
                        '[[suppress]]\nrule = "COLLISION"\nsymbol = "*q\\"uote"\nreason = "q"\n')
    return {
        "shim": _assemble(names, out / "libmyrt_shim.so"),
        "ref": _assemble(names, out / "libref.so"),
        "small_shim": _assemble(small, out / "libmyrt_small.so"),
        "small_ref": _assemble(small, out / "libsmallref.so"),
        "suppress": suppress,
    }


def _streamed(shim: Path, ref: Path, fmt: str, *extra: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "aoti_shim",
            "check",
            "--shim",
            str(shim),
            "--against",
            str(ref),
            "--format",
            fmt,
            *extra,
        ],
        capture_output=True,
        check=False,
        env=env,
    )
    assert done.returncode == 8 and done.stderr == b"", done.stderr
    return done.stdout


@pytest.mark.parametrize("suppressed", [False, True])
def test_every_format_is_valid_escaped_and_equal_to_render(hostile: dict[str, Path], suppressed: bool) -> None:
    extra = ("--suppressions", str(hostile["suppress"])) if suppressed else ()
    report = run_check(
        CheckSettings(
            shims=(str(hostile["shim"]),), against=(str(hostile["ref"]),), suppressions=extra[1] if extra else None
        )
    )
    assert len(report.findings) + len(report.suppressed) >= SHARED
    for fmt in ("text", "json", "sarif", "github", "junit"):
        out = _streamed(hostile["shim"], hostile["ref"], fmt, *extra)
        assert out == render(report, fmt).encode(), fmt
        text = out.decode("utf-8")  # valid UTF-8, nothing undecodable passed through
        if fmt in ("json", "sarif"):
            json.loads(text)
            assert text.isascii(), fmt
        else:
            assert all(c.isprintable() or c == "\n" for c in text), (
                fmt,
                {ascii(c) for c in text if not c.isprintable()},
            )
        if fmt == "junit":
            xml.dom.minidom.parseString(out)
    if suppressed:
        assert not any('q"uote' in f.symbol for f in report.findings) and any(
            'q"uote' in s.finding.symbol for s in report.suppressed
        )


def _cells(summary: str) -> list[list]:
    """The step summary's table body as markdown-it parses it (CommonMark with GFM tables)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(summary)
    rows, row = [], None
    for t in tokens:
        if t.type == "tr_open":
            row = []
        elif t.type == "inline" and row is not None:
            row.append(t)
        elif t.type == "tr_close":
            rows.append(row)
            row = None
    return rows[1:]  # the header row


def test_the_github_step_summary_shows_each_name_and_message_literally(hostile: dict[str, Path]) -> None:
    report = run_check(CheckSettings(shims=(str(hostile["small_shim"]),), against=(str(hostile["small_ref"]),)))
    out = _streamed(hostile["small_shim"], hostile["small_ref"], "github").decode()
    summary = out[out.index("## aoti-shim check") :]
    rows = _cells(summary)
    assert len(rows) == len(report.findings)
    for finding, row in zip(report.findings, rows):
        assert len(row) == 5, [t.content for t in row]
        symbol, detail = row[3].children, row[4].children
        # No raw HTML, link, image or emphasis from a name: each cell is its text, literally.
        kinds = {c.type for c in (*symbol, *detail)}
        assert kinds <= {"text", "code_inline"}, (finding.symbol, kinds)
        shown = "".join(c.content for c in symbol)
        assert shown == printable(finding.symbol), (finding.symbol, shown)
        assert "".join(c.content for c in detail) == printable(finding.message)


def test_sarif_artifact_uris_are_uri_references(hostile: dict[str, Path], tmp_path: Path) -> None:
    import re
    from urllib.parse import unquote

    # A folder name with a space, a percent escape, a fragment, a query, a scheme-like colon
    # and a byte that is no UTF-8.
    folder = Path(os.fsdecode(os.fsencode(tmp_path) + b"/a:b c%0A#d?e\xff"))
    folder.mkdir()
    shim = folder / "libmyrt_small.so"
    shim.write_bytes(hostile["small_shim"].read_bytes())
    doc = json.loads(_streamed(shim, hostile["small_ref"], "sarif"))
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"]}
    (uri,) = uris
    # RFC 3986 characters only, and every % starts an escape (before: the raw path).
    assert re.fullmatch(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-F]{2})*", uri), uri
    assert ":" not in uri.split("/", 1)[0] or uri.startswith("/")  # no scheme read into it
    assert unquote(uri) == str(shim).replace(os.fsdecode(b"\xff"), "\\xff")
