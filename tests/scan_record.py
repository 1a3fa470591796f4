"""A scan's facts and findings recorded to JSON, and read back into the report every format
renders from: how a real environment's report is tested without its wheels.

Record (run from the repository, the wheels downloaded once; see the fixture's "made_by"):

    python tests/scan_record.py OUT.json WHEEL...

The record keeps what the text report reads: each library's shim-ABI names (long lists cut
to the names the findings mention), the findings, each HIJACK's counts and the providers
table; not the binding model's tables (the findings are recorded, not judged again).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from aoti_shim.checks.report.model import Finding
from aoti_shim.checks.scan.judge import Hijack, LibraryFacts, ProviderRow, Scanned, ScannedDistribution
from aoti_shim.checks.scan.run import ScanReport, ScanSettings, run_scan

_FACT_FIELDS = ("display", "kind", "owner", "distribution", "shim_exports", "shim_imports", "runtime_exports",
                "cuda_exports", "is_model", "symbols", "needed")


# Name lists longer than this are cut to the names the findings mention (torch's 500 shim
# names, a consumer's imports): the roles need one, the providers table is recorded whole.
KEEP = 80


def _library(lib: LibraryFacts, mentioned: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {name: getattr(lib, name) for name in _FACT_FIELDS}
    for name in ("shim_exports", "shim_imports"):
        names = out[name]
        if len(names) > KEEP:
            out[name] = [n for n in names if n in mentioned] or list(names[:1])
    return out


def record(report: ScanReport, made_by: str, inputs: dict[str, str]) -> dict[str, Any]:
    s = report.scanned
    mentioned = {x.symbol for x in report.findings}
    return {
        "made_by": made_by,
        "inputs_sha256": inputs,
        "description": s.description,
        "site_folders": list(s.site_folders),
        "distributions": [
            {"name": d.name, "version": d.version, "location": d.location, "editable": d.editable, "source": d.source,
             "libraries": [_library(lib, mentioned) for lib in d.libraries]}
            for d in s.distributions
        ],
        "unowned": [_library(lib, mentioned) for lib in s.unowned],
        "ignored": [list(x) for x in s.ignored],
        "programs": list(s.programs),
        "findings": [list(x) for x in report.findings],
        "hijacks": [list(h) for h in report.hijacks],
        "providers": [[r.distribution, r.library, r.prefix, r.names] for r in report.providers],
    }


def _facts(d: dict[str, Any]) -> LibraryFacts:
    return LibraryFacts(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


def load(path: Path) -> ScanReport:
    """The recorded report (no suppressions: the record holds none)."""
    doc = json.loads(path.read_text())
    scanned = Scanned(
        description=doc["description"],
        site_folders=tuple(doc["site_folders"]),
        distributions=tuple(
            ScannedDistribution(d["name"], d["version"], d["location"], d["editable"], d["source"],
                                tuple(map(_facts, d["libraries"])))
            for d in doc["distributions"]
        ),
        unowned=tuple(map(_facts, doc["unowned"])),
        ignored=tuple((a, b) for a, b in doc["ignored"]),
        programs=tuple(doc["programs"]),
    )
    return ScanReport(
        scanned=scanned,
        providers=tuple(ProviderRow(*r) for r in doc["providers"]),
        findings=tuple(Finding(*x) for x in doc["findings"]),
        hijacks=tuple(Hijack(*h) for h in doc["hijacks"]),
    )


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main(argv: list[str]) -> int:
    out, wheels = argv[0], argv[1:]
    report = run_scan(ScanSettings(paths=tuple(wheels)))
    made_by = "python tests/scan_record.py " + " ".join([os.path.basename(out), *map(os.path.basename, wheels)])
    doc = record(report, made_by, {os.path.basename(w): _sha256(w) for w in wheels})
    # One line per library and finding: small, and a diff shows what changed.
    lines = ["{"]
    for i, (key, value) in enumerate(doc.items()):
        comma = "," if i < len(doc) - 1 else ""
        if isinstance(value, list) and value:
            items = ",\n  ".join(json.dumps(v) for v in value)
            lines.append(f" {json.dumps(key)}: [\n  {items}\n ]{comma}")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}{comma}")
    Path(out).write_text("\n".join([*lines, "}"]) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
