"""What the backend prints: plain lines tagged ``aoti-shim:``, red only for the failure line.

pip captures a backend's output (shown on failure, or always with ``pip -v``), so
colour follows FORCE_COLOR / NO_COLOR as scikit-build-core's does, else the terminal.
"""

from __future__ import annotations

import sys
from typing import TextIO

from aoti_shim.color import wants_color

_RED, _YELLOW, _BOLD, _RESET = "\033[31m", "\033[33m", "\033[1m", "\033[0m"
TAG = "aoti-shim:"


def use_color() -> bool:
    return wants_color(sys.stderr)


def _emit(text: str, *, stream: TextIO | None = None) -> None:
    # scikit-build-core writes to stdout; pip merges both streams, so flush to keep order.
    sys.stdout.flush()
    print(text, file=stream or sys.stdout, flush=True)


def info(message: str) -> None:
    _emit(f"{TAG} {message}")


def warn(message: str) -> None:
    line = f"{TAG} warning: {message}"
    _emit(f"{_YELLOW}{line}{_RESET}" if use_color() else line)


def block(text: str) -> None:
    """A multi-line block (the findings table) as it is."""
    _emit(text.rstrip("\n"))


def error(message: str) -> None:
    """The one red line of a failed build."""
    line = f"{TAG} error: {message}"
    _emit(f"{_BOLD}{_RED}{line}{_RESET}" if use_color() else line, stream=sys.stderr)
