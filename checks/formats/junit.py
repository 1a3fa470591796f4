"""JUnit XML: one test case per (rule, artifact); a finding makes it fail."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence

from aoti_shim.checks.formats.escape import for_terminal
from aoti_shim.checks.report.model import BLOCKING, Finding, Report
from aoti_shim.checks.rules.table import rules_for


def junit_document(
    suite_name: str,
    properties: Sequence[tuple[str, str]],
    rule_ids: Iterable[str],
    artifacts: Sequence[str],
    findings: Sequence[Finding],
    *,
    classname: str,
    text: Callable[[str], str] = str,
) -> str:
    """The document of one suite: a case per (rule, artifact), failed by its blocking
    findings, its warnings as output. ``text`` makes names safe for XML where the caller
    has not (XML 1.0 allows no control characters, UTF-8 no lone surrogates)."""
    suite = ET.Element("testsuite", name=suite_name)
    if properties:
        props = ET.SubElement(suite, "properties")
        for name, value in properties:
            ET.SubElement(props, "property", name=name, value=value)
    cases = failures = 0
    for rule in rule_ids:
        for artifact in artifacts:
            cases += 1
            case = ET.SubElement(suite, "testcase", classname=f"{classname}{rule}", name=text(artifact))
            hits = [f for f in findings if f.rule == rule and f.artifact == artifact]
            blocking = [f for f in hits if f.severity == BLOCKING]
            if blocking:
                failures += 1
                fail = ET.SubElement(case, "failure", message=f"{len(blocking)} finding(s)", type=rule)
                fail.text = "\n".join(f"{text(f.symbol)}: {text(f.message)}" for f in blocking)
            elif hits:
                out = ET.SubElement(case, "system-out")
                out.text = "\n".join(f"warning: {text(f.symbol)}: {text(f.message)}" for f in hits)
    suite.set("tests", str(cases))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render_junit(report: Report) -> str:
    report = for_terminal(report)  # XML 1.0 allows no control characters, UTF-8 no lone surrogates
    properties = [(f"against {source.item}", source.describe()) for source in report.against]
    # Every loader fact taken from this machine, as JSON's machine_facts: "(not used)" as text says it.
    properties += [
        (f"machine fact {f.fact}", f.value if f.used else f"{f.value} (not used)") for f in report.machine_facts
    ]
    return junit_document(
        "aoti-shim check",
        properties,
        [rule.id for rule in rules_for(report.format)],
        [art.display for art in report.artifacts],
        report.findings,
        classname="aoti-shim.",
    )
