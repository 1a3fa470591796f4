"""The one colour rule, for the CLI's reports and the build backend's lines.

``always``/``never`` decide; ``auto`` follows the conventions: NO_COLOR (any non-empty
value) turns colour off, FORCE_COLOR turns it on (as scikit-build-core's and pip's
output do, where the stream is captured and not a terminal), else a terminal gets it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal, TextIO

Choice = Literal["auto", "always", "never"]
CHOICES: tuple[Choice, ...] = ("auto", "always", "never")


def wants_color(stream: TextIO | None, choice: Choice = "auto", environ: Mapping[str, str] | None = None) -> bool:
    """Whether text written to ``stream`` (None: a file) gets ANSI colour."""
    if choice != "auto":
        return choice == "always"
    environ = os.environ if environ is None else environ
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        return False
