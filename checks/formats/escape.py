"""Make any name safe to print: symbol and file names come from untrusted binaries and paths.

Two transforms, applied to a whole :class:`Report` or, for a stream, to its header, each
finding and the tally as they are read (see ``formats.render_stream``):

- :func:`for_terminal` (text, GitHub, JUnit): control characters, Unicode line and bidi
  controls and undecodable bytes become visible ``\\xNN``/``\\uNNNN`` text, so a name
  cannot move the cursor, hide a FAILED line, break a line or an XML document.
- :func:`for_unicode` (JSON, SARIF): only undecodable bytes (lone surrogates that Python
  uses for non-UTF-8 file names) become ``\\xNN`` text; the serializer escapes the rest,
  and the output is valid UTF-8 for any name.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar, overload

from aoti_shim.checks.report.model import (
    AgainstSource,
    CheckedArtifact,
    Finding,
    FindingBatch,
    Header,
    Report,
    Suppressed,
    Tally,
    header_of,
)

# C0, DEL, C1; line/paragraph separators; bidi marks, embeddings, overrides and isolates;
# surrogates (from surrogateescape: bytes that are not UTF-8).
_TERMINAL_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff\ufeff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    o = ord(match.group())
    if 0xDC80 <= o <= 0xDCFF:  # the byte surrogateescape stood for
        return f"\\x{o - 0xDC00:02x}"
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def printable(text: str) -> str:
    """``text`` with every character that could steer a terminal or break a line made visible."""
    # isprintable() is False for every character the pattern matches (C-fast on clean names).
    return text if text.isprintable() else _TERMINAL_UNSAFE.sub(_visible, text)


def valid_unicode(text: str) -> str:
    """``text`` with lone surrogates made visible, so that it encodes as UTF-8."""
    return text if text.isprintable() else _SURROGATE.sub(_visible, text)


Escape = Callable[[str], str]


def finding(x: Finding, f: Escape) -> Finding:
    artifact, symbol, message = f(x.artifact), f(x.symbol), f(x.message)
    related = None if x.related is None else f(x.related)
    if (artifact, symbol, message, related) == (x.artifact, x.symbol, x.message, x.related):
        return x
    return x._replace(artifact=artifact, symbol=symbol, message=message, related=related)


def batch(b: FindingBatch, f: Escape) -> FindingBatch:
    return b._replace(
        artifact=f(b.artifact),
        symbols=[f(s) for s in b.symbols],
        messages=[f(m) for m in b.messages],
        related=[None if r is None else f(r) for r in b.related],
    )


T = TypeVar("T", str, "str | None")


class Escaped(Sequence[T], Generic[T]):
    """A column whose texts are escaped as they are read: the text report reads a sample of
    each group, so the rest (70k messages of one COLLISION group) is never tested."""

    __slots__ = ("_texts", "_f")

    def __init__(self, texts: Sequence[T], f: Callable[[T], T]) -> None:
        self._texts: Sequence[T] = texts
        self._f: Callable[[T], T] = f

    def __len__(self) -> int:
        return len(self._texts)

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> list[T]: ...

    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            return [self._f(t) for t in self._texts[i]]
        return self._f(self._texts[i])

    def __iter__(self) -> Iterator[T]:
        return map(self._f, self._texts)


def read_escaped(b: FindingBatch, f: Escape) -> FindingBatch:
    """:func:`batch` whose columns are escaped when read (the artifact, a group's key, now)."""
    return b._replace(
        artifact=f(b.artifact),
        symbols=Escaped(b.symbols, f),
        messages=Escaped(b.messages, f),
        related=Escaped(b.related, lambda r: None if r is None else f(r)),
    )


def _against(sources: tuple[AgainstSource, ...], f: Escape) -> tuple[AgainstSource, ...]:
    return tuple(
        dataclasses.replace(
            a,
            item=f(a.item),
            path=f(a.path),
            found_by=f(a.found_by),
            torch_version=None if a.torch_version is None else f(a.torch_version),
        )
        for a in sources
    )


def header(h: Header, f: Escape) -> Header:
    return dataclasses.replace(
        h,
        prefix=None if h.prefix is None else f(h.prefix),
        artifacts=tuple(CheckedArtifact(f(a.display), a.role) for a in h.artifacts),
        references=tuple(f(r) for r in h.references),
        skipped_rules=tuple((f(r), f(w)) for r, w in h.skipped_rules),
        against=_against(h.against, f),
        ignored=tuple((f(name), kind) for name, kind in h.ignored),
        # (A fact's value names folders and files: LD_LIBRARY_PATH's may be any bytes.)
        machine_facts=tuple(dataclasses.replace(m, value=f(m.value)) for m in h.machine_facts),
    )


class EscapedTally:
    """A view of a :class:`Tally` whose names are escaped when read (it fills as findings stream)."""

    def __init__(self, tally: Tally, f: Escape) -> None:
        self._tally, self._f = tally, f

    def __getattr__(self, name: str) -> object:
        return getattr(self._tally, name)

    @property
    def suppressed(self) -> list[Suppressed]:
        return [Suppressed(finding(s.finding, self._f), self._f(s.reason)) for s in self._tally.suppressed]

    @property
    def unused_suppressions(self) -> tuple[str, ...]:
        return tuple(self._f(u) for u in self._tally.unused_suppressions)


def _map_report(report: Report, f: Escape) -> Report:
    h = header(header_of(report), f)
    return dataclasses.replace(
        report,
        findings=tuple(finding(x, f) for x in report.findings),
        prefix=h.prefix,
        artifacts=h.artifacts,
        references=h.references,
        suppressed=tuple(Suppressed(finding(s.finding, f), f(s.reason)) for s in report.suppressed),
        unused_suppressions=tuple(f(u) for u in report.unused_suppressions),
        skipped_rules=h.skipped_rules,
        against=h.against,
        machine_facts=h.machine_facts,
    )


def for_terminal(report: Report) -> Report:
    return _map_report(report, printable)


def for_unicode(report: Report) -> Report:
    return _map_report(report, valid_unicode)
