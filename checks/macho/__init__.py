"""The bounded Mach-O reader: fat slices, load commands, the export trie and every bind.

``read(path)`` gives one :class:`MachOFacts` per slice (see ``facts.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aoti_shim.checks.macho.exports import Export
    from aoti_shim.checks.macho.facts import Dependency, Import, MachOFacts, read

__all__ = ["Dependency", "Export", "Import", "MachOFacts", "read"]


def __getattr__(name: str) -> Any:
    # The reader loads when a name of it is asked for: importing a submodule (the format's
    # constants, say, to tell a file's kind) runs this file, and an ELF scan or check should
    # not pay for the whole reader.
    if name == "Export":
        from aoti_shim.checks.macho import exports

        return exports.Export
    if name in __all__:
        from aoti_shim.checks.macho import facts

        return getattr(facts, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
