"""Lines that fit a terminal: the width a text report wraps to, and the wrapping.

Paths and symbol names are never broken (a person copies them): a line is broken only at
spaces, so one name longer than the width is the one thing that can overrun it.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Iterable

# A report written to a file or a pipe (CI logs, `-o`) wraps here; a terminal's own width
# wins, and $COLUMNS over both (shutil's order).
DEFAULT_WIDTH = 100
# Narrower than this, wrapped lists turn into one word a line: not worth it.
MIN_WIDTH = 60


def terminal_width() -> int:
    return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def wrap(text: str, width: int, indent: str = "", hanging: str | None = None) -> list[str]:
    """``text`` as lines of at most ``width`` characters (but for a word longer than that),
    the first indented by ``indent``, the rest by ``hanging`` (``indent`` plus two spaces)."""
    later = indent + "  " if hanging is None else hanging
    return textwrap.wrap(
        text, width, initial_indent=indent, subsequent_indent=later,
        break_long_words=False, break_on_hyphens=False,
    ) or [indent.rstrip()]


def wrap_list(head: str, items: Iterable[str], width: int, indent: str, hanging: str, sep: str = ", ") -> list[str]:
    """``head`` then ``items`` joined by ``sep``, wrapped between items, never inside one
    (an item is a name and its count: "lib/x.so (20)"); a head longer than the width wraps
    as text does, the items following on its last line."""
    lines = wrap(head, width, indent, hanging) if head.strip() else [indent]
    items = list(items)
    for i, item in enumerate(items):
        glue = sep if i else " "
        tail = sep.rstrip() if i else ""
        # An item that another follows carries the separator's comma at the end of its line.
        after = len(sep.rstrip()) if i + 1 < len(items) else 0
        if len(lines[-1]) + len(glue) + len(item) + after <= width or lines[-1].strip() == "":
            lines[-1] += (glue if lines[-1].strip() else "") + item
        else:
            lines[-1] += tail
            lines.append(hanging + item)
    return lines


def plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"
