"""Findings and the report every output format is rendered from."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from aoti_shim.errors import EXIT_BLOCKING, EXIT_OK, EXIT_WARNINGS, UsageError

BLOCKING = "blocking"
WARNING = "warning"
FAIL_ON_CHOICES = ("blocking", "any", "never")


def validate_fail_on(value: object, source: str = "--fail-on") -> str:
    """``value`` when it is one of FAIL_ON_CHOICES, else a UsageError naming ``source``."""
    if not isinstance(value, str) or value not in FAIL_ON_CHOICES:
        raise UsageError(f"{source} must be one of {', '.join(FAIL_ON_CHOICES)}, not {value!r}")
    return value


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    artifact: str
    symbol: str
    message: str
    related: str | None = None

    @property
    def fingerprint(self) -> str:
        """Stable across builds: no addresses, only what the finding is about."""
        key = "\0".join((self.rule, self.artifact.rsplit("/", 1)[-1], self.symbol))
        return hashlib.sha256(key.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Suppressed:
    finding: Finding
    reason: str


@dataclass(frozen=True)
class CheckedArtifact:
    display: str
    role: str  # "shim" or "model"


@dataclass(frozen=True)
class Report:
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

    @property
    def prefix_origin(self) -> str:
        """Where the prefix came from, in words."""
        if self.prefix_source == "inferred":
            where = "the models' imports" if self.prefix_inferred_from == "models" else "the shims' exports"
            return f"inferred from {where}"
        return {"given": "given", "none": "none found"}.get(self.prefix_source, self.prefix_source)

    @property
    def blocking(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == BLOCKING)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == WARNING)

    def exit_code(self, fail_on: str = "blocking") -> int:
        """Bits 8 (blocking) and 4 (warnings), limited to what ``fail_on`` counts."""
        validate_fail_on(fail_on)
        code = EXIT_OK
        if fail_on == "never":
            return code
        if self.blocking:
            code |= EXIT_BLOCKING
        if fail_on == "any" and self.warnings:
            code |= EXIT_WARNINGS
        return code
