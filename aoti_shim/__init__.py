"""aoti-shim: keep a runtime's slim ``aoti_torch_*`` shims apart from libtorch's."""

from __future__ import annotations

from pathlib import Path as _Path

__version__ = "0.1.0"
__all__ = ["__version__"]

# In a source checkout aoti_shim/ holds only the glue; checks/, plugin/, smoke/ and
# cmake/ sit beside it (pyproject.toml maps them into the wheel). Find them there too,
# so `python -m aoti_shim` run from the checkout's root does not half-import.
_here = _Path(__file__).resolve().parent
if not (_here / "checks").is_dir() and (_here.parent / "checks" / "__init__.py").is_file():
    __path__.append(str(_here.parent))  # type: ignore[name-defined]  # noqa: F821
