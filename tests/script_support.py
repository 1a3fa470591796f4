"""A script of the checkout (bench/, docs/gpu/) loaded as a module, for tests of its pieces."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_script(path: Path, name: str) -> ModuleType:
    """``path`` imported under ``name`` (registered in sys.modules: dataclasses resolve their
    annotations through it). Its folder goes on sys.path, as when it runs as a script, so
    that it imports its siblings (bench/c_build.py, say)."""
    if str(path.parent) not in sys.path:
        sys.path.append(str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
