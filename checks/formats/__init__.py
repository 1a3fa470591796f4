"""Output formats. Text, JSON and SARIF stream: they are written while the findings are
found, holding only what they print (text: counts and a bounded sample per group). The
others are rendered from a whole :class:`Report`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from aoti_shim.checks.formats import escape
from aoti_shim.checks.formats.text import stream_text

# Each other format's module is imported when it renders: a text report (the default) loads
# neither json's, SARIF's, JUnit's (xml.etree) nor GitHub's.
from aoti_shim.checks.report.model import FindingBatch, Header, Report, Tally, assemble, findings_of, header_of
from aoti_shim.errors import UsageError

Write = Callable[[str], object]


class StreamRenderer(Protocol):
    def __call__(
        self, header: Header, batches: Iterable[FindingBatch], tally: Tally, write: Write, *, color: bool, verbose: bool
    ) -> None: ...


def _text(
    header: Header, batches: Iterable[FindingBatch], tally: Tally, write: Write, *, color: bool, verbose: bool
) -> None:
    stream_text(header, batches, tally, write, color=color, verbose=verbose)


def _json(
    header: Header, batches: Iterable[FindingBatch], tally: Tally, write: Write, *, color: bool, verbose: bool
) -> None:
    from aoti_shim.checks.formats.json_report import stream_json

    stream_json(header, batches, tally, write)


def _sarif(
    header: Header, batches: Iterable[FindingBatch], tally: Tally, write: Write, *, color: bool, verbose: bool
) -> None:
    from aoti_shim.checks.formats.sarif import stream_sarif

    stream_sarif(header, batches, tally, write)


def _whole(render_report: Callable[[Report], str]) -> StreamRenderer:
    def stream(
        header: Header, batches: Iterable[FindingBatch], tally: Tally, write: Write, *, color: bool, verbose: bool
    ) -> None:
        write(render_report(assemble(header, tuple(findings_of(batches)), tally)))

    return stream


def _github(report: Report) -> str:
    from aoti_shim.checks.formats.github import render_annotations

    return render_annotations(report)


def _junit(report: Report) -> str:
    from aoti_shim.checks.formats.junit import render_junit  # here: xml.etree only when asked for

    return render_junit(report)


FORMATS: dict[str, StreamRenderer] = {
    "text": _text,
    "json": _json,
    "sarif": _sarif,
    "github": _whole(_github),
    "junit": _whole(_junit),
}


def _renderer(fmt: str) -> StreamRenderer:
    try:
        return FORMATS[fmt]
    except KeyError:
        raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}") from None


def _escaped(
    fmt: str, header: Header, batches: Iterable[FindingBatch], tally: Tally
) -> tuple[Header, Iterable[FindingBatch], Tally]:
    """The stream with every name made safe for ``fmt`` (names come from untrusted files):
    visible escapes for the formats people or XML read, valid Unicode for JSON and SARIF."""
    if fmt in ("json", "sarif"):
        f, safe = escape.valid_unicode, str.isascii  # ASCII holds no lone surrogate
    else:
        f, safe = escape.printable, str.isprintable
    if fmt == "text":
        # A group's count and a sample of its messages are all it prints: escaped as read.
        escaped: Iterable[FindingBatch] = (escape.read_escaped(b, f) for b in batches)
    else:
        escaped = _escaped_batches(batches, f, safe)
    return (
        escape.header(header, f),
        escaped,
        escape.EscapedTally(tally, f),  # type: ignore[return-value]  # a view with Tally's reads, not a subclass
    )


def _escaped_batches(
    batches: Iterable[FindingBatch], f: Callable[[str], str], safe: Callable[[str], bool]
) -> Iterator[FindingBatch]:
    # ``f`` leaves text alone that ``safe`` passes. A batch whose texts all pass (C loops
    # over its columns) goes as it is; the artifact and related names repeat, so each is
    # tested once.
    clean: set[str] = set()
    for batch in batches:
        names = {n for n in (batch.artifact, *batch.related) if n is not None}
        if names <= clean or all(safe(n) for n in names - clean):
            if len(clean) < 4096:
                clean.update(names)
            if all(map(safe, batch.symbols)) and all(map(safe, batch.messages)):
                yield batch
                continue
        yield escape.batch(batch, f)


def render_stream(
    fmt: str,
    header: Header,
    batches: Iterable[FindingBatch],
    tally: Tally,
    write: Write,
    *,
    color: bool = False,
    verbose: bool = False,
) -> None:
    """Write the report as the findings arrive; ``tally`` is complete once they ran out."""
    renderer = _renderer(fmt)
    header, batches, tally = _escaped(fmt, header, batches, tally)
    renderer(header, batches, tally, write, color=color, verbose=verbose)


def render(report: Report, fmt: str = "text", *, color: bool = False, verbose: bool = False) -> str:
    renderer = _renderer(fmt)
    parts: list[str] = []
    of_report = map(FindingBatch.of, report.findings)
    header, batches, tally = _escaped(fmt, header_of(report), of_report, Tally.of(report))
    renderer(header, batches, tally, parts.append, color=color, verbose=verbose)
    return "".join(parts)
