"""The symbol-hygiene checker: ``run_check(CheckSettings(...))`` returns a :class:`Report`."""

from __future__ import annotations

from aoti_shim.checks.check.run import CheckSettings, run_check
from aoti_shim.checks.formats import FORMATS, render
from aoti_shim.checks.report.model import Finding, Report
from aoti_shim.checks.rules.table import RULES

__all__ = ["CheckSettings", "run_check", "render", "FORMATS", "Finding", "Report", "RULES"]
