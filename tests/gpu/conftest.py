from __future__ import annotations

import sys
from pathlib import Path

# gpu_support (and the child scripts beside it) import as top-level modules.
sys.path.insert(0, str(Path(__file__).resolve().parent))
