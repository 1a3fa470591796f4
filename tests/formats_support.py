"""One known report and its findings, and batches of several findings, for the tests of
check's formats (tests/test_formats*.py) and of the report model."""

from __future__ import annotations

from aoti_shim.checks.formats import render_stream
from aoti_shim.checks.report.model import (
    BLOCKING,
    WARNING,
    AgainstSource,
    CheckedArtifact,
    Finding,
    FindingBatch,
    Report,
    Suppressed,
    Tally,
    header_of,
)
from aoti_shim.checks.rules.table import ELF_RULES as RULES  # the sample report is ELF

SHIM, MODEL = "lib/libshim.so", "models/model.so"
F_EXPORT = Finding(
    "UNPREFIXED_EXPORT", BLOCKING, SHIM, "aoti_torch_get_dim", "exports aoti_torch_get_dim without the prefix"
)
F_COLLISION = Finding("COLLISION", BLOCKING, SHIM, "c10_thing", "libc10.so exports it too", "libc10.so")
F_RUNTIME = Finding("REEXPORTED_RUNTIME", WARNING, MODEL, "_ZSt4cout", "re-exports the C++ runtime")
F_HIDDEN = Finding("UNPREFIXED_IMPORT", BLOCKING, MODEL, "aoti_torch_empty", "imports it unprefixed")
AGAINST = AgainstSource("torch", "/t/torch/lib", "argument", "2.13.0", 3)


def sample_report(findings: tuple[Finding, ...] = (F_EXPORT, F_COLLISION, F_RUNTIME), **kw: object) -> Report:
    base: dict[str, object] = dict(
        findings=findings,
        prefix="myrt_",
        prefix_source="given",
        artifacts=(CheckedArtifact(SHIM, "shim"), CheckedArtifact(MODEL, "model")),
        references=("/t/torch/lib/libtorch_cpu.so",),
        suppressed=(Suppressed(F_HIDDEN, "known, issue 9"),),
        unused_suppressions=("MANGLED_SHIM in *.so",),
        skipped_rules=(("LOAD_FAILURE", "no reference library"),),
        against=(AGAINST,),
    )
    base.update(kw)
    return Report(**base)


def rule_index(rule: str) -> int:
    return [r.id for r in RULES].index(rule)


# A rule's findings about one library arrive as columns (FindingBatch); render() goes
# one finding per batch. Several per batch, a related column that mixes names and None, and
# texts that need JSON escaping.
B_COLLISION = FindingBatch(
    "COLLISION",
    BLOCKING,
    SHIM,
    ["c10_a", "c10_b", "c10_c"],
    ["libc10.so exports it too", "libtorch_cpu.so exports it too", 'say "c"\\é\x01'],
    ["libc10.so", None, "libtorch_cpu.so"],
)
B_RUNTIME = FindingBatch(
    "REEXPORTED_RUNTIME", WARNING, MODEL, ["_ZSt4cout", "_ZSt4cerr"], ["re-exports it", "and this"], [None, None]
)
B_WHOLE = FindingBatch("NOT_A_SHIM", WARNING, MODEL, [""], ["exports no aoti_torch_* name"], [None])
BATCHES = (B_COLLISION, B_RUNTIME, B_WHOLE)
BATCH_FINDINGS = (
    Finding("COLLISION", BLOCKING, SHIM, "c10_a", "libc10.so exports it too", "libc10.so"),
    Finding("COLLISION", BLOCKING, SHIM, "c10_b", "libtorch_cpu.so exports it too", None),
    Finding("COLLISION", BLOCKING, SHIM, "c10_c", 'say "c"\\é\x01', "libtorch_cpu.so"),
    Finding("REEXPORTED_RUNTIME", WARNING, MODEL, "_ZSt4cout", "re-exports it"),
    Finding("REEXPORTED_RUNTIME", WARNING, MODEL, "_ZSt4cerr", "and this"),
    Finding("NOT_A_SHIM", WARNING, MODEL, "", "exports no aoti_torch_* name"),
)


def streamed_output(fmt: str, batches: tuple[FindingBatch, ...], report: Report, **kw: bool) -> str:
    tally = Tally()
    for batch in batches:
        tally.count(batch)
    tally.suppressed, tally.unused_suppressions = list(report.suppressed), report.unused_suppressions
    parts: list[str] = []
    render_stream(fmt, header_of(report), iter(batches), tally, parts.append, **kw)
    return "".join(parts)
