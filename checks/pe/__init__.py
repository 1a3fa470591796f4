"""The bounded PE reader: headers, the import and delay-load import directories, the export table.

``read(path)`` gives one :class:`PEFacts` (see ``facts.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aoti_shim.checks.pe.exports import Export
    from aoti_shim.checks.pe.facts import Dependency, Import, PEFacts, read

__all__ = ["Dependency", "Export", "Import", "PEFacts", "read"]


def __getattr__(name: str) -> Any:
    # The reader loads when a name of it is asked for: importing a submodule (the format's
    # constants, say, to tell a file's kind) runs this file, and an ELF scan or check should
    # not pay for the whole reader.
    if name == "Export":
        from aoti_shim.checks.pe import exports

        return exports.Export
    if name in __all__:
        from aoti_shim.checks.pe import facts

        return getattr(facts, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
