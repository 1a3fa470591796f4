"""The bounded PE reader: headers, the import and delay-load import directories, the export table.

``read(path)`` gives one :class:`PEFacts` (see ``facts.py``).
"""

from __future__ import annotations

from aoti_shim.checks.pe.exports import Export
from aoti_shim.checks.pe.facts import Dependency, Import, PEFacts, read

__all__ = ["Dependency", "Export", "Import", "PEFacts", "read"]
