"""Findings and the report every output format is rendered from."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import NamedTuple

from aoti_shim.errors import EXIT_BLOCKING, EXIT_OK, EXIT_WARNINGS, UsageError

BLOCKING = "blocking"
WARNING = "warning"
FAIL_ON_CHOICES = ("blocking", "any", "never")


def validate_fail_on(value: object, source: str = "--fail-on") -> str:
    """``value`` when it is one of FAIL_ON_CHOICES, else a UsageError naming ``source``."""
    if not isinstance(value, str) or value not in FAIL_ON_CHOICES:
        raise UsageError(f"{source} must be one of {', '.join(FAIL_ON_CHOICES)}, not {value!r}")
    return value


class Finding(NamedTuple):
    """One finding. A tuple, not a dataclass: a check may stream 75k of them."""

    rule: str
    severity: str
    artifact: str
    symbol: str
    message: str
    related: str | None = None

    @property
    def fingerprint(self) -> str:
        """Stable across builds: no addresses, only what the finding is about."""
        return fingerprint(self.rule, self.artifact, self.symbol)


class FindingBatch(NamedTuple):
    """Findings of one rule about one library, as columns: the unit findings stream in.

    A rule with many findings (COLLISION: a shim built from libtorch's sources collides in
    70k names) yields them a thousand at a time, so every stage after it (suppressions,
    escaping, the formats) runs its per-finding work in C loops over columns, not in a
    Python step per finding. Columns are of equal length."""

    rule: str
    severity: str
    artifact: str
    symbols: Sequence[str]
    messages: Sequence[str]
    related: Sequence[str | None]

    @classmethod
    def of(cls, finding: Finding) -> FindingBatch:
        return cls(
            finding.rule, finding.severity, finding.artifact, (finding.symbol,), (finding.message,), (finding.related,)
        )

    @classmethod
    def from_findings(cls, findings: Sequence[Finding]) -> FindingBatch:
        """A batch of findings that share rule, severity and artifact (the first one's)."""
        first = findings[0]
        return cls(
            first.rule,
            first.severity,
            first.artifact,
            [f.symbol for f in findings],
            [f.message for f in findings],
            [f.related for f in findings],
        )

    @property
    def size(self) -> int:
        return len(self.symbols)

    def findings(self) -> Iterator[Finding]:
        return map(
            Finding._make,
            zip(
                repeat(self.rule),
                repeat(self.severity),
                repeat(self.artifact),
                self.symbols,
                self.messages,
                self.related,
            ),
        )


def findings_of(batches: Iterable[FindingBatch]) -> Iterator[Finding]:
    """The findings of a stream of batches, one by one."""
    return chain.from_iterable(batch.findings() for batch in batches)


def fingerprint_prefix(rule: str, artifact: str) -> bytes:
    """What a fingerprint hashes before the symbol: the rule and the artifact's file name."""
    return "\0".join((rule, artifact.rsplit("/", 1)[-1], "")).encode("utf-8", "surrogatepass")


def fingerprint(rule: str, artifact: str, symbol: str, related: str | None = None) -> str:
    """A finding's stable id. ``related`` joins the hash where one library's findings of a
    rule differ only by it (scan's HIJACK: one finding per captured consumer, each with the
    consumer's first captured name, often the same): code scanning merges results that
    share a fingerprint."""
    import hashlib  # here: OpenSSL's load is 2 ms of start-up, and text reports hash nothing

    key = fingerprint_prefix(rule, artifact) + symbol.encode("utf-8", "surrogatepass")
    if related is not None:
        key += b"\0" + related.encode("utf-8", "surrogatepass")
    return hashlib.sha256(key).hexdigest()[:32]


@dataclass(frozen=True)
class Suppressed:
    """A finding a suppression table matched, with the reason it gives."""

    finding: Finding
    reason: str


@dataclass(frozen=True)
class CheckedArtifact:
    """A checked file, as reports name it, and its role."""

    display: str
    role: str  # "shim" or "model"


@dataclass(frozen=True)
class MachineFact:
    """A loader fact taken from the machine the check ran on (its ``$PLATFORM``, hwcaps
    levels, ld.so cache, system folders, libc...): a deployment on another machine may
    differ. ``used``: it decided where a checked library's need was found, or that it was
    found nowhere (or, for libc, the process has it)."""

    fact: str
    value: str
    used: bool

    def as_dict(self) -> dict[str, object]:
        return {"fact": self.fact, "value": self.value, "used": self.used}


@dataclass(frozen=True)
class AgainstSource:
    """One --against item: what it named, what was read, and the torch it is."""

    item: str  # as given: "torch", a path, a snapshot name
    path: str  # the folder, wheel or snapshot read
    found_by: str  # "argument", "$AOTI_SHIM_TORCH", "search path" or "installed torch of ..."
    torch_version: str | None
    libraries: int

    def describe(self) -> str:
        version = f"torch {self.torch_version}" if self.torch_version else "torch version unknown"
        return (f"{version} at {self.path} (from {self.found_by}; {self.libraries} "
            f"librar{'y' if self.libraries == 1 else 'ies'})")

    def as_dict(self) -> dict[str, object]:
        return {
            "item": self.item,
            "path": self.path,
            "found_by": self.found_by,
            "torch_version": self.torch_version,
            "libraries": self.libraries,
        }


@dataclass(frozen=True)
class Report:
    """A whole check: its findings, prefix, files and references, as the formats render it."""

    findings: tuple[Finding, ...]
    prefix: str | None
    prefix_source: str  # "given", "inferred" or "none"
    artifacts: tuple[CheckedArtifact, ...]
    references: tuple[str, ...]
    suppressed: tuple[Suppressed, ...] = ()
    unused_suppressions: tuple[str, ...] = ()
    skipped_rules: tuple[tuple[str, str], ...] = field(default=())
    # "shims" (their exports) or "models" (their imports, when no shim was given)
    prefix_inferred_from: str = ""
    # What each --against item was (every format names the torch it checked against).
    against: tuple[AgainstSource, ...] = ()
    # The loader facts taken from the checking machine.
    machine_facts: tuple[MachineFact, ...] = ()
    # The checked files' format ("elf", "macho", "pe"): which rules the report lists.
    format: str = "elf"

    @property
    def prefix_origin(self) -> str:
        """Where the prefix came from, in words."""
        return prefix_origin(self.prefix_source, self.prefix_inferred_from)

    @property
    def blocking(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == BLOCKING)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == WARNING)

    def exit_code(self, fail_on: str = "blocking") -> int:
        """Bits 8 (blocking) and 4 (warnings), limited to what ``fail_on`` counts."""
        return exit_bits(bool(self.blocking), bool(self.warnings), fail_on)


@dataclass(frozen=True)
class Header:
    """What a report says before its findings: known before the first one is found."""

    prefix: str | None
    prefix_source: str
    artifacts: tuple[CheckedArtifact, ...]
    references: tuple[str, ...]
    skipped_rules: tuple[tuple[str, str], ...] = ()
    prefix_inferred_from: str = ""
    against: tuple[AgainstSource, ...] = ()
    # ELF files in --shim/--model folders and wheels that are no shared library: (name, kind).
    ignored: tuple[tuple[str, str], ...] = ()
    # The loader facts taken from the checking machine.
    machine_facts: tuple[MachineFact, ...] = ()
    # The checked files' format ("elf", "macho", "pe"): which rules the report lists.
    format: str = "elf"

    @property
    def prefix_origin(self) -> str:
        """Where the prefix came from, in words."""
        return prefix_origin(self.prefix_source, self.prefix_inferred_from)


class Tally:
    """What a stream of findings added up to: counts, and the suppressed ones (which are
    reported, so kept). Complete once the stream is exhausted."""

    def __init__(self) -> None:
        self.blocking = 0
        self.warnings = 0
        self.suppressed: list[Suppressed] = []
        self.unused_suppressions: tuple[str, ...] = ()

    def count(self, finding: Finding | FindingBatch) -> None:
        n = finding.size if isinstance(finding, FindingBatch) else 1
        if finding.severity == BLOCKING:
            self.blocking += n
        else:
            self.warnings += n

    def exit_code(self, fail_on: str = "blocking") -> int:
        return exit_bits(self.blocking > 0, self.warnings > 0, fail_on)

    @classmethod
    def of(cls, report: Report) -> Tally:
        tally = cls()
        for finding in report.findings:
            tally.count(finding)
        tally.suppressed = list(report.suppressed)
        tally.unused_suppressions = report.unused_suppressions
        return tally


def exit_bits(blocking: bool, warnings: bool, fail_on: str) -> int:
    """The exit status of a check: bit 8 for blocking findings, bit 4 for warnings when
    ``fail_on`` is "any"; 0 whatever was found when it is "never"."""
    validate_fail_on(fail_on)
    code = EXIT_OK
    if fail_on == "never":
        return code
    if blocking:
        code |= EXIT_BLOCKING
    if fail_on == "any" and warnings:
        code |= EXIT_WARNINGS
    return code


def prefix_origin(source: str, inferred_from: str) -> str:
    if source == "inferred":
        where = "the models' imports" if inferred_from == "models" else "the shims' exports"
        return f"inferred from {where}"
    return {"given": "given", "none": "none found"}.get(source, source)


def header_of(report: Report) -> Header:
    return Header(
        report.prefix,
        report.prefix_source,
        report.artifacts,
        report.references,
        report.skipped_rules,
        report.prefix_inferred_from,
        report.against,
        machine_facts=report.machine_facts,
        format=report.format,
    )


def assemble(header: Header, findings: tuple[Finding, ...], tally: Tally) -> Report:
    """The whole report from a stream's header, its findings and its tally: the one place
    that knows which header fields a Report carries (the copies of this had drifted)."""
    return Report(
        findings=findings,
        prefix=header.prefix,
        prefix_source=header.prefix_source,
        prefix_inferred_from=header.prefix_inferred_from,
        artifacts=header.artifacts,
        references=header.references,
        suppressed=tuple(tally.suppressed),
        unused_suppressions=tally.unused_suppressions,
        skipped_rules=header.skipped_rules,
        against=header.against,
        machine_facts=header.machine_facts,
        format=header.format,
    )
