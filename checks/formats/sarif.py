"""SARIF 2.1.0 for code scanning: binaries as artifact locations, symbols as logical ones.

Streamed like JSON: the run's results are written one per line as they are found.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any
from urllib.parse import quote

from aoti_shim import __version__
from aoti_shim.checks.formats.escape import for_unicode
from aoti_shim.checks.formats.json_report import FindingEncoder, quote_each
from aoti_shim.checks.report.model import BLOCKING, FindingBatch, Header, Report, Tally, header_of
from aoti_shim.checks.rules.table import Rule, rules_for

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_RESULTS = '"results": []'


@lru_cache(maxsize=256)
def artifact_uri(path: str) -> str:
    """A file path as the URI reference SARIF's ``artifactLocation.uri`` must be: a space, ``%``,
    ``#``, ``?`` or ``:`` in a file name is percent-encoded (``%0A`` in a name was read back as a
    newline, ``a:b/x.so`` as a URI with the scheme ``a``, ``x#y.so`` as ``x`` and a fragment)."""
    return quote(path, safe="/")


def _results(batch: FindingBatch, index: dict[str, int], encoder: FindingEncoder) -> list[str]:
    q = encoder.quoted
    head = (
        f'{{"ruleId": {q(batch.rule)}, "ruleIndex": {index[batch.rule]}, '
        f'"level": "{level(batch.severity)}", "message": {{"text": '
    )
    where = f'"locations": [{{"physicalLocation": {{"artifactLocation": {{"uri": {q(artifact_uri(batch.artifact))}}}}}'
    # A finding about a whole library (NOT_A_SHIM) names no symbol.
    logical = [
        f', "logicalLocations": [{{"name": {quoted}, "kind": "function"}}]' if symbol else ""
        for symbol, quoted in zip(batch.symbols, quote_each(batch.symbols))
    ]
    return [
        f'{head}{message}}}, {where}{logical_location}}}], '
        f'"partialFingerprints": {{"aotiShimFinding/v1": "{fingerprint}"}}}}'
        for message, logical_location, fingerprint in zip(
            quote_each(batch.messages), logical, encoder.fingerprints(batch)
        )
    ]


def level(severity: str) -> str:
    """SARIF's level of a finding of ``severity``."""
    return "error" if severity == BLOCKING else "warning"


def rule_descriptors(rules: Iterable[Rule[Any]]) -> list[dict[str, Any]]:
    """The driver's ``rules``: each rule's id, its PascalCase name, its doc and its level (check's
    table and scan's)."""
    return [
        {
            "id": rule.id,
            "name": rule.id.title().replace("_", ""),
            "shortDescription": {"text": rule.doc},
            "defaultConfiguration": {"level": level(rule.severity)},
        }
        for rule in rules
    ]


def sarif_document(
    rules: list[dict[str, Any]], results: list[dict[str, Any]], properties: dict[str, Any]
) -> dict[str, Any]:
    """One SARIF 2.1.0 log of one run of aoti-shim: the one place both products' SARIF is
    assembled (check streams its results into the empty list; scan's are few, given whole)."""
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "aoti-shim", "version": __version__, "rules": rules}},
                "results": results,
                # A property bag: what the run judged against, as every format names it.
                "properties": properties,
            }
        ],
    }


def stream_sarif(header: Header, batches: Iterable[FindingBatch], tally: Tally, write: Callable[[str], object]) -> None:
    properties = {
        "against": [a.as_dict() for a in header.against],
        "machineFacts": [f.as_dict() for f in header.machine_facts],
    }
    rules = rules_for(header.format)
    doc = sarif_document(rule_descriptors(rules), [], properties)
    text = json.dumps(doc, indent=2)
    at = text.index(_RESULTS)
    write(text[: at + len(_RESULTS) - 1])
    index = {rule.id: i for i, rule in enumerate(rules)}
    encoder = FindingEncoder()
    sep = "\n        "
    for batch in batches:
        results = _results(batch, index, encoder)
        if results:
            write(sep + ",\n        ".join(results))
            sep = ",\n        "
    write(("\n      ]" if sep != "\n        " else "]") + text[at + len(_RESULTS) :] + "\n")


def render_sarif(report: Report) -> str:
    report = for_unicode(report)  # valid UTF-8 for any file name
    parts: list[str] = []
    stream_sarif(header_of(report), map(FindingBatch.of, report.findings), Tally.of(report), parts.append)
    return "".join(parts)
