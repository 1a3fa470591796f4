"""The stable C ABI's ``torch_*`` functions: shim ABI under another spelling.

libtorch exports the C functions ``torch/csrc/stable/c/*.h`` declares (``torch_from_blob``,
``torch_call_dispatcher``...); stable-ABI extensions import them, and torch adds new stable
entry points under ``torch_*`` rather than ``aoti_torch_*``. A slim runtime that defines one
collides with libtorch's exactly as with an ``aoti_torch_*`` name, so the rename header,
``check``, ``scan`` and ``rewrite-imports`` treat them alike. Only names a stable/c header
declares count: libtorch exports other ``torch_*`` C symbols (libtorch_python.so's
``torch_c_dynamo_eval_frame_init``) that are no ABI of anyone's.
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath

from aoti_shim.errors import InputError
from aoti_shim.guard import read_input  # a FIFO named like a header must not block

# Relative to torch's include folder.
STABLE_HEADER_DIR = PurePosixPath("torch/csrc/stable/c")

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
# A name followed by "(": a declaration (or a call in an inline body, which names one too).
_FUNCTION_NAME = re.compile(r"\b(torch_[A-Za-z0-9_]+)\s*\(")
# The stable/c headers of one torch, read from a wheel: bounded, as they are a few KiB.
_MAX_HEADER = 4 << 20


def stable_functions(source: str) -> set[str]:
    """Every ``torch_*`` function name a stable/c header text declares (comments ignored)."""
    return set(_FUNCTION_NAME.findall(_COMMENT.sub(" ", source)))


def stable_names_in_include(torch_include: Path) -> set[str]:
    """The names one torch include folder's stable/c headers declare (none before torch 2.10)."""
    folder = torch_include / STABLE_HEADER_DIR
    try:
        headers = sorted(p for p in folder.glob("*.h")) if folder.is_dir() else []
    except OSError as e:
        raise InputError(f"{folder}: cannot read: {e.strerror or e}") from None
    names: set[str] = set()
    for header in headers:
        names |= stable_functions(read_input(header).decode("utf-8", errors="replace"))
    return names


def stable_names_in_wheel(wheel: Path) -> set[str]:
    """The names the stable/c headers inside a torch wheel declare, read from the archive."""
    prefix = PurePosixPath("torch/include") / STABLE_HEADER_DIR
    names: set[str] = set()
    try:
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.infolist():
                path = PurePosixPath(member.filename)
                if member.is_dir() or path.parent != prefix or path.suffix != ".h" or member.file_size > _MAX_HEADER:
                    continue
                names |= stable_functions(archive.read(member).decode("utf-8", errors="replace"))
    except (OSError, zipfile.BadZipFile) as e:
        raise InputError(f"{wheel}: cannot read the wheel: {e}") from None
    return names


def stable_exports_of_snapshot(snapshot: str | os.PathLike[str], declared: Iterable[str]) -> tuple[str, set[str]]:
    """A snapshot's torch version and the ``torch_*`` names its libraries export that a stable/c
    header of another release declares (for a release whose headers are not at hand: the stable
    ABI only ever adds names, so a release's exports are among a later release's declarations)."""
    from aoti_shim.checks.snapshot import record

    snap = record.read(snapshot)
    known = set(declared)
    found = {n for lib in snap.libraries for n in lib.export_names() if n.startswith("torch_")}
    return snap.torch_version, found & known


def render_section(
    per_version: dict[str, set[str]], notes: Iterable[str], version_key: Callable[[str], tuple[int, ...]]
) -> list[str]:
    """The shipped list's stable-ABI lines: where each release's names came from, then the names."""
    union = set().union(*per_version.values()) if per_version else set()
    ordered = sorted(per_version, key=version_key)
    return [
        f"# Stable C ABI functions (torch_*) declared extern \"C\" by {STABLE_HEADER_DIR}/*.h: libtorch exports",
        "# them, stable-ABI extensions import them, a slim runtime defining one collides as with aoti_torch_*.",
        "# The union over the torch releases below (only names a stable/c header declares):",
        *(f"#   stable {v}: {len(per_version[v])} names" for v in ordered),
        *(f"# {note}" for note in notes),
        *sorted(union),
    ]
