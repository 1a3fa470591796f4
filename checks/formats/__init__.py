"""Output formats, all rendered from one :class:`Report`."""

from __future__ import annotations

from typing import Callable

from aoti_shim.checks.report import Report
from aoti_shim.errors import UsageError


def _text(report: Report, color: bool) -> str:
    from aoti_shim.checks.formats.text import render_text

    return render_text(report, color=color)


def _json(report: Report, color: bool) -> str:
    from aoti_shim.checks.formats.json_report import render_json

    return render_json(report)


def _sarif(report: Report, color: bool) -> str:
    from aoti_shim.checks.formats.sarif import render_sarif

    return render_sarif(report)


def _github(report: Report, color: bool) -> str:
    from aoti_shim.checks.formats.github import render_annotations

    return render_annotations(report)


def _junit(report: Report, color: bool) -> str:
    from aoti_shim.checks.formats.junit import render_junit

    return render_junit(report)


FORMATS: dict[str, Callable[[Report, bool], str]] = {
    "text": _text,
    "json": _json,
    "sarif": _sarif,
    "github": _github,
    "junit": _junit,
}


def render(report: Report, fmt: str = "text", *, color: bool = False) -> str:
    try:
        renderer = FORMATS[fmt]
    except KeyError:
        raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}") from None
    return renderer(report, color)
