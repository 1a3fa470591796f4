"""Lines a test wants in the run's closing summary (counts of generated cases, say): what a
test or fixture prints is captured, and CI's log must show them. conftest.py prints them."""

from __future__ import annotations

import pytest

SUMMARY_LINES = pytest.StashKey[list]()


def summary_line(config: pytest.Config, line: str) -> None:
    config.stash.setdefault(SUMMARY_LINES, []).append(line)
