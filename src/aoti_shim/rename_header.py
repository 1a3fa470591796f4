"""Generate (or check) the rename header that applies the private shim prefix.

The header maps every shim function name ``aoti_torch_X`` to ``<prefix>aoti_torch_X``
with one object-like macro per name, through a two-level token paste so the prefix
macro is expanded before pasting. A macro is not re-expanded inside its own
expansion, so declarations, definitions and calls all end up with the prefixed
name. Without ``AOTI_SHIM_SYMBOL_PREFIX`` the header does nothing.

The name list is never typed by hand: every ``aoti_torch_*`` function that the shim
headers of any supported torch declare (the shipped union, ``torch_shim_names.txt``),
those the installed torch's headers declare, every name in a shim manifest and every
``aoti_torch_*`` function a runtime's own shim headers declare. In the aoti-shim source
tree the manifest and headers default to ``shims/manifest.txt`` and ``shims/include``.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from aoti_shim.arguments import path
from aoti_shim.atomic import destination, write_text_atomically
from aoti_shim.checks.abi.prefix import is_unprefixed
from aoti_shim.errors import EXIT_BLOCKING, EXIT_OK, AotiShimError, InputError, UsageError
from aoti_shim.guard import input_file, input_folder, read_input
from aoti_shim.paths import cmake_dir
from aoti_shim.torch_location import locate
from aoti_shim.torch_names import declared_functions, names_in_include, shipped_names, torch_version_of

__all__ = ["declared_functions", "header_names", "manifest_names", "own_header_names"]

# Relative to the aoti-shim source tree.
DEFAULT_OUTPUT = Path("cmake/include/aoti_shim_rename.h")
DEFAULT_MANIFEST = Path("shims/manifest.txt")
DEFAULT_SHIM_INCLUDE = Path("shims/include")

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_GUARD = "AOTI_SHIM_RENAME_H"
# The include guard of torch's own prefix header, when a torch has one (PyTorch's open PR).
TORCH_PREFIX_GUARD = "AOTI_TORCH_SHIM_SYMBOL_PREFIX_H"
_PASTE_INNER = "AOTI_SHIM_PASTE_"
_PASTE = "AOTI_SHIM_PASTE"
_NAME = "AOTI_SHIM_PREFIXED"


@dataclass(frozen=True)
class RenameSources:
    """Where the names come from; None: that source is not used."""

    torch_include: Path | None
    manifest: Path | None
    shim_include: tuple[Path, ...] = ()  # every folder counts, in the order given
    shipped: bool = True  # the shipped union over the supported torch releases


@dataclass(frozen=True)
class NameList:
    """The names to rename and a one-line account of their origin."""

    names: tuple[str, ...]
    torch_count: int
    own_count: int
    torch_versions: tuple[str, ...] = ()


def _read_text(path: Path, what: str) -> str:
    """A UTF-8 text file, or a one-line InputError (a folder, a FIFO, a dangling link, bad bytes)."""
    data = read_input(path, what=what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{what} {path}: not UTF-8 text (byte {e.start})") from None


def manifest_names(manifest: Path) -> set[str]:
    """Names from a shim manifest: one ``aoti_torch_*`` name per line, ``#`` starts a comment."""
    names: set[str] = set()
    text = _read_text(manifest, "manifest")
    for number, line in enumerate(text.splitlines(), start=1):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        if not _IDENTIFIER.fullmatch(name):
            raise InputError(f"{manifest}:{number}: {name!r} is not a C identifier")
        if not is_unprefixed(name):
            # "#define int ..." would rename far more than a shim.
            raise InputError(f"{manifest}:{number}: {name!r} is not a shim name (aoti_torch_*)")
        names.add(name)
    return names


# A runtime's shim headers: C and C++ headers, and CUDA ones (ExecuTorch's CUDA shims declare in .cuh too).
OWN_HEADER_SUFFIXES = (".h", ".hpp", ".cuh")


def own_headers(shim_include: Path) -> list[Path]:
    """A runtime's own shim headers: ``.h``, ``.hpp``, ``.cuh`` under the folder."""
    input_folder(shim_include, what="--shim-include")
    try:
        # A folder named like a header is read (and refused, one line) as before.
        return sorted(p for p in shim_include.rglob("*") if p.suffix in OWN_HEADER_SUFFIXES)
    except OSError as e:  # a subfolder that cannot be listed
        raise InputError(f"--shim-include {shim_include}: cannot read: {e.strerror or e}") from None


def own_header_names(shim_include: Path) -> set[str]:
    """``aoti_torch_*`` functions a runtime's own shim headers declare."""
    names: set[str] = set()
    for header in own_headers(shim_include):
        names |= declared_functions(_read_text(header, "shim header"))
    return names


def collect_names(sources: RenameSources) -> NameList:
    shipped = shipped_names()
    from_torch = set(shipped.names) if sources.shipped else set()
    if sources.torch_include is not None:
        from_torch |= names_in_include(sources.torch_include)
    ours: set[str] = set()
    if sources.manifest is not None:
        ours |= manifest_names(sources.manifest)
    for folder in sources.shim_include:
        ours |= own_header_names(folder)
    return NameList(
        names=tuple(sorted(from_torch | ours)),
        torch_count=len(from_torch),
        own_count=len(ours - from_torch),
        torch_versions=shipped.versions if sources.shipped else (),
    )


def render_header(names: NameList) -> str:
    versions = ", ".join(names.torch_versions) or "none"
    lines = [
        "/* Generated by `aoti-shim rename-header`: do not edit.",
        f" * {len(names.names)} names: {names.torch_count} declared by torch's shim headers (every device; the stable",
        " * C ABI's torch_* functions of torch/csrc/stable/c too;",
        f" * the union over torch {versions}, and the torch it was generated with),",
        f" * {names.own_count} more listed in the runtime's shim manifest or declared in its shim headers.",
        " * With AOTI_SHIM_SYMBOL_PREFIX=p every name aoti_torch_X (torch_X) below becomes p##aoti_torch_X "
        "(p##torch_X)",
        " * in declarations, definitions and calls alike; without it this header does nothing. */",
        f"#ifndef {_GUARD}",
        f"#define {_GUARD}",
        "#ifdef AOTI_SHIM_SYMBOL_PREFIX",
        "/* Two levels, so AOTI_SHIM_SYMBOL_PREFIX is expanded before it is pasted. */",
        f"#define {_PASTE_INNER}(a, b) a##b",
        f"#define {_PASTE}(a, b) {_PASTE_INNER}(a, b)",
        f"#define {_NAME}(name) {_PASTE}(AOTI_SHIM_SYMBOL_PREFIX, name)",
        "/* torch's own prefix header (aoti_torch/c/shim_symbol_prefix.h, PyTorch's open PR) renames torch's",
        " * names with the same AOTI_SHIM_SYMBOL_PREFIX. Included first, its names stay and this header adds only",
        " * the ones it lacks (each name is #ifndef-guarded); included later, it finds its guard defined and",
        " * does nothing. Either way no macro is defined twice (a warning, an error under -Werror). */",
        f"#ifndef {TORCH_PREFIX_GUARD}",
        f"#define {TORCH_PREFIX_GUARD}",
        "#endif",
    ]
    for name in names.names:
        lines += [f"#ifndef {name}", f"#define {name} {_NAME}({name})", "#endif"]
    lines += ["#endif /* AOTI_SHIM_SYMBOL_PREFIX */", f"#endif /* {_GUARD} */", ""]
    return "\n".join(lines)


_DEFINE = re.compile(rf"^#define ([A-Za-z_][A-Za-z0-9_]*) {_NAME}\(\1\)$", re.MULTILINE)


def header_names(text: str) -> set[str]:
    """The names a rename header renames (for checks against a library's exports)."""
    return set(_DEFINE.findall(text))


def write_header(path: Path, text: str, inputs: tuple[Path, ...] = ()) -> None:
    """Replace ``path`` in one step, so a failure never leaves half a header; never an input."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise AotiShimError(f"rename header {path}: cannot write: {e.strerror or e}") from None
    write_text_atomically(path, text, what="rename header", inputs=inputs)


@dataclass(frozen=True)
class CheckResult:
    """What ``--check`` found: a one-line problem (None when fine) and every missing name."""

    problem: str | None
    missing: tuple[str, ...] = ()


def check_header(
    path: Path, expected: str, *, exact: bool = True, fix: str = "run `aoti-shim rename-header`"
) -> CheckResult:
    """Whether ``path`` renames every name of ``expected`` (and, when ``exact``, is it)."""
    if not os.path.lexists(path):
        return CheckResult(f"{path} is missing: {fix}")
    current = _read_text(path, "rename header")  # a FIFO, a folder, a dangling link: one line, exit 1
    if exact and current == expected:
        return CheckResult(None)
    missing = tuple(sorted(header_names(expected) - header_names(current)))
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        return CheckResult(
            f"{path} misses {len(missing)} name(s), listed on standard output: {', '.join(missing[:3])}{more}; {fix}",
            missing,
        )
    if exact:
        return CheckResult(f"{path} is stale: {fix}")
    return CheckResult(None)


def _shipped_summary() -> str:
    """What the shipped list holds, read from it (the docs' numbers are held to the same list)."""
    shipped = shipped_names()
    return f"{shipped.span}'s shim headers declare ({len(shipped.names)} names, shipped with aoti-shim)"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "rename-header",
        help="generate (or check) the header that renames every aoti_torch_* shim name to <prefix>aoti_torch_*",
        description=(
            "Write a header that renames every aoti_torch_* shim function (and the stable C ABI's torch_* "
            "functions) to <prefix>aoti_torch_* (<prefix>torch_*) when "
            f"AOTI_SHIM_SYMBOL_PREFIX is defined: every name torch {_shipped_summary()}, the installed "
            "torch's, and your runtime's own (--manifest, "
            "--shim-include). With --check, write nothing and list on standard output every name the "
            "header lacks (default: the header installed with aoti-shim, against the installed torch)."
        ),
    )
    parser.add_argument(
        "--output", type=path, metavar="FILE",
        help=f"the header to write or check (default in the aoti-shim source tree: {DEFAULT_OUTPUT}; "
        "elsewhere --check reads the installed package's header)",
    )
    parser.add_argument(
        "--manifest", type=path, metavar="FILE",
        help=f"your shim names, one a line, '#' comments (default in the source tree: {DEFAULT_MANIFEST})",
    )
    parser.add_argument(
        "--shim-include", type=path, metavar="DIR", nargs="+", action="extend",
        help="folders of your shim headers (.h, .hpp, .cuh), scanned for aoti_torch_* declarations; several "
        f"folders, or the option repeated, all count (default in the source tree: {DEFAULT_SHIM_INCLUDE})",
    )
    parser.add_argument(
        "--torch-include",
        type=path,
        metavar="DIR",
        help="torch's include folder (default: $AOTI_SHIM_TORCH's, else the installed torch's, found without "
            "importing it)",
    )
    parser.add_argument(
        "--root", type=path,
        help="the aoti-shim source tree (default: . when writing; --check reads the tree only when --root names it, "
        "so it gives one answer from any folder)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 8 when the header lacks a name (or, in the tree, is stale)",
    )
    parser.set_defaults(run=run)


def _given(path: Path | None, option: str, *, folder: bool) -> Path | None:
    """An explicitly named input must exist, and be what it is named as (a FIFO would block,
    a typo must not silently drop names): checked before anything is read or written."""
    if path is not None and not os.path.lexists(path):
        raise InputError(f"{option} {path}: no such file or folder")
    if path is not None:
        (input_folder if folder else input_file)(path, what=option)
    return path


def _located_include() -> Path | None:
    """$AOTI_SHIM_TORCH's or the importable torch's include folder, as the checker and CMake find it."""
    found = locate()
    return None if found is None else found.include


def _installed_header() -> Path:
    return cmake_dir() / "include" / "aoti_shim_rename.h"


def run(args: argparse.Namespace) -> int:
    # --check without --root checks the installed header wherever it runs (from the source tree
    # it read the tree's header and manifest instead: a count that depended on the folder).
    root: Path | None = _given(args.root, "--root", folder=True) if args.root is not None or args.check else Path(".")
    in_tree = (
        root is not None and (root / "cmake" / "AotiShimConfig.cmake").is_file() and (root / DEFAULT_MANIFEST).is_file()
    )
    manifest = _given(args.manifest, "--manifest", folder=False) or (
        root / DEFAULT_MANIFEST if in_tree and root is not None else None
    )
    given_includes = tuple(
        f
        for f in (_given(folder, "--shim-include", folder=True) for folder in args.shim_include or ())
        if f is not None
    )
    shim_include = given_includes or ((root / DEFAULT_SHIM_INCLUDE,) if in_tree and root is not None else ())
    torch_include = _given(args.torch_include, "--torch-include", folder=True) or _located_include()
    output: Path | None = args.output or (root / DEFAULT_OUTPUT if in_tree and root is not None else None)
    exact = output is not None
    if output is None:
        if not args.check:
            raise UsageError(f"{(root or Path('.')).resolve()} is not the aoti-shim source tree: pass --output FILE")
        output = _installed_header()
        if torch_include is None:
            raise UsageError("rename-header --check: torch is not installed; pass --torch-include DIR")
    # Neither the manifest, a shim header nor torch's headers is ever the header written.
    headers = [h for folder in shim_include if folder.is_dir() for h in own_headers(folder)]
    inputs = tuple(p for p in (manifest, *shim_include, *headers, torch_include) if p is not None)
    if not args.check:
        destination(output, what="rename header", inputs=inputs)  # refuse before reading any header
    # The installed header is checked against the installed torch alone: does this torch
    # declare a name that the header shipped with aoti-shim lacks?
    sources = RenameSources(torch_include=torch_include, manifest=manifest, shim_include=shim_include, shipped=exact)
    names = collect_names(sources)
    expected = render_header(names)
    against = f"torch {_version(torch_include)}'s headers" if torch_include is not None else "the shipped torch names"
    if args.check:
        fix = (
            "run `aoti-shim rename-header`"
            if exact
            else "generate one that has them with `aoti-shim rename-header --output FILE`"
        )
        result = check_header(output, expected, exact=exact, fix=fix)
        for name in result.missing:
            print(name)
        if result.problem is not None:
            print(f"aoti-shim rename-header: {result.problem}", file=sys.stderr)
            return EXIT_BLOCKING
        print(
            f"aoti-shim rename-header: {output} renames every name ({len(names.names)}; checked against {against})",
            file=sys.stderr,
        )
        return EXIT_OK
    write_header(output, expected, inputs)
    print(f"aoti-shim rename-header: wrote {output} ({len(names.names)} names; {against} included)", file=sys.stderr)
    return EXIT_OK


def _version(torch_include: Path) -> str:
    try:
        return torch_version_of(torch_include)
    except InputError:
        return "(unknown version)"
