"""``aoti-shim snapshot``: write a torch build's export sets to a small reference file."""

from __future__ import annotations

import argparse
import sys

from aoti_shim.arguments import path_text
from aoti_shim.atomic import destination
from aoti_shim.checks.snapshot import record as snapshot
from aoti_shim.checks.snapshot.record import shipped_dir, shipped_snapshots
from aoti_shim.errors import UsageError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "snapshot",
        help="write the export sets of a torch build to a snapshot file for --against",
        description=(
            "Read the libraries of a torch lib/ folder (or torch package folder) or of a torch wheel "
            "(streamed, never installed) that 'import torch' loads (with --with-tests: every library of lib/) and "
            "write "
            "their exported symbols, with the torch version and "
            "build IDs, to a small deterministic gzip file (a JSON header and a name index per library) "
            "that 'aoti-shim check --against FILE' accepts. A macOS or Windows torch (its wheel, read on any "
            "machine) is recorded from its Mach-O or PE libraries, as C names, with the set that its torch/_C "
            "extension's dependencies reach."
        ),
    )
    p.add_argument(
        "source",
        nargs="?",
        type=path_text,
        metavar="TORCH_LIB_DIR|WHEEL",
        help="torch's lib/ folder, its package folder, or a torch wheel (Linux, macOS or Windows)",
    )
    p.add_argument(
        "--list",
        action="store_true",
        help="print the snapshots shipped with aoti-shim (their folder, each name and size) and exit; "
        "'--against NAME' accepts each name",
    )
    p.add_argument(
        "-o",
        "--output",
        type=path_text,
        metavar="FILE",
        help="the snapshot file to write (by convention torch-VERSION.json.gz)",
    )
    p.add_argument("--torch-version", help="the torch version to record (default: read from torch/version.py)")
    p.add_argument(
        "--with-tests",
        action="store_true",
        help="also record torch's test libraries (libaoti_custom_ops.so, ...), which 'import torch' never loads",
    )
    p.set_defaults(run=run)


def _print_shipped() -> int:
    snapshots = shipped_snapshots()
    print(f"{len(snapshots)} snapshots shipped in {shipped_dir()} (use a name with --against):")
    for name, path in snapshots.items():
        print(f"  {name:<24} {path.stat().st_size / 1e6:.1f} MB")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.list:
        if args.source is not None or args.output is not None:
            raise UsageError("snapshot --list takes no other argument")
        return _print_shipped()
    if args.source is None or args.output is None:
        raise UsageError("snapshot: give TORCH_LIB_DIR|WHEEL and -o FILE, or --list")

    destination(args.output, what="snapshot", inputs=(args.source,))  # refuse before the long read
    doc = snapshot.capture(args.source, torch_version=args.torch_version, with_tests=args.with_tests)
    snapshot.write(doc, args.output, inputs=(args.source,))
    libs = list(snapshot.summary(doc))
    total = sum(count for _, count in libs)
    print(
        f"wrote {args.output}: torch {doc['torch_version']}, {len(libs)} libraries, {total} exported symbols",
        file=sys.stderr,
    )
    return 0
