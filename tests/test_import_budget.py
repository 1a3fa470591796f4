"""Each command imports what it needs, within a stated budget (issues 35 §4, 38 §3).

A command line is run in a child through ``aoti_shim.cli.main`` (as the console script
does), and the modules it leaves in ``sys.modules`` are counted: all of them, and the
package's own. Before the imports went lazy, ``--version`` loaded 247 modules and
``check --help`` 221 (``python -c pass``: 33), the whole checker for one escaping helper
and a version string. Budgets sit a little above today's figures, so a module that
drags the checker back in fails here, not in a user's start-up time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

_COUNT = """
import json, sys
from aoti_shim.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
names = sorted(sys.modules)
print(json.dumps(names), file=sys.__stderr__)
"""

# command line -> (budget of all modules, budget of aoti_shim's, today's figures: all, own).
BUDGETS: dict[tuple[str, ...], tuple[int, int, str]] = {
    ("--version",): (100, 6, "today 88 modules, 4 of aoti_shim; was 247, 100+"),
    ("check", "--help"): (140, 20, "today 128, 14 of aoti_shim; was 221"),
    ("scan", "--help"): (140, 20, "today 125, 13 of aoti_shim; was 225"),
}
# Modules no parser may load: the ELF reader, the rules, the loader model, the formats.
HEAVY = (
    "aoti_shim.checks.elf.image",
    "aoti_shim.checks.rules.table",
    "aoti_shim.checks.loader.bindings",
    "aoti_shim.checks.formats",
    "aoti_shim.checks.check.run",
)


def _own(names: list[str]) -> list[str]:
    """The modules of ``names`` that are aoti-shim's own."""
    return [n for n in names if n == "aoti_shim" or n.startswith("aoti_shim.")]


def _modules_after(*argv: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _COUNT, *argv], capture_output=True, text=True, timeout=120)
    last = done.stderr.strip().splitlines()[-1]
    names: list[str] = json.loads(last)
    return names


@pytest.mark.parametrize("argv", sorted(BUDGETS), ids=" ".join)
def test_a_command_line_imports_within_its_budget(argv: tuple[str, ...]) -> None:
    names = _modules_after(*argv)
    own = _own(names)
    budget, own_budget, today = BUDGETS[argv]
    print(f"{' '.join(argv)}: {len(names)} modules, {len(own)} of aoti_shim ({today})")
    assert len(own) <= own_budget, own
    assert len(names) <= budget, names
    assert not [n for n in own if n in HEAVY], own


def test_a_scan_imports_no_reference_reader_and_no_hash(tmp_path: Path) -> None:
    # A scan reads no --against reference, hashes nothing for its text report and (of ELF
    # files) reads no Mach-O or PE file: the snapshot and wheel readers, OpenSSL (2 ms) and
    # the native readers and judge were a quarter of its start-up.
    names = _modules_after("scan", str(tmp_path))
    own = _own(names)
    print(f"scan EMPTY: {len(names)} modules, {len(own)} of aoti_shim (today 182, 53; was 224, 83)")
    skipped = (
        "aoti_shim.checks.references.reference",
        "aoti_shim.checks.snapshot.record",
        "aoti_shim.checks.native.judge",
        "aoti_shim.checks.native.image",
        "aoti_shim.checks.macho.facts",
        "aoti_shim.checks.pe.facts",
        "hashlib",
        "_hashlib",
    )
    assert not [n for n in names if n in skipped], names
    assert len(names) <= 190 and len(own) <= 58, names


def test_the_build_backend_imports_no_checker_until_a_hook_checks() -> None:
    code = "import json, sys, aoti_shim.build; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    names = json.loads(done.stdout)
    # get_requires_for_build_* and build_sdist only pass settings on (today 22 of aoti_shim, was 100+).
    assert not [n for n in names if n in HEAVY or n.startswith("aoti_shim.plugin.gate")], names
    assert len([n for n in names if n.startswith("aoti_shim")]) <= 26


def test_a_clean_check_imports_no_snapshot_environment_or_hash_reader(
    checker_libs: dict[str, Path], torch_lib: Path
) -> None:
    # A check of a shim against a torch lib/ folder reads no snapshot and no environment:
    # the snapshot reader (gzip, json, OpenSSL's hashlib), scan's environment reader (csv,
    # glob) and difflib were 19 of its 197 modules and a tenth of its time (issue 35 §4).
    names = _modules_after("check", "--shim", str(checker_libs["clean_shim"]), "--against", str(torch_lib))
    own = _own(names)
    print(f"clean check: {len(names)} modules, {len(own)} of aoti_shim (today 178, 55; was 197, 60)")
    skipped = (
        "aoti_shim.checks.snapshot.record",
        "aoti_shim.checks.scan.environment",
        "hashlib",
        "gzip",
        "difflib",
        "csv",
    )
    assert "aoti_shim.checks.check.run" in names  # it did check
    assert not [n for n in names if n in skipped], names
    assert len(names) <= 184 and len(own) <= 58, names
