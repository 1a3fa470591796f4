"""A short report for people: findings grouped per library and rule, each group a count
and a bounded sample (the complete list is in JSON, SARIF and JUnit). Colour only when
asked (the CLI asks on a terminal)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from aoti_shim.checks.report.model import BLOCKING, FindingBatch, Header, MachineFact, Tally
from aoti_shim.checks.rules.table import NO_RENAME_HEADER

_RED, _YELLOW, _GREEN, _DIM, _RESET = "\033[31m", "\033[33m", "\033[32m", "\033[2m", "\033[0m"

# Lines shown per (library, rule) group, and suppressed findings shown in all.
SAMPLE = 5
SUPPRESSED_SHOWN = 20


def _paint(text: str, code: str, color: bool) -> str:
    return f"{code}{text}{_RESET}" if color else text


class _Group:
    __slots__ = ("severity", "count", "sample")

    def __init__(self, severity: str) -> None:
        self.severity = severity
        self.count = 0
        self.sample: list[str] = []


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _fact(fact: MachineFact) -> str:
    if fact.fact == "hwcaps":
        # Both kinds named: a file found in a legacy subfolder (tls/) is no glibc-hwcaps level's.
        folders = [s for s in fact.value.split(":") if s and s != "(none)"]
        levels = [s.split("/", 1)[1] for s in folders if s.startswith("glibc-hwcaps/")]
        legacy = [s for s in folders if not s.startswith("glibc-hwcaps/")]
        said = f"glibc-hwcaps {':'.join(levels) or '(none)'}"
        return f"{said} and the legacy hwcap subfolders {':'.join(legacy)}" if legacy else said
    return {
        "platform": f"$PLATFORM {fact.value}",
        "lib": f"$LIB {fact.value}",
        "LD_LIBRARY_PATH": f"LD_LIBRARY_PATH {fact.value}",
        "ld_so_cache": "the ld.so cache",
        "system_folders": "the system folders",
        "libc": f"libc {fact.value}",
    }.get(fact.fact, f"{fact.fact} {fact.value}")


def machine_line(facts: tuple[MachineFact, ...], verbose: bool) -> list[str]:
    """One line naming the loader facts taken from this machine: those used, when one
    decided where a need was found (libc alone, which every process has, is no news); every
    fact with -v."""
    if not facts or not verbose and not any(f.used and f.fact != "libc" for f in facts):
        return []
    shown = [_fact(f) + ("" if f.used else " (not used)") for f in facts if f.used or verbose]
    return [f"loader facts from this machine: {', '.join(shown)} (another machine's loader may differ)"]


def stream_text(
    header: Header,
    batches: Iterable[FindingBatch],
    tally: Tally,
    write: Callable[[str], object],
    *,
    color: bool = False,
    verbose: bool = False,
) -> None:
    lines = _header_lines(header, color=color, verbose=verbose)
    for artifact, by_rule in _grouped(batches).items():
        lines.append(artifact)
        lines += _artifact_lines(by_rule, color)
    lines += _suppression_lines(tally)
    lines.append(_verdict(header, tally, color))
    write("\n".join(lines) + "\n")


def _header_lines(header: Header, *, color: bool, verbose: bool) -> list[str]:
    """What was checked against what, and what was not checked or judged."""
    lines: list[str] = []
    lines.append(f"prefix: {header.prefix or '-'} ({header.prefix_origin})")
    roles = {"shim": 0, "model": 0}
    for art in header.artifacts:
        roles[art.role] = roles.get(art.role, 0) + 1
    lines.append(
        f"checked: {_plural(roles['shim'], 'shim library', 'shim libraries')}, "
        f"{roles['model']} model(s) against {len(header.references)} reference(s)"
    )
    for source in header.against:
        lines.append(f"against: {source.item}: {source.describe()}")
    lines += machine_line(header.machine_facts, verbose)
    if verbose:
        for art in header.artifacts:
            lines.append(f"  {art.role}: {art.display}")
        for ref in header.references:
            lines.append(f"  reference: {ref}")
    if header.ignored and verbose:
        for name, kind in header.ignored:
            lines.append(f"  not checked ({kind}, no shared library): {name}")
    elif header.ignored:
        lines.append(
            f"not checked: {len(header.ignored)} ELF file(s) in folders or wheels that are no shared library "
            "(programs, objects; -v lists them)"
        )
    for rule, why in header.skipped_rules:
        lines.append(_paint(f"skipped: {rule} ({why})", _DIM, color))
    return lines


def _grouped(batches: Iterable[FindingBatch]) -> dict[str, dict[str, _Group]]:
    """artifact -> rule -> group, in first-seen order. Only counts and samples are kept,
    however many findings stream past."""
    groups: dict[str, dict[str, _Group]] = {}
    for batch in batches:
        by_rule = groups.get(batch.artifact)
        if by_rule is None:
            by_rule = groups[batch.artifact] = {}
        group = by_rule.get(batch.rule)
        if group is None:
            group = by_rule[batch.rule] = _Group(batch.severity)
        group.count += batch.size
        if len(group.sample) < SAMPLE:
            group.sample.extend(batch.messages[: SAMPLE - len(group.sample)])
    return groups


def _artifact_lines(by_rule: dict[str, _Group], color: bool) -> list[str]:
    """One library's groups, severity and rule in aligned columns."""
    lines: list[str] = []
    width_sev = max(len(g.severity) for g in by_rule.values())
    width_rule = max(len(r) for r in by_rule)
    no_header = any(NO_RENAME_HEADER in m for m in getattr(by_rule.get("UNPREFIXED_EXPORT"), "sample", ()))
    for rule, group in by_rule.items():
        code = _RED if group.severity == BLOCKING else _YELLOW
        lead = f"  {group.severity.ljust(width_sev)}  {rule.ljust(width_rule)}  "
        if no_header and rule == "COLLISION":
            # The unprefixed names collide with libtorch's: the one cause UNPREFIXED_EXPORT names.
            where = group.sample[0].rpartition(" is also exported by ")[2] if group.sample else "a reference"
            lines.append(
                _paint(
                    lead
                    + f"{group.count} finding(s): the names the missed rename header left unprefixed are also "
                        f"exported by {where}",
                    code,
                    color,
                )
            )
            continue
        if group.count == 1:
            lines.append(_paint(lead + group.sample[0], code, color))
            continue
        lines.append(_paint(lead + f"{group.count} findings, e.g.:", code, color))
        for message in group.sample:
            lines.append(_paint(f"      {message}", code, color))
        rest = group.count - len(group.sample)
        if rest:
            lines.append(f"      ... and {rest} more (--format json, sarif or junit lists them all)")
    return lines


def _suppression_lines(tally: Tally) -> list[str]:
    lines: list[str] = []
    for s in tally.suppressed[:SUPPRESSED_SHOWN]:
        lines.append(f"suppressed: {s.finding.rule} {s.finding.symbol} in {s.finding.artifact} ({s.reason})")
    if len(tally.suppressed) > SUPPRESSED_SHOWN:
        lines.append(f"suppressed: ... and {len(tally.suppressed) - SUPPRESSED_SHOWN} more")
    for desc in tally.unused_suppressions:
        lines.append(f"unused suppression: {desc}")
    return lines


def _verdict(header: Header, tally: Tally, color: bool) -> str:
    summary = f"{tally.blocking} blocking, {tally.warnings} warning(s), {len(tally.suppressed)} suppressed"
    if any(rule == "COLLISION" for rule, _ in header.skipped_rules):
        # The check that matters most did not run: the verdict says so, never a plain OK.
        summary += "; no collision with libtorch judged (no --against: add --against torch or a snapshot)"
    if tally.blocking:
        return _paint(f"FAILED: {summary}", _RED, color)
    if tally.warnings:
        # Not "OK": with --fail-on any these warnings fail the run.
        return _paint(f"WARNINGS: {summary}", _YELLOW, color)
    return _paint(f"OK: {summary}", _GREEN, color)
