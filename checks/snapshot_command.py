"""``aoti-shim snapshot``: write a torch build's export sets to a small reference file."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "snapshot",
        help="write the export sets of a torch build to a snapshot file for --against",
        description=(
            "Read the libraries of a torch lib/ folder (or torch package folder) or of a torch wheel "
            "(streamed, never installed) that 'import torch' loads (with --with-tests: every library of lib/) and write their exported symbols, with the torch version and "
            "build IDs, to a small deterministic gzip file (a JSON header and a name index per library) "
            "that 'aoti-shim check --against FILE' accepts."
        ),
    )
    p.add_argument(
        "source", metavar="TORCH_LIB_DIR|WHEEL", help="torch's lib/ folder, its package folder, or a torch wheel"
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
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


def run(args: argparse.Namespace) -> int:
    from aoti_shim.checks import snapshot

    doc = snapshot.capture(args.source, torch_version=args.torch_version, with_tests=args.with_tests)
    snapshot.write(doc, args.output)
    libs = list(snapshot.summary(doc))
    total = sum(count for _, count in libs)
    print(
        f"wrote {args.output}: torch {doc['torch_version']}, {len(libs)} libraries, {total} exported symbols",
        file=sys.stderr,
    )
    return 0
