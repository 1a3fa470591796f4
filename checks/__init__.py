"""The symbol-hygiene checker: ``run_check(CheckSettings(...))`` returns a :class:`Report`."""

from __future__ import annotations

from aoti_shim.checks.api import CheckSettings, run_check
from aoti_shim.checks.formats import FORMATS, render
from aoti_shim.checks.report import Finding, Report
from aoti_shim.checks.rules import RULES

__all__ = ["CheckSettings", "run_check", "render", "FORMATS", "Finding", "Report", "RULES"]
