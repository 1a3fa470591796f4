"""JUnit XML: one test case per (rule, artifact); a finding makes it fail."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from aoti_shim.checks.formats.escape import for_terminal
from aoti_shim.checks.report import BLOCKING, Report
from aoti_shim.checks.rules import RULES


def render_junit(report: Report) -> str:
    report = for_terminal(report)  # XML 1.0 allows no control characters, UTF-8 no lone surrogates
    suite = ET.Element("testsuite", name="aoti-shim check")
    if report.against:
        props = ET.SubElement(suite, "properties")
        for source in report.against:
            ET.SubElement(props, "property", name=f"against {source.item}", value=source.describe())
    failures = 0
    cases = 0
    for rule in RULES:
        for art in report.artifacts:
            cases += 1
            case = ET.SubElement(suite, "testcase", classname=f"aoti-shim.{rule.id}", name=art.display)
            hits = [f for f in report.findings if f.rule == rule.id and f.artifact == art.display]
            blocking = [f for f in hits if f.severity == BLOCKING]
            if blocking:
                failures += 1
                fail = ET.SubElement(case, "failure", message=f"{len(blocking)} finding(s)", type=rule.id)
                fail.text = "\n".join(f"{f.symbol}: {f.message}" for f in blocking)
            elif hits:
                out = ET.SubElement(case, "system-out")
                out.text = "\n".join(f"warning: {f.symbol}: {f.message}" for f in hits)
    suite.set("tests", str(cases))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
