"""What ``force-include``, ``names-from``, ``exports`` and ``export-names`` tell CMake.

Each setting becomes a cache variable that ``aoti_shim_prefix`` reads for every target it
marks, the way the prefix reaches it: the pip spelling and the CMake one
(``FORCE_INCLUDE``, ``NAMES_FROM``, ``aoti_shim_limit_exports``) are one implementation.
Only settings given are passed, so a project without them configures as before.
"""

from __future__ import annotations

from pathlib import Path

from aoti_shim.errors import UsageError
from aoti_shim.plugin.settings import TABLE, GateSettings

FORCE_INCLUDE_VAR = "AOTI_SHIM_FORCE_INCLUDE"
NAMES_FROM_VAR = "AOTI_SHIM_NAMES_FROM"
EXPORTS_VAR = "AOTI_SHIM_EXPORTS"
EXPORT_NAMES_VAR = "AOTI_SHIM_EXPORT_NAMES"


def _folders(given: tuple[str, ...], project: Path) -> list[str]:
    """names-from as absolute folders (CMake resolves relative ones against each CMakeLists.txt's folder)."""
    out: list[str] = []
    for folder in given:
        if ";" in folder:
            raise UsageError(f"{TABLE} names-from {folder!r}: a ';' in a path is a list separator to CMake")
        path = (project / folder).resolve()
        if not path.is_dir():
            raise UsageError(f"{TABLE} names-from {folder!r}: {path} is not a folder")
        out.append(str(path))
    return out


def cmake_defines(gate: GateSettings, project: Path) -> dict[str, str]:
    """The ``cmake.define.*`` entries for scikit-build-core."""
    if gate.cuda_libraries and not gate.cuda:
        raise UsageError(f"{TABLE} cuda-libraries is given but cuda is false: set cuda = true")
    if gate.export_names and gate.exports != "shims":
        raise UsageError(f'{TABLE} export-names is given but exports is "{gate.exports}": set exports = "shims"')
    for name in gate.export_names:
        if ";" in name or any(c.isspace() for c in name):
            raise UsageError(f"{TABLE} export-names {name!r} is not a symbol name or a version-script glob")
    defines: dict[str, str] = {}
    if gate.force_include:
        defines[FORCE_INCLUDE_VAR] = "ON"
    if gate.names_from:
        defines[NAMES_FROM_VAR] = ";".join(_folders(gate.names_from, project))
    if gate.exports != "all":
        defines[EXPORTS_VAR] = gate.exports
    if gate.export_names:
        defines[EXPORT_NAMES_VAR] = ";".join(gate.export_names)
    return {f"cmake.define.{k}": v for k, v in defines.items()}
