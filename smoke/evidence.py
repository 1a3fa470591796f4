"""What a smoke run leaves behind besides its verdict: the first error it printed, and
which copy of a runtime library (libcudart) the shim library really bound to.

A failed run's cause is usually printed once, early, by the shims or the model container
(a stream guard refusing a null stream, a CUDA error), and then buried under a Python
traceback; the table keeps that first line, not the last ones.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from aoti_shim.smoke.bindings import Binding

# Lines a shim library or AOTInductor's container prints when something goes wrong.
_ERROR = re.compile(
    r"(?i)(\berror\b|\bfailed\b|\bfailure\b|\binvalid\b|\bterminate called\b|\bwhat\(\)|\babort|\bexception\b"
    r"|\brefused\b|\bunsupported\b|\bcannot\b|\bcould not\b|\bnull\b.*\bstream\b)"
    # A logger's error level: glog's "E1201 12:00:00", ExecuTorch's "E 00:00:01.123", "[E]", "ERROR:".
    r"|^(E\d{4} |E [\w\d:.]|\[E\] |ERROR:)"
)
# Python's own traceback frames: the cause came before them.
_TRACEBACK = re.compile(r"^(Traceback \(most recent call last\):|\s+File \"|\s{4})")

# The runtime libraries whose second copy in a process is worth a line (a drifted version
# of the CUDA runtime next to torch's is a risk; equal versions are harmless).
RUNTIME_SONAMES = ("libcudart.so",)


def first_error_line(log: Path, limit: int = 300) -> str | None:
    """The first line of ``log`` that reads as an error, outside Python traceback frames."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if not line.strip() or _TRACEBACK.match(line):
            continue
        if _ERROR.search(line):
            return line.strip()[:limit]
    return None


def _runpath_dirs(library: Path) -> list[Path]:
    """The folders ``library``'s RUNPATH (or RPATH) names, ``$ORIGIN`` expanded."""
    from aoti_shim.checks.elf.image import ElfImage

    with ElfImage(library) as image:
        paths = image.runpath
    origin = str(library.resolve().parent)
    out: list[Path] = []
    for entry in paths:
        for item in entry.split(":"):
            if item:
                out.append(Path(item.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)))
    return out


def runtime_copies(bindings: Iterable[Binding], shim_library: Path) -> list[str]:
    """One line per runtime library (libcudart) that the shim library bound to a copy other
    than the one its own RUNPATH leads to: another copy was already in the process (torch's)."""
    from aoti_shim.checks.elf.image import ElfImage

    with ElfImage(shim_library) as image:
        needed = [n for n in image.needed if n.startswith(RUNTIME_SONAMES)]
    if not needed:
        return []
    shim_real = os.path.realpath(shim_library)
    used: dict[str, str] = {}  # soname -> the file the shim's calls bound to
    for b in bindings:
        if os.path.realpath(b.source) != shim_real or not b.target.startswith("/"):
            continue
        base = os.path.basename(b.target)
        for soname in needed:
            if base == soname or os.path.basename(os.path.realpath(b.target)).startswith(
                soname.split(".so")[0] + ".so"
            ):
                used.setdefault(soname, b.target)
    notes = []
    dirs = _runpath_dirs(shim_library)
    for soname, target in sorted(used.items()):
        own = next((d / soname for d in dirs if (d / soname).is_file()), None)
        if own is not None and os.path.realpath(own) != os.path.realpath(target):
            notes.append(
                f"{soname}: the shims' calls bound to {target}, a copy already in the process, not their own {own} "
                "(harmless at equal versions, a risk when they drift)"
            )
    return notes
