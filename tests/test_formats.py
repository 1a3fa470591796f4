"""What every output format of ``check`` says alike (checks/formats/__init__.py): rendering
streamed equals rendering the whole report, batches of several findings say what one
finding a batch says, the words shared by every format, and the format names. Each format's
own fields are in tests/test_formats_<module>.py; schemas and escaping have tests of their own
(test_hostile_names.py, test_finding_batches.py)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from aoti_shim.checks.formats import FORMATS, render, render_stream
from aoti_shim.checks.report.model import (
    BLOCKING,
    AgainstSource,
    FindingBatch,
    MachineFact,
    Tally,
    header_of,
)
from aoti_shim.errors import UsageError
from formats_support import (
    BATCH_FINDINGS,
    BATCHES,
    SHIM,
    sample_report,
    streamed_output,
)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_streamed_rendering_equals_the_whole_report_rendering(fmt: str) -> None:
    report = sample_report()
    tally = Tally.of(report)
    parts: list[str] = []
    render_stream(fmt, header_of(report), map(FindingBatch.of, report.findings), tally, parts.append)
    assert "".join(parts) == render(report, fmt)


def test_an_unknown_format_names_the_choices() -> None:
    with pytest.raises(UsageError, match=r"unknown format 'xml'; choose from text, json, sarif, github, junit"):
        render(sample_report(), "xml")


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_batches_of_several_findings_say_what_one_finding_a_batch_says(fmt: str) -> None:
    report = sample_report(BATCH_FINDINGS)
    assert streamed_output(fmt, BATCHES, report) == render(report, fmt)
    assert streamed_output(fmt, BATCHES, report, color=True, verbose=True) == render(
        report, fmt, color=True, verbose=True
    )
    nothing = sample_report(())
    assert streamed_output(fmt, (), nothing) == render(nothing, fmt)


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_json_and_sarif_pass_over_an_empty_batch(fmt: str) -> None:
    # No rule yields one, but the writers take care not to write an empty line or a
    # stray comma for it.
    empty = FindingBatch("UNPREFIXED_EXPORT", BLOCKING, SHIM, [], [], [])
    report = sample_report(BATCH_FINDINGS)
    assert streamed_output(fmt, (empty, *BATCHES[:1], empty, *BATCHES[1:], empty), report) == render(report, fmt)
    nothing = sample_report(())
    assert streamed_output(fmt, (empty, empty), nothing) == render(nothing, fmt)


def test_a_torch_of_no_known_version_and_one_library_in_words() -> None:
    found = AgainstSource("snap", "/s/torch.json", "search path", None, 1)
    assert found.describe() == "torch version unknown at /s/torch.json (from search path; 1 library)"
    report = sample_report((), against=(found,))
    assert (
        "against: snap: torch version unknown at /s/torch.json (from search path; 1 library)"
        in render(report).splitlines()
    )
    assert render(report, "github").splitlines()[0] == (
        "::notice title=aoti-shim against::snap: torch version unknown at /s/torch.json (from search path; 1 library)"
    )
    (prop,) = ET.fromstring(render(report, "junit")).iter("property")
    assert prop.attrib == {"name": "against snap", "value": found.describe()}


@pytest.mark.parametrize(
    ("inferred_from", "words"), [("models", "the models' imports"), ("shims", "the shims' exports")]
)
def test_every_format_that_names_the_prefix_says_where_it_came_from(inferred_from: str, words: str) -> None:
    report = sample_report((), prefix_source="inferred", prefix_inferred_from=inferred_from)
    assert render(report).splitlines()[0] == f"prefix: myrt_ (inferred from {words})"
    summary = render(report, "github").splitlines()
    assert f"Prefix: `myrt_` (inferred from {words}); 0 blocking, 0 warning(s), 1 suppressed." in summary
    streamed: list[str] = []
    render_stream("github", header_of(report), iter(()), Tally.of(report), streamed.append)
    assert "".join(streamed) == render(report, "github")


def test_a_message_is_escaped_when_it_is_the_batch_s_only_unsafe_text() -> None:
    # LOAD_FAILURE names no symbol and no related library, yet its message quotes the
    # loader's reason, which can hold a dependency's hostile file name.
    failure = FindingBatch(
        "LOAD_FAILURE", BLOCKING, SHIM, [""], ["cannot be loaded: libx\x1b[2J.so: no such file"], [None]
    )
    report = sample_report(
        tuple(failure.findings()), suppressed=(), unused_suppressions=(), skipped_rules=(), against=()
    )
    for fmt, shown in (("text", "  blocking  LOAD_FAILURE  cannot be loaded: libx\\x1b[2J.so: no such file"),
                       ("json", '"message": "cannot be loaded: libx\\u001b[2J.so: no such file"')):
        out = streamed_output(fmt, (failure,), report)
        assert shown in out and "\x1b" not in out, fmt


# -- the loader facts taken from the checking machine ------------------------------------

FACTS = (
    MachineFact("platform", "haswell", False),
    MachineFact("hwcaps", "glibc-hwcaps/x86-64-v3:glibc-hwcaps/x86-64-v2:tls:haswell", True),
    MachineFact("ld_so_cache", "/etc/ld.so.cache", True),
    MachineFact("libc", "/lib/x86_64-linux-gnu/libc.so.6", True),
)


def test_every_format_names_the_loader_facts_taken_from_this_machine() -> None:
    """Issue 33 §2: a wheel checked in CI is deployed elsewhere; the report says which loader
    facts were this machine's. Text: one line of those used (all with -v); JSON and SARIF:
    every fact, its value and whether it was used."""
    report = sample_report(machine_facts=FACTS)
    # The legacy subfolders named too: b6b8817 said only the glibc-hwcaps levels, though a
    # file found in tls/ is what marks the fact used as often.
    line = (
        "loader facts from this machine: glibc-hwcaps x86-64-v3:x86-64-v2 and the legacy hwcap subfolders "
        "tls:haswell, the ld.so cache, libc /lib/x86_64-linux-gnu/libc.so.6 (another machine's loader may differ)"
    )
    assert render(report).splitlines()[3] == line
    loud = render(report, verbose=True).splitlines()
    assert loud[3] == line.replace("this machine: ", "this machine: $PLATFORM haswell (not used), ")
    want = [{"fact": f.fact, "value": f.value, "used": f.used} for f in FACTS]
    assert json.loads(render(report, "json"))["machine_facts"] == want
    assert json.loads(render(report, "sarif"))["runs"][0]["properties"]["machineFacts"] == want
    assert json.loads(streamed_output("json", (), report))["machine_facts"] == want
    # GitHub: the text's line, as a notice and in the step summary; JUnit: every fact, as JSON's.
    github = render(report, "github")
    assert f"::notice title=aoti-shim loader facts::{line}" in github.splitlines()
    assert "\nLoader facts from this machine: glibc-hwcaps x86-64-v3:x86-64-v2 and the legacy" in github
    suite = ET.fromstring(render(report, "junit")).find("testsuite")
    assert suite is not None
    assert [(p.get("name"), p.get("value")) for p in suite.iter("property") if "machine" in (p.get("name") or "")] == [
        ("machine fact platform", "haswell (not used)"), *((f"machine fact {f.fact}", f.value) for f in FACTS[1:])
    ]
    # libc alone is no news (every process has one): no line without -v; nor without facts.
    legacy_only = sample_report(machine_facts=(MachineFact("hwcaps", "tls:x86_64", True),))
    assert "glibc-hwcaps (none) and the legacy hwcap subfolders tls:x86_64 (another" in render(legacy_only)
    libc_only = sample_report(machine_facts=(MachineFact("platform", "x86_64", False), FACTS[-1]))
    assert not any(x.startswith("loader facts") for x in render(libc_only).splitlines())
    assert any(x.startswith("loader facts") for x in render(libc_only, verbose=True).splitlines())
    assert not any(x.startswith("loader facts") for x in render(sample_report(), verbose=True).splitlines())
    assert "oader facts" not in render(libc_only, "github") and "machine fact" in render(libc_only, "junit")
