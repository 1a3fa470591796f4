"""``aoti-shim scan``: is this Python environment safe to load together?"""

from __future__ import annotations

import argparse
import os
import sys

from aoti_shim.arguments import path_text
from aoti_shim.atomic import StandardOutput, destination, write_text_atomically
from aoti_shim.checks.report.options import FORMAT_HELP, SUMMARY, add_report_options, append_step_summary
from aoti_shim.color import wants_color
from aoti_shim.errors import UsageError
from aoti_shim.guard import appendable, input_file_or_folder

SCAN_FORMAT_HELP = {**FORMAT_HELP, "json": "versioned JSON (schema in aoti_shim/checks/schemas/scan-v1.schema.json)"}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "scan",
        help="check that a Python environment's libraries can load into one process",
        description=(
            "Read every distribution of a Python environment (the running interpreter's by default), its ELF "
            "libraries from its RECORD, and report what one process built from them would bind wrongly: shim "
            "names two distributions export, unprefixed shim providers other than torch that capture the "
            "environment's stable-ABI extensions and blobs, two runtimes with one private prefix, runtimes "
            "re-exported twice; and a table of the shim providers and their prefixes. "
            "Exit status is a bitmask: 1 tool error, 2 usage error, 4 warnings (with --fail-on any), 8 blocking "
            "findings."
        ),
    )
    p.add_argument(
        "paths",
        nargs="*",
        type=path_text,
        metavar="PATH",
        help="site-packages folders, virtual environments or wheels (a wheel stands for its distribution "
        "installed, replacing one of the same name); none: the running interpreter's environment",
    )
    p.add_argument(
        "--python",
        type=path_text,
        metavar="PY",
        help="scan this interpreter's environment (asked in a child for its paths)",
    )
    add_report_options(p, SCAN_FORMAT_HELP)
    for action in p._actions:
        if "--output" in action.option_strings:
            action.help = "write the report here instead of standard output (never inside a scanned environment)"
    p.add_argument(
        "-v", "--verbose", action="store_true",
        help="text: also list every distribution, library, site folder and non-library ELF file the scan read",
    )
    p.set_defaults(run=run)


def environment_root(site_folder: str) -> str:
    """The environment a site folder belongs to: the nearest folder above it (a venv's
    ``lib/pythonX.Y/site-packages`` is three below) that holds a venv's or conda's mark; the
    site folder itself when none does (a system Python's: its prefix is not ours to guard)."""
    # Here, not at the top: `scan --help` imports no reader (the run has imported it by now).
    from aoti_shim.checks.scan.environment import ENVIRONMENT_MARKS

    folder = os.path.realpath(site_folder)
    for candidate in (folder, *_parents(folder)[:4]):
        if any(os.path.exists(os.path.join(candidate, mark)) for mark in ENVIRONMENT_MARKS):
            return candidate
    return folder


def _parents(folder: str) -> list[str]:
    out: list[str] = []
    while (parent := os.path.dirname(folder)) != folder:
        out.append(parent)
        folder = parent
    return out


def _outside_environment(output: str, folders: tuple[str, ...]) -> None:
    """Nothing is written into the scanned environment, its root included (a report in
    site-packages would be a file no RECORD lists, and the next scan's; one in the venv's
    root or bin/ is as much the environment's)."""
    real = os.path.realpath(output)
    for folder in folders:
        inside = environment_root(folder)
        if os.path.commonpath([real, inside]) == inside:
            # A bad argument (README: exit 2), refused before anything is written.
            raise UsageError(
                f"--output {output}: lies in the scanned environment ({inside}); write the report elsewhere"
            )


def run(args: argparse.Namespace) -> int:
    # Lazy: `scan --help` and a parse error need neither the reader nor the formats.
    from aoti_shim.checks.formats.scan import markdown_summary, render_annotations, render_scan
    from aoti_shim.checks.scan.run import ScanSettings, run_scan

    inputs = (*args.paths, *([args.python] if args.python else []), *([args.suppressions] if args.suppressions else []))
    for item in args.paths:
        input_file_or_folder(item)  # a FIFO, a device, a link to nowhere: one line, before any work
    if args.output:
        # The folders named on the command line first: an existing file there is no other refusal's.
        _outside_environment(args.output, tuple(p for p in args.paths if os.path.isdir(p)))
        destination(args.output, what="--output", inputs=inputs)  # refuse before the scan runs
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY") if args.format == "github" else None
    if summary_path:
        appendable(summary_path, what=SUMMARY, inputs=inputs)
    report = run_scan(ScanSettings(paths=tuple(args.paths), python=args.python, suppressions=args.suppressions))
    if summary_path:
        # In a GitHub job the tables go to the step summary, the annotations to the log.
        append_step_summary(summary_path, markdown_summary(report), inputs)
        text = render_annotations(report, with_summary=False)
    else:
        color = wants_color(None if args.output else sys.stdout, args.color)
        text = render_scan(report, args.format, color=color, verbose=args.verbose)
    if args.output:
        _outside_environment(args.output, report.scanned.site_folders)
        write_text_atomically(args.output, text, what="--output", inputs=inputs)
    else:
        out = StandardOutput()
        out.write(text)
        out.flush()
    return report.exit_code(args.fail_on)
