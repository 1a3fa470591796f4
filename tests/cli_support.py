"""The installed command line in a child process, run one way by every test.

The isolation policy, once: ``-P`` (the child's ``sys.path`` holds no folder of the
checkout or of the test's cwd, so it runs the installed ``aoti_shim`` as a user would);
not the CI job's ``GITHUB_STEP_SUMMARY`` (run in a GitHub job, ``check --format github`` would
write the test's tables into the job's real summary; a test's own summary file still goes through); and no traceback,
ever, on its stderr (the
project's promise: bad input is one line and an exit code).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

CLI = (sys.executable, "-P", "-m", "aoti_shim")
# The CI job's step summary, as this test process found it before any test set its own.
_JOB_SUMMARY = os.environ.get("GITHUB_STEP_SUMMARY")


def _kept(key: str | bytes, value: str | bytes) -> bool:
    return not (os.fsdecode(key) == "GITHUB_STEP_SUMMARY" and os.fsdecode(value) == _JOB_SUMMARY)


def cli(
    *args: str,
    cwd: Path | str | None = None,
    env: Mapping[Any, Any] | None = None,
    timeout: float = 600,
    text: bool = True,
    errors: str | None = None,
    prefix: Sequence[str] = (),
) -> subprocess.CompletedProcess[Any]:
    """``aoti-shim ARGS`` in a child, its output captured; never raises on its exit status.

    ``env`` is the child's whole environment (default: this process's); ``prefix`` goes in
    front of the command (``prlimit ...``); ``text=False`` keeps the output as bytes.
    """
    full = {k: v for k, v in (os.environ if env is None else env).items() if _kept(k, v)}
    done = subprocess.run(
        [*prefix, *CLI, *args],
        capture_output=True,
        text=text,
        errors=errors,
        cwd=cwd,
        env=full,
        timeout=timeout,
        check=False,
    )
    stderr = done.stderr if text else done.stderr.decode("utf-8", "replace")
    assert "Traceback (most recent call last)" not in stderr, stderr
    return done


def one_line_error(done: subprocess.CompletedProcess[str], code: int) -> str:
    """The one line a failed command printed on standard error, its exit status ``code``;
    no traceback on either stream."""
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]
