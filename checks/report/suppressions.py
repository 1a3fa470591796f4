"""A TOML file of justified exceptions: rule, symbol glob, artifact glob, reason."""

from __future__ import annotations

import fnmatch
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from aoti_shim.checks.report.model import Finding, FindingBatch, Suppressed, Tally
from aoti_shim.errors import UsageError


def _toml() -> Any:
    """tomllib (tomli before 3.11), imported when a file is read: most checks have none."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib


@dataclass(frozen=True)
class Suppression:
    """One [[suppress]] table: the findings it matches and why."""

    rule: str
    symbol: str
    artifact: str
    reason: str

    def matches(self, finding: Finding) -> bool:
        return (
            self.rule in (finding.rule, "*")
            and fnmatch.fnmatchcase(finding.symbol, self.symbol)
            and (
                fnmatch.fnmatchcase(finding.artifact, self.artifact)
                or fnmatch.fnmatchcase(finding.artifact.rsplit("/", 1)[-1], self.artifact)
            )
        )

    def describe(self) -> str:
        return f"{self.rule} {self.symbol} in {self.artifact} ({self.reason})"


# A suppressions file is a handful of tables; anything far larger is a mistake or an attack
# (a FIFO would hang the check, /dev/zero exhaust memory).
MAX_FILE = 1 << 20
KEYS = ("rule", "symbol", "artifact", "reason")
TABLES = ("suppress",)


def _unknown(names: Iterable[str], known: Iterable[str], what: str, where: str) -> None:
    known = tuple(known)
    for name in sorted(names):
        if name not in known:
            import difflib  # lazy: only a misspelt key needs it

            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"
            raise UsageError(f"{where}: unknown {what} {name!r}{hint}")


def parse(entries: Iterable[object], source: str, known_rules: Iterable[str]) -> tuple[Suppression, ...]:
    known = set(known_rules) | {"*"}
    out = []
    for i, entry in enumerate(entries):
        where = f"{source}: suppression {i + 1}"
        if not isinstance(entry, dict):
            raise UsageError(f"{where}: must be a table")
        _unknown(entry, KEYS, "key", where)
        rule = entry.get("rule")
        reason = entry.get("reason")
        if not isinstance(rule, str) or rule not in known:
            raise UsageError(f"{where}: 'rule' must be one of {', '.join(sorted(known))}")
        if not isinstance(reason, str) or not reason.strip():
            raise UsageError(f"{where}: a non-empty 'reason' is required")
        symbol = entry.get("symbol", "*")
        artifact = entry.get("artifact", "*")
        if not isinstance(symbol, str) or not isinstance(artifact, str):
            raise UsageError(f"{where}: 'symbol' and 'artifact' must be strings (globs)")
        if rule == "*" and _matches_anything(symbol) and _matches_anything(artifact):
            # It would silence every rule everywhere: the gate would always say OK.
            raise UsageError(f"{where}: rule = \"*\" needs a 'symbol' or an 'artifact' pattern")
        out.append(Suppression(rule=rule, symbol=symbol, artifact=artifact, reason=reason.strip()))
    return tuple(out)


# Names of every shape a finding can carry: one character, a shim name, a mangled C++ name,
# a path, a wheel member, a control character. (A library-level finding's symbol is empty; a
# pattern matching all of these but that is still "everything" for a gate.)
_PROBES = ("a", "Z", "aoti_torch_empty_strided", "_ZNSt6vectorIiE", "/x/lib.so", "d.whl!p/lib.so", "\n")


def _matches_anything(pattern: str) -> bool:
    """True for a glob that matches names of every shape ('*', '**', '?*', '*[!]]*'...):
    with rule = "*" it would silence every finding."""
    return all(fnmatch.fnmatchcase(probe, pattern) for probe in _PROBES)


def load(path: str, known_rules: Iterable[str]) -> tuple[Suppression, ...]:
    """Read ``[[suppress]]`` tables from a TOML file: a regular file of at most MAX_FILE bytes."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise UsageError(f"{path}: cannot read suppressions: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise UsageError(f"{path}: suppressions must be a regular file")
            raw = f.read(MAX_FILE + 1)
    except OSError as e:
        raise UsageError(f"{path}: cannot read suppressions: {e.strerror or e}") from None
    if len(raw) > MAX_FILE:
        raise UsageError(f"{path}: suppressions file is larger than {MAX_FILE >> 10} KiB")
    toml = _toml()
    try:
        data = toml.loads(raw.decode("utf-8"))
    except toml.TOMLDecodeError as e:
        raise UsageError(f"{path}: invalid TOML: {e}") from None
    except RecursionError:
        raise UsageError(f"{path}: invalid TOML: nested too deeply") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: invalid TOML: not UTF-8 text (byte {e.start})") from None
    _unknown(data, TABLES, "table", path)
    entries = data.get("suppress", [])
    if not isinstance(entries, list):
        raise UsageError(f"{path}: 'suppress' must be an array of tables ([[suppress]])")
    return parse(entries, path, known_rules)


def stream(
    batches: Iterable[FindingBatch], suppressions: tuple[Suppression, ...], tally: Tally
) -> Iterator[FindingBatch]:
    """The findings no suppression matches, counted into ``tally`` as they pass; the
    suppressed ones and the unused suppressions land in ``tally`` too."""
    if not suppressions:
        for batch in batches:
            tally.count(batch)
            yield batch
        return
    used: set[int] = set()
    for batch in batches:
        kept: list[Finding] = []
        for finding in batch.findings():
            for i, sup in enumerate(suppressions):
                if sup.matches(finding):
                    used.add(i)
                    tally.suppressed.append(Suppressed(finding=finding, reason=sup.reason))
                    break
            else:
                kept.append(finding)
        if kept:
            kept_batch = batch if len(kept) == batch.size else FindingBatch.from_findings(kept)
            tally.count(kept_batch)
            yield kept_batch
    tally.unused_suppressions = tuple(sup.describe() for i, sup in enumerate(suppressions) if i not in used)
