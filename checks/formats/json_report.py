"""Versioned JSON; the schema ships as aoti_shim/checks/schemas/report-v1.schema.json.

Streamed: the header is written first, then one finding per line as each is found, then
what only the end knows (suppressed, summary). The document is the same JSON as a whole
``json.dumps`` would give, laid out differently.
"""

from __future__ import annotations

import hashlib
import json
from json.encoder import encode_basestring_ascii as _quote
from typing import Any, Callable, Iterable

from aoti_shim import __version__
from aoti_shim.checks.report import Finding, Header, Report, Tally, header_of

SCHEMA_VERSION = 1
_FLUSH_EVERY = 2000


def _finding(f: Finding) -> dict[str, Any]:
    return {
        "rule": f.rule,
        "severity": f.severity,
        "artifact": f.artifact,
        "symbol": f.symbol,
        "message": f.message,
        "related": f.related,
        "fingerprint": f.fingerprint,
    }


class FindingEncoder:
    """One finding as a line of JSON, fast: strings quoted by the C encoder, the fingerprint's
    hash state for (rule, artifact) computed once and copied per symbol."""

    def __init__(self) -> None:
        self._bases: dict[tuple[str, str], Any] = {}
        self._heads: dict[tuple[str, str, str], tuple[str, Any]] = {}
        self._quoted: dict[str, str] = {}

    def fingerprint(self, f: Finding) -> str:
        base = self._bases.get((f.rule, f.artifact))
        if base is None:
            key = "\0".join((f.rule, f.artifact.rsplit("/", 1)[-1], ""))
            base = self._bases[(f.rule, f.artifact)] = hashlib.sha256(key.encode("utf-8", "surrogatepass"))
        h = base.copy()
        h.update(f.symbol.encode("utf-8", "surrogatepass"))
        return h.hexdigest()[:32]

    def quoted(self, text: str) -> str:
        # Rule, severity, artifact and related repeat across findings.
        found = self._quoted.get(text)
        if found is None:
            found = _quote(text)
            if len(self._quoted) < 4096:
                self._quoted[text] = found
        return found

    def encode(self, f: Finding) -> str:
        rule, severity, artifact, symbol, message, related = f
        key = (rule, severity, artifact)
        head = self._heads.get(key)
        if head is None:
            q = self.quoted
            base_key = "\0".join((rule, artifact.rsplit("/", 1)[-1], ""))
            head = self._heads[key] = (
                f'{{"rule": {q(rule)}, "severity": {q(severity)}, "artifact": {q(artifact)}, "symbol": ',
                hashlib.sha256(base_key.encode("utf-8", "surrogatepass")),
            )
        h = head[1].copy()
        h.update(symbol.encode("utf-8", "surrogatepass"))
        rel = self._quoted.get(related) if related is not None else "null"  # type: ignore[arg-type]
        if rel is None:
            rel = self.quoted(related)  # type: ignore[arg-type]
        return (
            f'{head[0]}{_quote(symbol)}, "message": {_quote(message)}, '
            f'"related": {rel}, "fingerprint": "{h.hexdigest()[:32]}"}}'
        )


def _head(header: Header) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "aoti-shim", "version": __version__},
        "prefix": header.prefix,
        "prefix_source": header.prefix_source,
        "artifacts": [{"path": a.display, "role": a.role} for a in header.artifacts],
        "references": list(header.references),
        "against": [a.as_dict() for a in header.against],
    }


def _tail(header: Header, tally: Tally) -> dict[str, Any]:
    return {
        "suppressed": [{"finding": _finding(s.finding), "reason": s.reason} for s in tally.suppressed],
        "unused_suppressions": list(tally.unused_suppressions),
        "skipped_rules": [{"rule": r, "reason": why} for r, why in header.skipped_rules],
        "summary": {"blocking": tally.blocking, "warning": tally.warnings},
    }


def stream_json(header: Header, findings: Iterable[Finding], tally: Tally, write: Callable[[str], None]) -> None:
    head = json.dumps(_head(header), indent=2)
    write(head[:-2] + ',\n  "findings": [')  # the head without its closing "\n}"
    encoder = FindingEncoder()
    buffer: list[str] = []
    sep = "\n    "
    for f in findings:
        buffer.append(sep)
        buffer.append(encoder.encode(f))
        sep = ",\n    "
        if len(buffer) >= _FLUSH_EVERY:
            write("".join(buffer))
            buffer.clear()
    write("".join(buffer))
    write("\n  ],\n" if sep != "\n    " else "],\n")
    tail = json.dumps(_tail(header, tally), indent=2)
    write(tail[2:] + "\n")  # the tail without its opening "{\n"


def report_dict(report: Report) -> dict[str, Any]:
    from aoti_shim.checks.formats.escape import for_unicode

    report = for_unicode(report)
    header, tally = header_of(report), Tally.of(report)
    return {**_head(header), "findings": [_finding(f) for f in report.findings], **_tail(header, tally)}


def render_json(report: Report) -> str:
    from aoti_shim.checks.formats.escape import for_unicode

    report = for_unicode(report)  # valid UTF-8 for any file name
    parts: list[str] = []
    stream_json(header_of(report), iter(report.findings), Tally.of(report), parts.append)
    return "".join(parts)
