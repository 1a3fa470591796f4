"""Versioned JSON; the schema ships as aoti_shim/checks/schemas/report-v1.schema.json.

Streamed: the header is written first, then one finding per line as each is found, then
what only the end knows (suppressed, summary). The document is the same JSON as a whole
``json.dumps`` would give, laid out differently.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from json.encoder import encode_basestring_ascii as _quote
from typing import Any

from aoti_shim import __version__
from aoti_shim.checks.formats.escape import for_unicode
from aoti_shim.checks.report.model import Finding, FindingBatch, Header, Report, Tally, fingerprint_prefix, header_of

SCHEMA_VERSION = 1


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


# The characters json escapes in ASCII text: control characters, DEL, quote and backslash.
_ESCAPED = str.maketrans(dict.fromkeys([*range(0x20), 0x7F, ord('"'), ord("\\")]))


def _plain(texts: Sequence[str]) -> bool:
    """True for a column of ASCII with no character to escape (checked by one C pass that
    deletes them: nothing deleted, nothing to escape): each is its own literal, quoted."""
    joined = "".join(texts)
    return joined.isascii() and len(joined.translate(_ESCAPED)) == len(joined)


def quote_each(texts: Sequence[str]) -> Iterable[str]:
    """Each text as a JSON string literal, as ``json`` quotes it (a plain column is only
    wrapped in quotes, at a fraction of the cost)."""
    if _plain(texts):
        return [f'"{text}"' for text in texts]
    return map(_quote, texts)


class FindingEncoder:
    """Findings as lines of JSON, a batch at a time: strings quoted by the C encoder, the
    fingerprint's hash state for (rule, artifact) made once and copied per symbol."""

    def __init__(self) -> None:
        self._bases: dict[tuple[str, str], Any] = {}
        self._quoted: dict[str, str] = {}

    def fingerprints(self, batch: FindingBatch) -> list[str]:
        """What :func:`report.fingerprint` gives for each finding of the batch: the hash
        state of (rule, artifact) is made once and copied per symbol."""
        base = self._bases.get((batch.rule, batch.artifact))
        if base is None:
            import hashlib  # here: OpenSSL's load is 2 ms of every check's start-up, text or JSON

            base = self._bases[(batch.rule, batch.artifact)] = hashlib.sha256(
                fingerprint_prefix(batch.rule, batch.artifact)
            )
        # Encoded as one text and split: names hold no NUL (ELF strings end at one).
        encoded = "\0".join(batch.symbols).encode("utf-8", "surrogatepass").split(b"\0")
        if len(encoded) != batch.size:
            encoded = [symbol.encode("utf-8", "surrogatepass") for symbol in batch.symbols]
        out = []
        for name in encoded:
            h = base.copy()
            h.update(name)
            out.append(h.hexdigest()[:32])
        return out

    def quoted(self, text: str) -> str:
        # Rule, severity, artifact and related repeat across findings.
        found = self._quoted.get(text)
        if found is None:
            found = _quote(text)
            if len(self._quoted) < 4096:
                self._quoted[text] = found
        return found

    def quoted_related(self, batch: FindingBatch) -> Iterable[str]:
        # A batch names a few references over and over: each is quoted once, and the column
        # is mapped in C (no generator step per finding).
        quoted: dict[str | None, str] = {r: self.quoted(r) for r in set(batch.related) if r is not None}
        quoted[None] = "null"
        return map(quoted.__getitem__, batch.related)

    def encode(self, batch: FindingBatch) -> list[str]:
        """The batch's findings, one JSON object each."""
        q = self.quoted
        head = (
            f'{{"rule": {q(batch.rule)}, "severity": {q(batch.severity)}, "artifact": {q(batch.artifact)}, "symbol": '
        )
        if _plain(batch.symbols) and _plain(batch.messages):
            # The common case, quoted where the line is made (no literal made per text first).
            return [
                f'{head}"{symbol}", "message": "{message}", "related": {related}, "fingerprint": "{fingerprint}"}}'
                for symbol, message, related, fingerprint in zip(
                    batch.symbols, batch.messages, self.quoted_related(batch), self.fingerprints(batch)
                )
            ]
        return [
            f'{head}{symbol}, "message": {message}, "related": {related}, "fingerprint": "{fingerprint}"}}'
            for symbol, message, related, fingerprint in zip(
                quote_each(batch.symbols),
                quote_each(batch.messages),
                self.quoted_related(batch),
                self.fingerprints(batch),
            )
        ]


def _head(header: Header) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "aoti-shim", "version": __version__},
        "prefix": header.prefix,
        "prefix_source": header.prefix_source,
        "artifacts": [{"path": a.display, "role": a.role} for a in header.artifacts],
        "references": list(header.references),
        "against": [a.as_dict() for a in header.against],
        # The loader facts taken from the checking machine (a deployment elsewhere may differ).
        "machine_facts": [f.as_dict() for f in header.machine_facts],
    }


def _tail(header: Header, tally: Tally) -> dict[str, Any]:
    return {
        "suppressed": [{"finding": _finding(s.finding), "reason": s.reason} for s in tally.suppressed],
        "unused_suppressions": list(tally.unused_suppressions),
        "skipped_rules": [{"rule": r, "reason": why} for r, why in header.skipped_rules],
        "summary": {"blocking": tally.blocking, "warning": tally.warnings},
    }


def stream_json(header: Header, batches: Iterable[FindingBatch], tally: Tally, write: Callable[[str], object]) -> None:
    head = json.dumps(_head(header), indent=2)
    write(head[:-2] + ',\n  "findings": [')  # the head without its closing "\n}"
    encoder = FindingEncoder()
    sep = "\n    "
    for batch in batches:
        lines = encoder.encode(batch)
        if lines:
            write(sep + ",\n    ".join(lines))
            sep = ",\n    "
    write("\n  ],\n" if sep != "\n    " else "],\n")
    tail = json.dumps(_tail(header, tally), indent=2)
    write(tail[2:] + "\n")  # the tail without its opening "{\n"


def report_dict(report: Report) -> dict[str, Any]:
    report = for_unicode(report)
    header, tally = header_of(report), Tally.of(report)
    return {**_head(header), "findings": [_finding(f) for f in report.findings], **_tail(header, tally)}


def render_json(report: Report) -> str:
    report = for_unicode(report)  # valid UTF-8 for any file name
    parts: list[str] = []
    stream_json(header_of(report), map(FindingBatch.of, report.findings), Tally.of(report), parts.append)
    return "".join(parts)
