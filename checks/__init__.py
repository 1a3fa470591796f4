"""The symbol-hygiene checker: ``run_check(CheckSettings(...))`` returns a :class:`Report`.

The names below load on first use (PEP 562): ``import aoti_shim.checks.abi.prefix`` (the
plugin's settings, the CLI's escaping) must not pull in the whole checker with this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aoti_shim.checks.check.run import CheckSettings, run_check
    from aoti_shim.checks.formats import FORMATS, render
    from aoti_shim.checks.report.model import Finding, Report
    from aoti_shim.checks.rules.table import RULES

# Each exported name and the module that defines it.
_HOMES = {
    "CheckSettings": "aoti_shim.checks.check.run",
    "run_check": "aoti_shim.checks.check.run",
    "render": "aoti_shim.checks.formats",
    "FORMATS": "aoti_shim.checks.formats",
    "Finding": "aoti_shim.checks.report.model",
    "Report": "aoti_shim.checks.report.model",
    "RULES": "aoti_shim.checks.rules.table",
}

__all__ = ["CheckSettings", "run_check", "render", "FORMATS", "Finding", "Report", "RULES"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once: later lookups skip this function
    return value
