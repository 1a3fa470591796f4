"""The running interpreter's site folders: where a wheel's members install beside other
distributions, for scan's default environment and the check's loader model. Its own module:
the check needs it on every run, and none of the environment reader's imports."""

from __future__ import annotations

import os
import sys
import sysconfig
from dataclasses import dataclass


@dataclass(frozen=True)
class InterpreterPaths:
    """An interpreter, its version, and the folders distributions install into."""

    executable: str
    version: str
    folders: tuple[str, ...]


def site_entries(path: list[object], stdlib: list[object]) -> tuple[str, ...]:
    """The folders of ``sys.path`` that may hold distributions: not the standard library,
    not zips, not the current folder, each once."""
    std = {os.path.realpath(p) for p in stdlib if isinstance(p, str) and p}
    out: list[str] = []
    for entry in path:
        if not isinstance(entry, str) or not entry:
            continue
        real = os.path.realpath(entry)
        if real in std or not os.path.isdir(real):
            continue
        out.append(os.path.abspath(entry))
    return tuple(dict.fromkeys(out))


def running_interpreter() -> InterpreterPaths:
    paths = sysconfig.get_paths()
    stdlib: list[object] = [paths.get("stdlib", ""), paths.get("platstdlib", "")]
    stdlib += [os.path.join(p, "lib-dynload") for p in list(stdlib) if isinstance(p, str) and p]
    # sys.path[0] is the folder of the script that started us (the console script's bin/,
    # or the current folder under -m): not part of the environment.
    entries: list[object] = list(sys.path[1:])
    return InterpreterPaths(sys.executable, "{}.{}.{}".format(*sys.version_info[:3]), site_entries(entries, stdlib))
