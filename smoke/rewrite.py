"""The binary route: ``aoti-shim rewrite-imports BLOB --prefix P [-o OUT]``.

Renames an already-compiled blob's imported ``aoti_torch_*`` symbols to
``<P>aoti_torch_*`` so that they can no longer bind to libtorch. The result is
written next to its destination and renamed into place only after the checker
has passed it (:mod:`aoti_shim.atomic`): a failed run leaves nothing half-written
and never touches OUT; a linked OUT is written through, never replaced by a copy.
"""

from __future__ import annotations

import argparse
import json
import stat
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from aoti_shim.arguments import path
from aoti_shim.atomic import destination, replacing
from aoti_shim.checks import CheckSettings, run_check
from aoti_shim.checks.abi.prefix import validate
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.elf.layout import is_elf
from aoti_shim.children import python_argv
from aoti_shim.errors import EXIT_OK, AotiShimError, InputError

# Rules that must not fire on a rewritten blob: it must import only prefixed names.
_IMPORT_RULES = ("UNPREFIXED_IMPORT", "MODEL_DEFINES_SHIM")


@dataclass(frozen=True)
class RewriteSettings:
    blob: Path
    prefix: str
    output: Path  # may equal blob: then the blob is replaced atomically


@dataclass(frozen=True)
class RewriteResult:
    output: Path
    renamed: tuple[str, ...]


def _package_hint(package: Path) -> str:
    """What to do with a .pt2 package (a zip) given where a blob is expected: name its blobs."""
    try:
        with zipfile.ZipFile(package) as zf:
            blobs = [n for n in zf.namelist() if n.endswith(".so")]
    except (OSError, zipfile.BadZipFile):
        blobs = []
    inside = f" (it holds {', '.join(blobs[:3])}{', ...' if len(blobs) > 3 else ''})" if blobs else ""
    return (
        f"{package}: a zip archive (an AOTInductor .pt2 package?), not a blob{inside}: rewrite the blob inside it, "
        f"extracted with python -m zipfile -e {package} DIR, or build the package's sources with the prefix "
        "(aoti_shim_add_model(<name> PACKAGE <pt2> PREFIX <p>))"
    )


def _check_input(blob: Path) -> None:
    if not blob.is_file():
        raise InputError(f"{blob}: no such file")
    if not is_elf(blob):
        if zipfile.is_zipfile(blob):
            raise InputError(_package_hint(blob))
        raise InputError(f"{blob}: not an ELF file")
    with ElfImage(blob) as image:
        if not image.has_dynsym:
            raise InputError(f"{blob}: has no dynamic symbol table (not a shared library)")


def _recheck(path: Path, display: str, prefix: str) -> None:
    """The checker must see only prefixed shim imports in the rewritten blob. It is told the
    prefix: inferred, an import such as my_aoti_torch_x (another prefix's) made it ask for one."""
    report = run_check(CheckSettings(models=(str(path),), prefix=prefix))
    bad = [f for f in report.findings if f.rule in _IMPORT_RULES]
    if bad:
        raise AotiShimError(f"{display}: still {bad[0].rule} after the rewrite: {bad[0].symbol}")


def rewrite_imports(settings: RewriteSettings) -> RewriteResult:
    prefix = validate(settings.prefix)
    _check_input(settings.blob)
    mode = stat.S_IMODE(settings.blob.stat().st_mode)
    out = settings.output
    # In place, the blob is the output (through a link, its target); else the blob is an
    # input that -o must not name.
    inputs = () if out == settings.blob else (settings.blob,)
    with replacing(out, what="-o", inputs=inputs, mode=mode) as tmp:
        proc = subprocess.run(
            python_argv("aoti_shim.smoke.rewrite_worker", str(settings.blob), tmp, prefix),
            capture_output=True,
            text=True,
            check=False,
        )
        answer = _last_json(proc.stdout)
        if proc.returncode != 0:
            why = answer.get("error") if answer else None
            raise InputError(f"{settings.blob}: LIEF could not rewrite it: {why or _signal_text(proc.returncode)}")
        if answer is None or not isinstance(answer.get("renamed"), list):
            raise InputError(f"{settings.blob}: the LIEF worker reported no result ({_signal_text(proc.returncode)})")
        renamed = tuple(answer["renamed"])
        if not renamed:
            raise InputError(f"{settings.blob}: imports no unprefixed aoti_torch_* symbol; nothing to rename")
        _recheck(Path(tmp), str(out), prefix)
    return RewriteResult(output=out, renamed=renamed)


def _last_json(stdout: str) -> dict | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def _signal_text(returncode: int) -> str:
    if returncode < 0:
        return f"LIEF crashed (signal {-returncode})"
    return f"exit status {returncode}"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rewrite-imports",
        help="rename a compiled blob's imported aoti_torch_* (and stable C ABI torch_*) symbols to <prefix>...",
        description=(
            "Rename a compiled AOTInductor blob's imported aoti_torch_* symbols (and the stable C ABI's torch_* "
            "ones) to <prefix>aoti_torch_* (<prefix>torch_*), so "
            "that they can no longer bind to libtorch. The result is checked, then renamed into place: a "
            "failed run writes nothing and leaves OUTPUT (or BLOB) untouched."
        ),
    )
    parser.add_argument("blob", type=path, metavar="BLOB", help="the AOTInductor model .so")
    parser.add_argument("--prefix", required=True, help="the shim prefix, e.g. myrt_")
    parser.add_argument("-o", "--output", type=path, help="where to write (default: replace BLOB)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    output = args.output or args.blob
    result = rewrite_imports(RewriteSettings(blob=args.blob, prefix=args.prefix, output=output))
    # With -o /dev/stdout the blob is on standard output: the note goes to standard error.
    to_stdout = args.output is not None and destination(output, what="-o").path is None
    print(
        f"rewrite-imports: renamed {len(result.renamed)} imports to {args.prefix}aoti_torch_*; wrote {result.output}",
        file=sys.stderr if to_stdout else sys.stdout,
    )
    return EXIT_OK
