from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Test helper modules (tests/*_fixtures.py, *_support.py) import as top-level modules.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from checker_fixtures import build_fixtures  # noqa: E402


@pytest.fixture(scope="session")
def checker_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_fixtures(tmp_path_factory.mktemp("checker-fixtures"))
