"""The session's model compiles, started early in a child of their own (issue 34: suite time).

A test that compiles a bundled or zoo model through the session's ``smoke_cache`` says which
with ``@pytest.mark.compiles((model, route[, compile[, folder]]), ...)`` (``folder``: where
a user's model file is, the current folder of its compile, as the test's own run has it). At the session's first test a
child process compiles the union of what the selected tests name, in the order they run,
into that cache: the real compiles, the same cache entries, only earlier, on the core the
suite's mostly single-threaded tests leave idle. A test that reaches a compile still under
way waits on its lock (``aoti_shim.smoke.compile``) rather than compiling it twice, and one
the child failed is compiled again by the test itself, which then reports the error.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

# The child: compile each request in turn; a failure is the test's to find and report.
_CHILD = """
import json, os, sys
from pathlib import Path
from aoti_shim.smoke.compile import CompileRequest, compile_cached
cache = Path(sys.argv[1])
start = os.getcwd()
for model, route, compile, folder in json.loads(sys.argv[2]):
    os.chdir(folder or start)
    try:
        compile_cached(CompileRequest(model, "cpu", route, compile=compile), cache)
    except Exception as error:  # the test compiles it again and reports it
        print(f"prewarm: {model} ({route}, {compile}): {error}", file=sys.stderr)
"""


def wanted(items: Iterable[pytest.Item]) -> list[tuple[str, str, str, str]]:
    """The compiles the ``compiles`` markers of ``items`` name, each once, in test order."""
    out: list[tuple[str, str, str, str]] = []
    for item in items:
        for mark in item.iter_markers("compiles"):
            for spec in mark.args:
                model, route, *rest = spec
                compile = rest[0] if rest else "zero-fallback"
                folder = str(rest[1]) if len(rest) > 1 else ""
                request = (_model(model), route, compile, folder)
                if request not in out:
                    out.append(request)
    return out


def _model(name: str) -> str:
    """A zoo model's name as the smoke takes it (``aoti_shim.smoke.zoo:gpt2``)."""
    if name.startswith("zoo:"):
        from aoti_shim.smoke.zoo import spec

        return spec(name[len("zoo:"):])
    return name


def start(requests: list[tuple[str, str, str, str]], cache: Path, log: Path) -> subprocess.Popen[bytes]:
    """The child compiling ``requests`` into ``cache``, at a lower priority than the tests."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as sink:
        return subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(cache), json.dumps(requests)],
            stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=lambda: os.nice(5),
        )


def stop(child: subprocess.Popen[bytes]) -> None:
    """At the session's end: a child still compiling (a run cut short) is killed with its compiles."""
    if child.poll() is None:
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()
