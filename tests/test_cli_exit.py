"""The console entry's exit (src/aoti_shim/cli.py ``console``): check and scan end without
the interpreter's teardown (10 ms of a 120 ms clean check), yet every byte of the report is
written, the atexit functions run, and a process with another thread still running, or a
standard stream that cannot be flushed, exits the interpreter's own way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SNAPSHOT = "torch-2.14.1+cu130"  # a shipped snapshot: no torch needed

# A child that sets up what the interpreter's teardown would show (an object whose __del__
# prints), an atexit function, optionally a thread, then runs the console entry.
_CHILD = """
import atexit, gc, sys, threading, time
class Witness:
    def __del__(self):
        print("teardown ran", file=sys.stderr, flush=True)
witness = Witness()
atexit.register(lambda: print(f"atexit ran, gc {gc.isenabled()}", file=sys.stderr, flush=True))
if sys.argv.pop(1) == "thread":
    threading.Thread(target=lambda: (time.sleep(0.5), print("thread done", file=sys.stderr))).start()
from aoti_shim.cli import console
console()
"""


def _console(*argv: str, thread: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _CHILD, "thread" if thread else "-", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_check_writes_its_whole_report_runs_atexit_and_skips_the_teardown(checker_libs: dict[str, Path]) -> None:
    shim = str(checker_libs["clean_shim"])
    done = _console("check", "--shim", shim, "--against", SNAPSHOT, "--format", "json", "-v")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # whole: a cut report is no JSON
    assert report["summary"]["blocking"] == 0 and report["artifacts"], report
    assert "atexit ran, gc False" in done.stderr  # no cyclic collection in a short check
    assert "teardown ran" not in done.stderr


def test_the_verdicts_exit_status_survives_the_fast_exit(checker_libs: dict[str, Path]) -> None:
    done = _console("check", "--shim", str(checker_libs["half_prefixed_shim"]), "--against", SNAPSHOT)
    assert done.returncode == 8, done.stdout + done.stderr
    assert done.stdout.endswith("FAILED: 2 blocking, 0 warning(s), 0 suppressed\n"), done.stdout
    assert "teardown ran" not in done.stderr


def test_another_thread_running_gets_the_interpreters_own_exit(checker_libs: dict[str, Path]) -> None:
    done = _console("check", "--shim", str(checker_libs["clean_shim"]), "--against", SNAPSHOT, thread=True)
    assert done.returncode == 0, done.stderr
    # The interpreter waited for the thread, then tore down as always.
    assert "thread done" in done.stderr and "teardown ran" in done.stderr


def test_other_commands_keep_the_interpreters_exit() -> None:
    done = _console("--version")
    assert done.returncode == 0 and done.stdout.startswith("aoti-shim ")
    assert "atexit ran, gc True" in done.stderr and "teardown ran" in done.stderr
