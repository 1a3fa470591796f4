"""checks/formats/text.py: the text report's groups, samples, colours and verdict, for one
known report (tests/formats_support.py)."""

from __future__ import annotations

import pytest

from aoti_shim.checks.formats import render
from aoti_shim.checks.formats.text import SAMPLE, SUPPRESSED_SHOWN
from aoti_shim.checks.report.model import (
    CheckedArtifact,
    FindingBatch,
    Suppressed,
    Tally,
    header_of,
)
from formats_support import (
    F_COLLISION,
    F_EXPORT,
    F_HIDDEN,
    F_RUNTIME,
    MODEL,
    SHIM,
    sample_report,
)


def test_text_says_each_group_and_the_verdict() -> None:
    assert render(sample_report()).splitlines() == [
        "prefix: myrt_ (given)",
        "checked: 1 shim library, 1 model(s) against 1 reference(s)",
        "against: torch: torch 2.13.0 at /t/torch/lib (from argument; 3 libraries)",
        "skipped: LOAD_FAILURE (no reference library)",
        "lib/libshim.so",
        "  blocking  UNPREFIXED_EXPORT  exports aoti_torch_get_dim without the prefix",
        "  blocking  COLLISION          libc10.so exports it too",
        "models/model.so",
        "  warning  REEXPORTED_RUNTIME  re-exports the C++ runtime",
        "suppressed: UNPREFIXED_IMPORT aoti_torch_empty in models/model.so (known, issue 9)",
        "unused suppression: MANGLED_SHIM in *.so",
        "FAILED: 2 blocking, 1 warning(s), 1 suppressed",
    ]


def test_text_verdicts_counts_and_colours() -> None:
    warnings_only = sample_report((F_RUNTIME,), suppressed=(), unused_suppressions=(), skipped_rules=(), against=())
    assert render(warnings_only).splitlines()[-1] == "WARNINGS: 0 blocking, 1 warning(s), 0 suppressed"
    clean = sample_report(
        (), suppressed=(), prefix=None, prefix_source="none", artifacts=(CheckedArtifact(SHIM, "shim"),) * 2
    )
    lines = render(clean).splitlines()
    assert lines[:2] == ["prefix: - (none found)", "checked: 2 shim libraries, 0 model(s) against 1 reference(s)"]
    assert lines[-1] == "OK: 0 blocking, 0 warning(s), 0 suppressed"
    red, yellow, green, dim, reset = "\033[31m", "\033[33m", "\033[32m", "\033[2m", "\033[0m"
    coloured = render(sample_report(), color=True).splitlines()
    assert coloured[3] == f"{dim}skipped: LOAD_FAILURE (no reference library){reset}"
    assert coloured[5] == f"{red}  blocking  UNPREFIXED_EXPORT  exports aoti_torch_get_dim without the prefix{reset}"
    assert coloured[8] == f"{yellow}  warning  REEXPORTED_RUNTIME  re-exports the C++ runtime{reset}"
    assert coloured[-1] == f"{red}FAILED: 2 blocking, 1 warning(s), 1 suppressed{reset}"
    assert render(warnings_only, color=True).splitlines()[-1].startswith(f"{yellow}WARNINGS: ")
    assert render(clean, color=True).splitlines()[-1] == f"{green}OK: 0 blocking, 0 warning(s), 0 suppressed{reset}"


def test_text_verbose_lists_artifacts_references_and_what_it_did_not_check() -> None:
    from aoti_shim.checks.formats.text import stream_text

    header = header_of(sample_report())
    header = type(header)(**{**header.__dict__, "ignored": (("w.whl!bin/tool", "executable"), ("b/main.o", "object"))})
    quiet: list[str] = []
    stream_text(header, [], Tally(), quiet.append)
    assert quiet[0].splitlines()[3] == (
        "not checked: 2 ELF file(s) in folders or wheels that are no shared library (programs, objects; -v lists them)"
    )
    loud: list[str] = []
    stream_text(header, [], Tally(), loud.append, verbose=True)
    assert loud[0].splitlines()[3:9] == [
        "  shim: lib/libshim.so",
        "  model: models/model.so",
        "  reference: /t/torch/lib/libtorch_cpu.so",
        "  not checked (executable, no shared library): w.whl!bin/tool",
        "  not checked (object, no shared library): b/main.o",
        "skipped: LOAD_FAILURE (no reference library)",
    ]


@pytest.mark.parametrize("count", [1, SAMPLE - 1, SAMPLE, SAMPLE + 1, 3 * SAMPLE])
def test_text_samples_a_group_and_counts_the_rest(count: int) -> None:
    findings = tuple(F_COLLISION._replace(symbol=f"s{i}", message=f"m{i}") for i in range(count))
    # In two batches, so the group is counted across them.
    batches = [
        FindingBatch.from_findings(findings[:2]),
        *(FindingBatch.from_findings(findings[2:]) for _ in [0] if count > 2),
    ]
    from aoti_shim.checks.formats.text import stream_text

    tally = Tally()
    for b in batches:
        tally.count(b)
    out: list[str] = []
    stream_text(header_of(sample_report(())), batches, tally, out.append)
    lines = out[0].splitlines()
    at = lines.index(SHIM)
    shown = min(count, SAMPLE)
    if count == 1:
        assert lines[at + 1] == "  blocking  COLLISION  m0"
        group = lines[at + 1 : at + 2]
    else:
        assert lines[at + 1] == f"  blocking  COLLISION  {count} findings, e.g.:"
        assert lines[at + 2 : at + 2 + shown] == [f"      m{i}" for i in range(shown)]
        more = lines[at + 2 + shown]
        if count > SAMPLE:
            assert more == f"      ... and {count - SAMPLE} more (--format json, sarif or junit lists them all)"
        else:
            assert not more.startswith("      ")
        group = lines[at + 1 : at + 2 + shown + (count > SAMPLE)]
    assert lines[at + 1 + len(group)] == "FAILED: " + f"{count} blocking, 0 warning(s), 0 suppressed"


@pytest.mark.parametrize("count", [SUPPRESSED_SHOWN - 1, SUPPRESSED_SHOWN, SUPPRESSED_SHOWN + 1, SUPPRESSED_SHOWN + 7])
def test_text_shows_a_bounded_list_of_suppressed_findings(count: int) -> None:
    suppressed = tuple(Suppressed(F_HIDDEN._replace(symbol=f"n{i}"), "why") for i in range(count))
    lines = render(sample_report((), suppressed=suppressed, unused_suppressions=())).splitlines()
    listed = [line for line in lines if line.startswith("suppressed: ")]
    shown = min(count, SUPPRESSED_SHOWN)
    assert listed[:shown] == [f"suppressed: UNPREFIXED_IMPORT n{i} in models/model.so (why)" for i in range(shown)]
    assert listed[shown:] == (
        [f"suppressed: ... and {count - SUPPRESSED_SHOWN} more"] if count > SUPPRESSED_SHOWN else []
    )
    assert lines[-1] == f"OK: 0 blocking, 0 warning(s), {count} suppressed"


def test_text_paints_each_line_of_a_group_and_not_the_count_of_the_rest() -> None:
    red, yellow, reset = "\033[31m", "\033[33m", "\033[0m"
    many = tuple(F_COLLISION._replace(symbol=f"s{i}", message=f"m{i}") for i in range(SAMPLE + 2))
    warned = tuple(F_RUNTIME._replace(symbol=f"w{i}", message=f"w{i}") for i in range(2))
    lines = render(sample_report((*many, *warned), suppressed=(), unused_suppressions=()), color=True).splitlines()
    at = lines.index(SHIM)
    assert lines[at + 1 : at + 2 + SAMPLE + 1] == [
        f"{red}  blocking  COLLISION  {SAMPLE + 2} findings, e.g.:{reset}",
        *(f"{red}      m{i}{reset}" for i in range(SAMPLE)),
        "      ... and 2 more (--format json, sarif or junit lists them all)",
    ]
    at = lines.index(MODEL)
    assert lines[at + 1 : at + 4] == [
        f"{yellow}  warning  REEXPORTED_RUNTIME  2 findings, e.g.:{reset}",
        f"{yellow}      w0{reset}",
        f"{yellow}      w1{reset}",
    ]


def test_render_verbose_lists_what_was_checked() -> None:
    lines = render(sample_report(()), verbose=True).splitlines()
    assert lines[3:6] == [
        "  shim: lib/libshim.so",
        "  model: models/model.so",
        "  reference: /t/torch/lib/libtorch_cpu.so",
    ]
    assert "  shim: lib/libshim.so" not in render(sample_report(()))


def test_text_of_models_only_and_of_a_library_with_both_severities() -> None:
    only_models = sample_report((), artifacts=(CheckedArtifact(MODEL, "model"),) * 2)
    assert render(only_models).splitlines()[1] == "checked: 0 shim libraries, 2 model(s) against 1 reference(s)"
    both = sample_report((F_EXPORT, F_RUNTIME._replace(artifact=SHIM)), suppressed=(), unused_suppressions=())
    at = render(both).splitlines().index(SHIM)
    # One column of severities, one of rules, per library.
    assert render(both).splitlines()[at + 1 : at + 3] == [
        "  blocking  UNPREFIXED_EXPORT   exports aoti_torch_get_dim without the prefix",
        "  warning   REEXPORTED_RUNTIME  re-exports the C++ runtime",
    ]
