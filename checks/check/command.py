"""``aoti-shim check``: the command-line face of :func:`aoti_shim.checks.run_check`."""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from aoti_shim.arguments import path_text
from aoti_shim.atomic import StandardOutput, destination, note, open_text_atomically, write_text_atomically
from aoti_shim.checks.report.model import assemble
from aoti_shim.checks.report.options import (
    COLOR_HELP,
    FAIL_ON_HELP,
    FORMAT_HELP,
    SUMMARY,
    add_report_options,
    append_step_summary,
)
from aoti_shim.color import wants_color
from aoti_shim.errors import UsageError
from aoti_shim.guard import appendable
from aoti_shim.torch_location import TORCH_ENV_VAR

# The parser's help names these; tests/test_cli_texts.py reads them here.
__all__ = ["COLOR_HELP", "FAIL_ON_HELP", "FORMAT_HELP", "register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "check",
        help="check shim libraries and model blobs for symbol collisions",
        description=(
            "Check that shim libraries export only prefixed aoti_torch_* names that collide with "
            "nothing in the references, and that model blobs import only prefixed names the shims provide. "
            "Exit status is a bitmask: 1 tool error, 2 usage error, 4 warnings (with --fail-on any), 8 blocking "
            "findings."
        ),
    )
    p.add_argument(
        "--shim",
        nargs="+",
        action="extend",
        default=[],
        type=path_text,
        metavar="PATH",
        help="shim libraries: .so files, folders or wheels",
    )
    p.add_argument(
        "--model",
        nargs="+",
        action="extend",
        default=[],
        type=path_text,
        metavar="PATH",
        help="AOTInductor blobs: .so files, folders or wheels",
    )
    p.add_argument(
        "--wheel",
        nargs="+",
        action="extend",
        default=[],
        type=path_text,
        metavar="WHEEL",
        help="wheels checked as the build backend checks them: each ELF, Mach-O or PE member by its role "
        "(exporters of shim names are shims, importers are models)",
    )
    p.add_argument(
        "--against",
        nargs="+",
        action="extend",
        default=[],
        type=path_text,
        metavar="REF",
        help="references that must not collide: 'torch' ($AOTI_SHIM_TORCH's torch, else the installed one), paths, "
            "wheels or snapshots",
    )
    p.add_argument(
        "--library-path",
        action="append",
        default=[],
        type=path_text,
        metavar="DIR",
        help="a folder of the deployment where the loader finds the checked libraries' DT_NEEDED libraries "
        "(searched after the loader's own folders; repeatable)",
    )
    p.add_argument("--prefix", help="the private prefix (default: inferred from the shims' exports)")
    add_report_options(p, FORMAT_HELP)
    p.add_argument(
        "-v", "--verbose", action="store_true", help="text: also list every library checked and every reference"
    )
    p.set_defaults(run=run)


@contextlib.contextmanager
def _wheel_members(wheels: list[str]) -> Iterator[tuple[tuple[str, ...], tuple[str, ...], str | None]]:
    """The shims and models of ``wheels``, classified by role as the build backend does,
    extracted under a temp folder (yielded too, for naming them WHEEL-FILE/member)."""
    if not wheels:
        yield (), (), None
        return
    # Lazy (this and _run's): `check --help` and a parse error need none of the checker.
    import tempfile  # lazy: a check of no wheel writes no temp folder

    from aoti_shim.checks.formats.escape import printable
    from aoti_shim.checks.inputs.collect import extract_elf_members
    from aoti_shim.checks.loader.roles import classify_by_symbols

    with tempfile.TemporaryDirectory(prefix="aoti-shim-wheel-") as tmp:
        shims: list[str] = []
        models: list[str] = []
        for wheel in wheels:
            # One folder per wheel, named as the wheel: findings read WHEEL-FILE/member.
            root = Path(tmp) / os.path.basename(os.path.normpath(wheel))
            if root.exists():
                raise UsageError(f"--wheel {wheel}: a second wheel named {root.name}")
            members = extract_elf_members(wheel, root, display=wheel, native=True)
            roles = classify_by_symbols(members, root)
            shims += [str(root / m) for m in roles.shims]
            models += [str(root / m) for m in roles.models]
            if roles.extensions:
                said = (f"--wheel {wheel}: not checked (stable-ABI extensions, bound to libtorch by design): "
                    f"{', '.join(roles.extensions)}")
                note(f"aoti-shim: {printable(said)}")
            if not roles.shims and not roles.models and len(wheels) > 1:
                note(f"aoti-shim: {printable(f'--wheel {wheel}: no ELF member exports or imports aoti_torch_* names')}")
        if not shims and not models:
            raise UsageError(
                f"--wheel {' '.join(wheels)}: no ELF member exports or imports shim names: nothing to check"
            )
        yield tuple(shims), tuple(models), tmp


def run(args: argparse.Namespace) -> int:
    # A check makes many small objects (a 71k-finding check: millions) and no garbage cycles:
    # the cyclic collector's passes over them find nothing (2 to 3% of such a check).
    collecting = gc.isenabled()
    gc.disable()
    try:
        with _wheel_members(args.wheel) as (wheel_shims, wheel_models, wheel_root):
            return _run(args, wheel_shims, wheel_models, wheel_root)
    finally:
        if collecting:
            gc.enable()


def _run(
    args: argparse.Namespace, wheel_shims: tuple[str, ...], wheel_models: tuple[str, ...], wheel_root: str | None
) -> int:
    from aoti_shim.checks.check.run import CheckSettings, checking
    from aoti_shim.checks.formats import render_stream
    from aoti_shim.checks.formats.escape import printable
    from aoti_shim.checks.formats.github import markdown_summary, render_annotations

    # Each wheel was extracted to a folder of its own under wheel_root: its members' run paths
    # are the installed wheel's.
    wheel_roots = tuple(str(p) for p in Path(wheel_root).iterdir()) if wheel_root else ()
    settings = CheckSettings(
        shims=tuple(args.shim) + wheel_shims,
        models=tuple(args.model) + wheel_models,
        against=tuple(args.against),
        prefix=args.prefix,
        suppressions=args.suppressions,
        display_root=wheel_root,
        wheel_roots=wheel_roots,
        library_path=tuple(args.library_path),
    )
    inputs = (*args.shim, *args.model, *args.wheel, *args.against, *([args.suppressions] if args.suppressions else []))
    if args.output:
        destination(args.output, what="--output", inputs=inputs)  # refuse before the check runs
    color = wants_color(None if args.output else sys.stdout, args.color)
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY") if args.format == "github" else None
    if summary_path:
        appendable(summary_path, what=SUMMARY, inputs=inputs)
    out = StandardOutput()
    with checking(settings) as check:
        header = check.header
        for source in header.against:
            if source.found_by == f"${TORCH_ENV_VAR}":
                # An override of the installed torch is never silent: the gate checks against it.
                # printable(): the path and torch/version.py's version are anyone's bytes.
                said = f"--against {source.item}: ${TORCH_ENV_VAR} overrides the installed torch: {source.describe()}"
                note(f"aoti-shim: {printable(said)}")
        if args.format == "github" and summary_path:
            findings = tuple(check.findings())
            report = assemble(header, findings, check.tally)
            # In a GitHub job the table goes to the step summary, the annotations to the log.
            append_step_summary(summary_path, markdown_summary(report), inputs)
            text = render_annotations(report, with_summary=False)
            if args.output:
                write_text_atomically(args.output, text, what="--output", inputs=inputs)
            else:
                out.write(text)
        elif args.output:
            # Streamed into a temp file beside the target; it replaces the target only when whole.
            with open_text_atomically(args.output, what="--output", inputs=inputs) as write:
                render_stream(
                    args.format, header, check.batches(), check.tally, write, color=color, verbose=args.verbose
                )
        else:
            # A closed pipe does not end the check: the rest runs, unwritten, to the verdict.
            render_stream(
                args.format, header, check.batches(), check.tally, out.write, color=color, verbose=args.verbose
            )
        if not args.output:
            out.flush()
        tally = check.tally
    # The text table on standard output names the inferred prefix itself.
    if header.prefix_source == "inferred" and not (args.format == "text" and args.output is None):
        note(f"aoti-shim: prefix {header.prefix} ({header.prefix_origin})")
    return tally.exit_code(args.fail_on)
