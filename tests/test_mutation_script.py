"""docs/mutation.sh stages each run into a folder of its own.

It removed a fixed ``${TMPDIR}/aoti-shim-mutation`` on start, so a second run on one
machine deleted the first one's stage under it. Its dry mode (AOTI_SHIM_MUTATION_DRY=1)
runs the script's own stage set-up and holds the stage until standard input closes, so two
runs can be held at once here, without mutmut.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "docs" / "mutation.sh"


def _dry_run(tmp_path: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(tmp_path), "AOTI_SHIM_MUTATION_DRY": "1"}
    env.pop("AOTI_SHIM_MUTATION_STAGE", None)
    env.pop("AOTI_SHIM_MUTATION_KEEP", None)
    return subprocess.Popen(
        ["bash", str(SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def _stage_of(run: subprocess.Popen[str]) -> Path:
    assert run.stdout is not None
    line = run.stdout.readline().strip()
    assert line, run.stderr.read() if run.stderr else ""
    return Path(line)


def test_two_runs_at_once_get_two_stages_and_neither_removes_the_other(tmp_path: Path) -> None:
    first = _dry_run(tmp_path)
    second = _dry_run(tmp_path)
    try:
        a, b = _stage_of(first), _stage_of(second)
        assert a != b
        assert a.parent == b.parent == tmp_path
        (a / "mutants").mkdir()  # the first run's work, while the second one starts and ends
        _, err = second.communicate(timeout=60)
        assert second.returncode == 0, err
        assert not b.exists()  # the second run cleaned up its own stage on exit...
        assert (a / "mutants").is_dir()  # ...and only its own
    finally:
        first.communicate(timeout=60)
    assert first.returncode == 0
    assert not a.exists()


def test_an_interrupted_run_removes_its_stage(tmp_path: Path) -> None:
    run = _dry_run(tmp_path)
    stage = _stage_of(run)
    assert stage.is_dir()
    run.terminate()  # SIGTERM to bash, waiting in `read`
    run.communicate(timeout=60)
    assert run.returncode == 143
    assert not stage.exists()
