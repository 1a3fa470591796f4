"""Argument types the commands share."""

from __future__ import annotations

import argparse
from pathlib import Path


def path_text(text: str) -> str:
    """A path argument; an empty one (an unset shell variable: ``-o "$OUT"``) is a usage
    error, not standard output, the current folder, nor a file named ''."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path")
    return text


def path(text: str) -> Path:
    """:func:`path_text`, as a Path."""
    return Path(path_text(text))
