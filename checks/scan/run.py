"""Run a scan: read the environment, judge it, apply the suppressions; the report every
``scan`` format is rendered from."""

from __future__ import annotations

from dataclasses import dataclass

from aoti_shim.checks.inputs.collect import Workspace
from aoti_shim.checks.report import suppressions as suppression_file
from aoti_shim.checks.report.model import BLOCKING, Finding, Suppressed, Tally, exit_bits, findings_of
from aoti_shim.checks.scan.environment import read_environment
from aoti_shim.checks.scan.judge import (
    SCAN_RULES_BY_ID,
    Hijack,
    ProviderRow,
    Scanned,
    evaluate,
    providers,
    scan_environment,
)


@dataclass(frozen=True)
class ScanSettings:
    # Site folders, virtual environments and wheels; none and no python: the running interpreter's.
    paths: tuple[str, ...] = ()
    python: str | None = None
    suppressions: str | None = None


@dataclass(frozen=True)
class ScanReport:
    scanned: Scanned
    providers: tuple[ProviderRow, ...]
    findings: tuple[Finding, ...]
    suppressed: tuple[Suppressed, ...] = ()
    unused_suppressions: tuple[str, ...] = ()
    # Every HIJACK's counts, suppressed ones included: the text report groups the findings by them.
    hijacks: tuple[Hijack, ...] = ()

    @property
    def blocking(self) -> int:
        return sum(1 for f in self.findings if f.severity == BLOCKING)

    @property
    def warnings(self) -> int:
        return len(self.findings) - self.blocking

    def exit_code(self, fail_on: str = "blocking") -> int:
        return exit_bits(self.blocking > 0, self.warnings > 0, fail_on)


def run_scan(settings: ScanSettings) -> ScanReport:
    sups = suppression_file.load(settings.suppressions, SCAN_RULES_BY_ID) if settings.suppressions else ()
    with Workspace() as ws:
        env = read_environment(settings.paths, settings.python, ws)
        # Wheel members stay readable until the workspace goes: read them inside it.
        scanned = scan_environment(env)
    tally = Tally()
    hijacks: list[Hijack] = []
    findings = tuple(findings_of(suppression_file.stream(evaluate(scanned, hijacks), sups, tally)))
    return ScanReport(
        scanned=scanned,
        providers=providers(scanned),
        findings=findings,
        suppressed=tuple(tally.suppressed),
        unused_suppressions=tally.unused_suppressions,
        hijacks=tuple(hijacks),
    )
