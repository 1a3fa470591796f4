"""The install lines the tool's hints print, for the route that works today.

aoti-shim is on no package index yet, so ``pip install "aoti-shim[torch]"`` fails for a
user who has aoti-shim installed from a clone. An extra's requirements are read from
this installation's own metadata and named one by one: ``pip install`` of those works
next to the installed aoti-shim, and says what the extra holds.
"""

from __future__ import annotations

import importlib.metadata as metadata
import shlex

DIST = "aoti-shim"


def requirements(extra: str) -> tuple[str, ...]:
    """The requirements the extra adds, without their markers (empty when unknown)."""
    from packaging.requirements import Requirement

    try:
        specs = metadata.distribution(DIST).requires or ()
    except metadata.PackageNotFoundError:
        return ()
    found: list[str] = []
    for spec in specs:
        req = Requirement(spec)
        if req.marker is None or not req.marker.evaluate({"extra": extra}):
            continue
        if req.marker.evaluate({"extra": ""}):
            continue  # a dependency of aoti-shim itself (an environment marker only)
        req.marker = None
        found.append(str(req))
    return tuple(found)


def install_line(extra: str) -> str:
    """``pip install`` of what the extra adds (``aoti-shim[extra]`` once it is on an index)."""
    wanted = requirements(extra)
    if not wanted:
        return f'pip install "aoti-shim[{extra}]" (its extra)'
    return "pip install " + " ".join(shlex.quote(r) for r in wanted)
