from __future__ import annotations

from aoti_shim.cli import console

console()
