"""Two identical CUDA blobs (private copies) loaded and run at the same time in one
process, round after round: no crash, every output right, no copy left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_support import PREFIX, compile_cache, needs_gpu, prefixed_model
from shims_support import reference_library

pytestmark = needs_gpu()

CHILD = Path(__file__).resolve().parent / "concurrent_blobs_child.py"
ROUNDS, ITERATIONS = 4, 50


def test_two_private_copies_run_concurrently(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    built = prefixed_model("mlp", compile_cache(tmp_path_factory), tmp_path)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    # The loader's file fallback (and anything else) writes under TMPDIR: it must stay empty.
    env = dict(os.environ, TMPDIR=str(scratch))
    proc = subprocess.run(
        [sys.executable, str(CHILD), str(built.blob), str(built.io_file), built.kernel_dir or "",
         str(reference_library()), PREFIX, "cuda", str(ROUNDS), str(ITERATIONS)],
        capture_output=True, text=True, timeout=480, env=env, check=False,
    )
    assert proc.returncode == 0, f"the child died ({proc.returncode}):\n{proc.stderr[-4000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not [e for e in report if "error" in e], report
    assert len(report) == 2 * ROUNDS
    for r in range(ROUNDS):
        pair = [e for e in report if e["round"] == r]
        assert len({e["path"] for e in pair}) == 2, f"round {r}: both threads loaded one path: {pair}"
        assert len({e["handle"] for e in pair}) == 2, f"round {r}: both threads got one library: {pair}"
    assert all(e["runs"] == ITERATIONS for e in report), report
    assert all(e["failures"] == 0 for e in report), report
    assert max(e["max_abs"] for e in report) < 1e-3
    assert list(scratch.iterdir()) == []
