"""SARIF 2.1.0 for code scanning: binaries as artifact locations, symbols as logical ones.

Streamed like JSON: the run's results are written one per line as they are found.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii as _quote
from typing import Any, Callable, Iterable

from aoti_shim import __version__
from aoti_shim.checks.formats.json_report import FindingEncoder
from aoti_shim.checks.report import BLOCKING, Finding, Header, Report, Tally, header_of
from aoti_shim.checks.rules import RULES

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_RESULTS = '"results": []'
_FLUSH_EVERY = 2000


def _result(f: Finding, index: dict[str, int], encoder: FindingEncoder) -> str:
    q = encoder.quoted
    level = '"error"' if f.severity == BLOCKING else '"warning"'
    # A finding about a whole library (NOT_A_SHIM) names no symbol.
    logical = f', "logicalLocations": [{{"name": {_quote(f.symbol)}, "kind": "function"}}]' if f.symbol else ""
    return (
        f'{{"ruleId": {q(f.rule)}, "ruleIndex": {index[f.rule]}, "level": {level}, '
        f'"message": {{"text": {_quote(f.message)}}}, '
        f'"locations": [{{"physicalLocation": {{"artifactLocation": {{"uri": {q(f.artifact)}}}}}{logical}}}], '
        f'"partialFingerprints": {{"aotiShimFinding/v1": "{encoder.fingerprint(f)}"}}}}'
    )


def stream_sarif(header: Header, findings: Iterable[Finding], tally: Tally, write: Callable[[str], None]) -> None:
    rules: list[dict[str, Any]] = [
        {
            "id": rule.id,
            "name": rule.id.title().replace("_", ""),
            "shortDescription": {"text": rule.doc},
            "defaultConfiguration": {"level": "error" if rule.severity == BLOCKING else "warning"},
        }
        for rule in RULES
    ]
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "aoti-shim", "version": __version__, "rules": rules}},
                "results": [],
                # A property bag: the torch the run was checked against, as every format names it.
                "properties": {"against": [a.as_dict() for a in header.against]},
            }
        ],
    }
    text = json.dumps(doc, indent=2)
    at = text.index(_RESULTS)
    write(text[: at + len(_RESULTS) - 1])
    index = {rule.id: i for i, rule in enumerate(RULES)}
    encoder = FindingEncoder()
    buffer: list[str] = []
    sep = "\n        "
    for f in findings:
        buffer.append(sep)
        buffer.append(_result(f, index, encoder))
        sep = ",\n        "
        if len(buffer) >= _FLUSH_EVERY:
            write("".join(buffer))
            buffer.clear()
    write("".join(buffer))
    write(("\n      ]" if sep != "\n        " else "]") + text[at + len(_RESULTS) :] + "\n")


def render_sarif(report: Report) -> str:
    from aoti_shim.checks.formats.escape import for_unicode

    report = for_unicode(report)  # valid UTF-8 for any file name
    parts: list[str] = []
    stream_sarif(header_of(report), iter(report.findings), Tally.of(report), parts.append)
    return "".join(parts)
