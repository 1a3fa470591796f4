"""aoti-shim: keep a runtime's slim ``aoti_torch_*`` shims apart from libtorch's."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
