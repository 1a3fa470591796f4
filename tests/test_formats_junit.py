"""checks/formats/junit.py: a test case per rule and library, failed by its blocking findings;
properties and the output of warnings."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from aoti_shim.checks.formats import render
from aoti_shim.checks.formats.junit import junit_document
from aoti_shim.checks.rules.table import ELF_RULES as RULES  # an ELF report lists the ELF rules
from formats_support import (
    AGAINST,
    F_COLLISION,
    F_EXPORT,
    F_RUNTIME,
    MODEL,
    SHIM,
    sample_report,
)


def test_junit_has_a_case_per_rule_and_library_failed_by_its_blocking_findings() -> None:
    two = sample_report(
        (F_EXPORT, F_EXPORT._replace(symbol="aoti_torch_clone", message="and clone"), F_COLLISION, F_RUNTIME)
    )
    root = ET.fromstring(render(two, "junit"))
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "aoti-shim check"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == (str(2 * len(RULES)), "2", "0")
    props = [(p.get("name"), p.get("value")) for p in suite.iter("property")]
    assert props == [("against torch", AGAINST.describe())]
    cases = {(c.get("classname"), c.get("name")): c for c in suite.findall("testcase")}
    assert set(cases) == {(f"aoti-shim.{r.id}", a) for r in RULES for a in (SHIM, MODEL)}
    export = cases[("aoti-shim.UNPREFIXED_EXPORT", SHIM)].find("failure")
    assert export is not None and export.attrib == {"message": "2 finding(s)", "type": "UNPREFIXED_EXPORT"}
    assert export.text == ("aoti_torch_get_dim: exports aoti_torch_get_dim without the prefix\n"
                           "aoti_torch_clone: and clone")
    collision = cases[("aoti-shim.COLLISION", SHIM)].find("failure")
    assert (
        collision is not None
        and collision.get("message") == "1 finding(s)"
        and collision.text == "c10_thing: libc10.so exports it too"
    )
    warned = cases[("aoti-shim.REEXPORTED_RUNTIME", MODEL)]
    assert warned.find("failure") is None
    assert warned.findtext("system-out") == "warning: _ZSt4cout: re-exports the C++ runtime"
    quiet = [c for key, c in cases.items() if key[0] not in ("aoti-shim.UNPREFIXED_EXPORT", "aoti-shim.COLLISION",
                                                             "aoti-shim.REEXPORTED_RUNTIME")]
    assert all(len(c) == 0 for c in quiet)
    assert cases[("aoti-shim.COLLISION", MODEL)].find("failure") is None  # same rule, other library


def test_junit_without_against_has_no_properties() -> None:
    root = ET.fromstring(render(sample_report((), against=()), "junit"))
    assert root.find("testsuite/properties") is None and root.find("testsuite").get("failures") == "0"


def test_junit_properties_and_the_output_of_several_warnings() -> None:
    warned = (F_RUNTIME, F_RUNTIME._replace(symbol="_ZSt4cerr", message="and cerr"))
    root = ET.fromstring(render(sample_report(warned), "junit"))
    assert [(p.get("name"), p.get("value")) for p in root.iterfind("testsuite/properties/property")] == [
        ("against torch", AGAINST.describe())]
    case = root.find("testsuite/testcase[@classname='aoti-shim.REEXPORTED_RUNTIME'][@name='models/model.so']")
    assert case is not None and case.find("failure") is None
    assert case.findtext("system-out") == "warning: _ZSt4cout: re-exports the C++ runtime\nwarning: _ZSt4cerr: and cerr"


def test_a_junit_document_has_a_case_per_rule_and_artifact_and_counts_its_failures() -> None:
    warned = F_RUNTIME._replace(artifact="a.so", symbol="w\x01")
    blocked = F_EXPORT._replace(artifact="a.so")
    text = junit_document(
        "suite", [("k", "v")], ["UNPREFIXED_EXPORT", "REEXPORTED_RUNTIME"], ["a.so", "b\x02.so"], [blocked, warned],
        classname="x.", text=lambda s: s.replace("\x01", "?").replace("\x02", "!"),
    )
    suite = ET.fromstring(text).find("testsuite")
    assert suite is not None
    counts = (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("errors"))
    assert counts == ("suite", "4", "1", "0")
    cases = [(c.get("classname"), c.get("name")) for c in suite.iter("testcase")]
    assert cases == [
        ("x.UNPREFIXED_EXPORT", "a.so"), ("x.UNPREFIXED_EXPORT", "b!.so"),
        ("x.REEXPORTED_RUNTIME", "a.so"), ("x.REEXPORTED_RUNTIME", "b!.so"),
    ]
    failure = suite.find("testcase/failure")
    assert failure is not None and failure.get("type") == "UNPREFIXED_EXPORT"
    assert failure.text == f"{blocked.symbol}: {blocked.message}"
    assert suite.findtext("testcase/system-out") == f"warning: w?: {warned.message}"
    assert junit_document("empty", [], [], [], [], classname="x.").count("<properties") == 0
