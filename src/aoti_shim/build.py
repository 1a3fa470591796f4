"""The PEP 517 backend name downstream projects use: ``build-backend = "aoti_shim.build"``.

Its code lives in :mod:`aoti_shim.plugin` (the plugin/ folder); scikit-build-core maps a
folder only onto a package of the same name, so this module re-exports the hooks.
"""

from __future__ import annotations

from aoti_shim.plugin import *  # noqa: F401,F403
from aoti_shim.plugin import __all__  # noqa: F401
