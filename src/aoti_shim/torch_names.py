"""The shim-ABI functions torch's shim headers declare, over every supported torch.

A blob compiled by one torch calls the shim functions that torch's headers declare;
the rename header must rename every one, whichever supported torch made the blob.
``torch_shim_names.txt`` (shipped beside this module) is the union over the torch
releases its header lines name, for every device (``c/shim*.h`` and
``generated/c_shim_*.h``; the headers are the same in every platform's wheel).

Regenerate it from torch wheels (headers read from the archive, nothing installed) or
torch include folders::

    python -m aoti_shim.torch_names torch-2.11.0-*.whl ... -o src/aoti_shim/torch_shim_names.txt
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import stat
import sys
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from aoti_shim.errors import AotiShimError, InputError
from aoti_shim.paths import REINSTALL
from aoti_shim.stable_abi import (
    render_section,
    stable_exports_of_snapshot,
    stable_names_in_include,
    stable_names_in_wheel,
)
from aoti_shim.torch_location import version_in

SHIPPED_LIST = Path(__file__).resolve().parent / "torch_shim_names.txt"
# Relative to torch's include folder.
SHIM_HEADER_DIR = PurePosixPath("torch/csrc/inductor/aoti_torch")
SHIM_HEADER_GLOBS = ("c/shim*.h", "generated/c_shim_*.h")

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
# A name directly followed by "(" is a function declaration (or a call in an inline
# body, which names a declared function too); typedef'd function pointer types are
# followed by ")" and so are left alone. Shim ABI is every such ``aoti_*`` function, not
# only the ``aoti_torch_*`` spelling: ``c/shim.h`` declares ``aoti_record_function_start``
# and ``_end`` too (libtorch exports them; profiled blobs import them).
_FUNCTION_NAME = re.compile(r"\b(aoti_(?:torch|record_function)_[A-Za-z0-9_]+)\s*\(")
_WHEEL_VERSION = re.compile(r"^torch-([^-]+)-")
_VERSIONS_LINE = "# torch releases: "
_STABLE_START = "# Stable C ABI functions"


def declared_functions(source: str) -> set[str]:
    """Every shim-ABI function name (``aoti_torch_*``, ``aoti_record_function_*``) in a
    C/C++ header text (comments ignored)."""
    return set(_FUNCTION_NAME.findall(_COMMENT.sub(" ", source)))


def _is_shim_header(relative: PurePosixPath) -> bool:
    return any(fnmatch.fnmatchcase(relative.as_posix(), pattern) for pattern in SHIM_HEADER_GLOBS)


def shim_headers(torch_include: Path) -> list[Path]:
    """torch's AOTInductor shim headers under its include folder (a one-line error if none)."""
    base = torch_include / SHIM_HEADER_DIR
    try:
        headers = sorted(p for pattern in SHIM_HEADER_GLOBS for p in base.glob(pattern))
    except OSError as e:  # a folder on the way that cannot be searched
        raise InputError(f"{base}: cannot read: {e.strerror or e}") from None
    if not headers:
        raise InputError(f"no AOTInductor shim headers under {base}")
    return headers


def aoti_names_in_include(torch_include: Path) -> set[str]:
    """The names the AOTInductor shim headers of one torch include folder declare."""
    names: set[str] = set()
    for header in shim_headers(torch_include):
        names |= declared_functions(_read_header(header))
    return names


def names_in_include(torch_include: Path) -> set[str]:
    """Every shim-ABI name one torch include folder declares: its AOTInductor shim headers'
    and its stable C ABI's (``torch/csrc/stable/c``)."""
    return aoti_names_in_include(torch_include) | stable_names_in_include(torch_include)


def _read_header(header: Path) -> str:
    # O_NONBLOCK and a regular-file test: a FIFO named like a shim header would block forever.
    try:
        fd = os.open(header, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InputError(f"{header}: not a regular file")
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read()
        finally:
            os.close(fd)
    except OSError as e:
        raise InputError(f"{header}: cannot read: {e.strerror or e}") from None
    return data.decode("utf-8", errors="replace")


def names_in_wheel(wheel: Path) -> set[str]:
    """The names the shim headers inside a torch wheel declare, read from the archive."""
    import zipfile  # lazy: the checker reads the shipped list, never a wheel's headers

    prefix = PurePosixPath("torch/include") / SHIM_HEADER_DIR
    names: set[str] = set()
    found = 0
    try:
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.infolist():
                path = PurePosixPath(member.filename)
                if member.is_dir() or prefix not in path.parents or not _is_shim_header(path.relative_to(prefix)):
                    continue
                found += 1
                names |= declared_functions(archive.read(member).decode("utf-8", errors="replace"))
    except (OSError, zipfile.BadZipFile) as e:
        raise InputError(f"{wheel}: cannot read the wheel: {e}") from None
    if not found:
        raise InputError(f"{wheel}: no AOTInductor shim headers in the wheel")
    return names


def torch_version_of(source: Path) -> str:
    """The torch version a wheel's file name or an include folder's ``torch/version.py`` gives."""
    match = _WHEEL_VERSION.match(source.name)
    if source.suffix == ".whl" and match:
        return match.group(1)
    version = version_in(source.parent)  # <site>/torch/include -> <site>/torch/version.py
    if version is not None:
        return version
    raise InputError(f"{source}: cannot tell which torch version it is")


class ShippedNames(NamedTuple):
    """The shipped union and the torch releases it was made from."""

    names: frozenset[str]
    versions: tuple[str, ...]

    @property
    def span(self) -> str:
        """``2.11 to 2.15``: the releases' first and last minor version, as texts say it."""
        minors = [".".join(v.split("+")[0].split(".")[:2]) for v in self.versions]
        return f"{minors[0]} to {minors[-1]}" if minors else "no release"


def render_list(per_version: dict[str, set[str]], stable: list[str] | None = None) -> str:
    """The shipped list's text: a header naming each release and its count, then the union;
    then ``stable``, the stable C ABI's lines (stable_abi.render_section)."""
    union = set().union(*per_version.values()) if per_version else set()
    ordered = sorted(per_version, key=_version_key)
    lines = [
        "# Shim-ABI functions (aoti_torch_*, aoti_record_function_*) declared by torch's AOTInductor shim headers",
        f"# ({SHIM_HEADER_DIR}/{{{', '.join(SHIM_HEADER_GLOBS)}}}, every device), the union over",
        "# the torch releases below. Generated by `python -m aoti_shim.torch_names`: do not edit.",
        _VERSIONS_LINE + ", ".join(ordered),
        *(f"#   {v}: {len(per_version[v])} names" for v in ordered),
        *sorted(union),
        *(stable or []),
    ]
    return "\n".join(lines) + "\n"


def _aoti_part(text: str) -> str:
    """The AOTInductor part of a list's text: everything before its stable C ABI lines."""
    cut = text.find(_STABLE_START)
    return text if cut < 0 else text[:cut]


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0]))


@lru_cache(maxsize=4)
def shipped_names(path: Path = SHIPPED_LIST) -> ShippedNames:
    """The names and releases of the list shipped with aoti-shim. Package data: read once
    per process (a check asks for it from three rules)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise AotiShimError(
            f"{path}: cannot read the shipped torch name list ({e.strerror or e}): {REINSTALL}"
        ) from None
    versions: tuple[str, ...] = ()
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith(_VERSIONS_LINE):
            versions = tuple(v.strip() for v in line[len(_VERSIONS_LINE) :].split(","))
        elif line and not line.startswith("#"):
            names.add(line.strip())
    return ShippedNames(frozenset(names), versions)


def _stable_lines(sources: list[Path], snapshots: list[Path], notes: list[str]) -> list[str]:
    """The stable C ABI's lines: each source's stable/c headers, each snapshot's exports."""
    per_version: dict[str, set[str]] = {}
    for source in sources:
        names = stable_names_in_wheel(source) if source.suffix == ".whl" else stable_names_in_include(source)
        if names:
            per_version.setdefault(torch_version_of(source), set()).update(names)
    declared = set().union(*per_version.values()) if per_version else set()
    for snapshot in snapshots:
        version, names = stable_exports_of_snapshot(snapshot, declared)
        per_version.setdefault(version, set()).update(names)
        notes = [
            *notes,
            f"stable {version}: the exports its snapshot ({snapshot.name}) records that the headers read declare",
        ]
    return render_section(per_version, notes, _version_key) if per_version else []


def main(argv: Sequence[str] | None = None) -> int:
    from aoti_shim.atomic import write_text_atomically  # lazy: the checker only reads the list

    parser = argparse.ArgumentParser(
        prog="python -m aoti_shim.torch_names",
        description="Write the union of the shim-ABI names that torch wheels' (or include folders') shim headers "
        "and stable C ABI headers declare.",
    )
    parser.add_argument("sources", nargs="+", type=Path, metavar="WHEEL|INCLUDE_DIR")
    parser.add_argument("-o", "--output", type=Path, default=SHIPPED_LIST, help="default: the shipped list")
    parser.add_argument("--stable-snapshot", type=Path, action="append", default=[], metavar="SNAPSHOT",
                        help="also a release known by its exports only (checks/snapshots/*.json.gz)")
    parser.add_argument("--note", action="append", default=[], help="a line for the stable section's header comment")
    parser.add_argument("--stable-only", action="store_true",
                        help="keep the output's AOTInductor names; replace only its stable C ABI section")
    args = parser.parse_args(argv)

    try:
        stable = _stable_lines(args.sources, args.stable_snapshot, args.note)
        if args.stable_only:
            text = _aoti_part(args.output.read_text(encoding="utf-8")) + "\n".join(stable) + "\n"
        else:
            per_version: dict[str, set[str]] = {}
            for source in args.sources:
                names = names_in_wheel(source) if source.suffix == ".whl" else aoti_names_in_include(source)
                per_version.setdefault(torch_version_of(source), set()).update(names)
            text = render_list(per_version, stable)
        write_text_atomically(args.output, text, what="torch name list")
    except (AotiShimError, OSError) as e:
        print(f"aoti_shim.torch_names: error: {e}", file=sys.stderr)
        return e.exit_code if isinstance(e, AotiShimError) else 1
    count = len([line for line in text.splitlines() if line and not line.startswith("#")])
    print(f"wrote {args.output}: {count} names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
