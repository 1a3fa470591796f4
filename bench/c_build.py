"""A bench's C helper, built at run time by the system C compiler: one home for how it is
called and how its failure reads (one line, as every bench error)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from aoti_shim.errors import AotiShimError, UsageError


def build_c(source: str, folder: Path, stem: str, compiler: str, what: str, flags: list[str]) -> Path:
    """``source`` written to ``folder/stem.c`` and built there into ``folder/stem`` (``flags``
    say whether a program or a shared library); ``what`` names it in the one-line error."""
    path, output = folder / f"{stem}.c", folder / stem
    try:
        path.write_text(source, encoding="utf-8")
    except OSError as e:
        raise AotiShimError(f"cannot write {what}'s source to {path}: {e.strerror}") from None
    try:
        done = subprocess.run([compiler, "-O2", "-o", str(output), str(path), *flags],
                              capture_output=True, text=True, timeout=120)
    except OSError as e:
        raise UsageError(f"cannot run the C compiler {compiler!r}: {e.strerror}") from None
    except subprocess.TimeoutExpired:
        raise AotiShimError(f"{compiler} took over 120 s to build {what}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise AotiShimError(f"{compiler} could not build {what}: {last}")
    return output
