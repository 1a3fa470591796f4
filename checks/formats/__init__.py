"""Output formats. Text, JSON and SARIF stream: they are written while the findings are
found, holding only what they print (text: counts and a bounded sample per group). The
others are rendered from a whole :class:`Report`."""

from __future__ import annotations

from typing import Callable, Iterable, Iterator, Protocol

from aoti_shim.checks.report import Finding, Header, Report, Tally, assemble, header_of
from aoti_shim.errors import UsageError

Write = Callable[[str], None]


class StreamRenderer(Protocol):
    def __call__(
        self, header: Header, findings: Iterable[Finding], tally: Tally, write: Write, *, color: bool, verbose: bool
    ) -> None: ...


def _text(header: Header, findings: Iterable[Finding], tally: Tally, write: Write, *, color: bool, verbose: bool) -> None:
    from aoti_shim.checks.formats.text import stream_text

    stream_text(header, findings, tally, write, color=color, verbose=verbose)


def _json(header: Header, findings: Iterable[Finding], tally: Tally, write: Write, *, color: bool, verbose: bool) -> None:
    from aoti_shim.checks.formats.json_report import stream_json

    stream_json(header, findings, tally, write)


def _sarif(header: Header, findings: Iterable[Finding], tally: Tally, write: Write, *, color: bool, verbose: bool) -> None:
    from aoti_shim.checks.formats.sarif import stream_sarif

    stream_sarif(header, findings, tally, write)


def _whole(render_report: Callable[[Report], str]) -> StreamRenderer:
    def stream(header: Header, findings: Iterable[Finding], tally: Tally, write: Write, *, color: bool, verbose: bool) -> None:
        write(render_report(assemble(header, tuple(findings), tally)))

    return stream


def _github(report: Report) -> str:
    from aoti_shim.checks.formats.github import render_annotations

    return render_annotations(report)


def _junit(report: Report) -> str:
    from aoti_shim.checks.formats.junit import render_junit

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
    fmt: str, header: Header, findings: Iterable[Finding], tally: Tally
) -> tuple[Header, Iterable[Finding], Tally]:
    """The stream with every name made safe for ``fmt`` (names come from untrusted files):
    visible escapes for the formats people or XML read, valid Unicode for JSON and SARIF."""
    from aoti_shim.checks.formats import escape

    f = escape.valid_unicode if fmt in ("json", "sarif") else escape.printable
    return (
        escape.header(header, f),
        _escaped_findings(findings, f),
        escape.EscapedTally(tally, f),  # type: ignore[return-value]
    )


def _escaped_findings(findings: Iterable[Finding], f: Callable[[str], str]) -> Iterator[Finding]:
    from aoti_shim.checks.formats import escape

    # Both escapes leave printable text alone; a finding whose texts all are passes as it
    # is (the artifact and related names repeat: they are tested once each).
    clean: set[str] = set()
    for x in findings:
        if x.message.isprintable() and x.symbol.isprintable() and x.artifact in clean and (x.related is None or x.related in clean):
            yield x
            continue
        for name in (x.artifact, x.related):
            if name is not None and name.isprintable() and len(clean) < 4096:
                clean.add(name)
        yield escape.finding(x, f)


def render_stream(
    fmt: str,
    header: Header,
    findings: Iterable[Finding],
    tally: Tally,
    write: Write,
    *,
    color: bool = False,
    verbose: bool = False,
) -> None:
    """Write the report as the findings arrive; ``tally`` is complete once they ran out."""
    renderer = _renderer(fmt)
    header, findings, tally = _escaped(fmt, header, findings, tally)
    renderer(header, findings, tally, write, color=color, verbose=verbose)


def render(report: Report, fmt: str = "text", *, color: bool = False, verbose: bool = False) -> str:
    renderer = _renderer(fmt)
    parts: list[str] = []
    header, findings, tally = _escaped(fmt, header_of(report), iter(report.findings), Tally.of(report))
    renderer(header, findings, tally, parts.append, color=color, verbose=verbose)
    return "".join(parts)
