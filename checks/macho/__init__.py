"""The bounded Mach-O reader: fat slices, load commands, the export trie and every bind.

``read(path)`` gives one :class:`MachOFacts` per slice (see ``facts.py``).
"""

from __future__ import annotations

from aoti_shim.checks.macho.exports import Export
from aoti_shim.checks.macho.facts import Dependency, Import, MachOFacts, read

__all__ = ["Dependency", "Export", "Import", "MachOFacts", "read"]
