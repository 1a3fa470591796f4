"""SIGTERM cleans up as SIGINT does.

Python turns SIGINT into KeyboardInterrupt, so every ``finally`` and context manager
runs: temp folders go, partial files go, ``subprocess.run`` kills its child. SIGTERM's
default action kills the process at once and skips all of that. :func:`sigterm_as_interrupt`
makes SIGTERM raise :class:`Terminated`, a KeyboardInterrupt, so the same paths run.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived; raised where the interpreter was, like KeyboardInterrupt."""


def interrupted(tool: str, interrupt: KeyboardInterrupt) -> int:
    """A command's last words on Ctrl-C or SIGTERM: one line on stderr, and its exit code."""
    terminated = isinstance(interrupt, Terminated)
    print(f"{tool}: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
    return EXIT_TERMINATED if terminated else 128 + signal.SIGINT


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (only the main thread can catch signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


@contextlib.contextmanager
def sigterm_deferred() -> Iterator[None]:
    """Within the block (a last cleanup), a SIGTERM is held back and raised when it ends.

    A SIGTERM that lands inside ``shutil.rmtree`` would stop it half-way and leave the
    rest of the folder behind.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
    if caught and before is _raise_terminated:
        raise Terminated()
