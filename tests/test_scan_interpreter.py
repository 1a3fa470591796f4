"""The running interpreter's site folders (checks/scan/interpreter.py), held to what the
interpreter itself says: ``site.getsitepackages()`` and a child's ``sys.path``."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

from aoti_shim.checks.scan.interpreter import running_interpreter, site_entries


def test_the_running_interpreters_folders_are_its_site_packages_and_no_stdlib() -> None:
    here = running_interpreter()
    assert here.executable == sys.executable
    assert here.version == "{}.{}.{}".format(*sys.version_info[:3])
    real = {os.path.realpath(f) for f in here.folders}
    # Whatever site.py put on sys.path for this interpreter's own site-packages is there...
    assert {os.path.realpath(p) for p in site.getsitepackages() if os.path.isdir(p)} <= real
    # ...and the standard library is not: no distribution installs into it.
    assert os.path.realpath(sysconfig.get_paths()["stdlib"]) not in real


def test_site_entries_drop_the_stdlib_files_repeats_and_non_strings(tmp_path: Path) -> None:
    std, a, b = tmp_path / "std", tmp_path / "a", tmp_path / "b"
    for d in (std, a, b):
        d.mkdir()
    archive = tmp_path / "x.zip"
    archive.write_bytes(b"PK\5\6" + bytes(18))
    entries: list[object] = [str(a), "", None, str(std), str(archive), str(b), str(a), str(tmp_path / "gone")]
    assert site_entries(entries, [str(std)]) == (str(a), str(b))


def test_a_child_interpreter_agrees_on_its_site_packages() -> None:
    code = "import site, sys; print('\\n'.join(p for p in site.getsitepackages()))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    said = {os.path.realpath(p) for p in done.stdout.split() if os.path.isdir(p)}
    assert said <= {os.path.realpath(f) for f in running_interpreter().folders}
