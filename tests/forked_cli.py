"""A command run in a forked child of the test process: a real process, at fork's cost.

A ``python -m aoti_shim`` child costs over a second of imports on a loaded machine; the
hostile-paths matrix runs hundreds of commands. A fork shares the test's imports and is
still a process of its own: its own file descriptors 0-2 (files the test reads back), its
own environment, its own capabilities (none over file modes, for "unreadable" as root), its own process group
(killed whole on a hang, children included), and its exit status.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

# Root reads and writes any file: as root, "unreadable" cases run without the two
# capabilities that override file modes (the child stays uid 0, so the interpreter under
# /root still loads; mode 000 and a 0555 folder then answer EACCES as to anyone).
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2
_PR_CAPBSET_DROP = 24
_CAP_VERSION_3 = 0x20080522
# The child's status when it raised past the command's own handling (a bug): never a valid answer.
CRASHED = 99


@dataclass(frozen=True)
class Ran:
    code: int | None  # None: it hung and was killed
    stdout: str
    stderr: str
    seconds: float


def _drop_dac_capabilities() -> None:
    """Drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from this process and what it executes."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # children too (needs CAP_SETPCAP; best effort)
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # two {effective, permitted, inheritable} sets
    if libc.capget(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    mask = ~((1 << CAP_DAC_OVERRIDE) | (1 << CAP_DAC_READ_SEARCH)) & 0xFFFFFFFF
    for i in (0, 1, 2):
        data[i] &= mask
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def _child(call: Callable[[], int], out: int, err: int, env: Mapping[str, str], cwd: Path, without_dac: bool) -> None:
    """Runs in the child: never returns."""
    code = CRASHED
    try:
        os.setpgid(0, 0)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.stdin = open(0, encoding="utf-8", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        if without_dac:
            _drop_dac_capabilities()
        try:
            code = int(call())
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001 - the forked child reports any escape, then exits
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def run_forked(
    call: Callable[[], int], *, env: Mapping[str, str], cwd: Path, without_dac: bool = False, timeout: float = 10.0
) -> Ran:
    """``call()`` in a forked child; a child still running after ``timeout`` seconds is killed
    with its process group and reported as hung (``code`` None)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _child(call, out.fileno(), err.fileno(), env, cwd, without_dac)
        try:
            os.setpgid(pid, pid)  # as the child does: whichever runs first, the group exists before a kill
        except OSError:
            pass
        code: int | None = None
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() - start > timeout:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.005)
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        return Ran(code, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"), seconds)
