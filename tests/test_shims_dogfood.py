"""The reference shim library built the way a runtime builds its shims (issue 24 §7).

Through the pip backend, on this CPU machine, from NVIDIA's wheels only: no source includes
the rename header (force-include), the library's own name comes from its own header
(names-from = shims/src), its CUB sort's inline templates stay inside (exports = "shims"),
and the gate checks the wheel against the CUDA torch 2.14.1 snapshot.
"""

from __future__ import annotations

import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from cmake_support import REPO

PREFIX = "dogfood_"


def _nm(library: Path) -> set[str]:
    done = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in done.stdout.splitlines() if line.strip()}


def test_the_reference_shims_build_as_a_runtimes_through_the_pip_backend(
    plugin_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import aoti_shim.build as backend
    from cuda_support import path_without_nvcc

    for name in ("AOTI_SHIM_PREFIX", "AOTI_SHIM_TORCH", "CMAKE_ARGS", "SKBUILD_CMAKE_DEFINE", "CUDACXX", "CUDA_PATH",
                 "CUDA_HOME", "CUDA_ROOT", "CUDAToolkit_ROOT", "CUDAARCHS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", path_without_nvcc())  # this machine's /usr/local/cuda nvcc stays out
    project = plugin_project("shims_dogfood")
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text()
        + f'names-from = ["{REPO / "shims" / "src"}"]\n\n[tool.scikit-build]\nminimum-version = "1.1"\n'
        'wheel.packages = ["src/shims_dogfood"]\nwheel.py-api = "py3"\nbuild-dir = "build"\n'
        f'cmake.define.DOGFOOD_SHIMS_DIR = "{REPO / "shims"}"\n'
    )
    out_dir = tmp_path / "dist"
    out_dir.mkdir()
    monkeypatch.chdir(project)
    name = backend.build_wheel(str(out_dir))
    printed = capsys.readouterr().out
    assert "OK: 0 blocking" in printed
    with zipfile.ZipFile(out_dir / name) as zf:
        zf.extract("aoti_shim/lib/libaoti_shim.so", tmp_path / "x")
    exports = _nm(tmp_path / "x" / "aoti_shim" / "lib" / "libaoti_shim.so")
    # Only the shim ABI, prefixed: no unprefixed shim, no CUB/libcu++ template, no std:: instantiation.
    assert exports and all(n.startswith((f"{PREFIX}aoti_torch_", f"{PREFIX}aoti_shim_")) for n in exports), sorted(
        n for n in exports if not n.startswith(PREFIX)
    )
    assert f"{PREFIX}aoti_torch_cuda_radix_sort_u32" in exports and f"{PREFIX}aoti_shim_caller_stream_select" in exports
    # The own name reached the build's rename header through names-from (shims/src/ops_sort.h).
    from aoti_shim.rename_header import header_names

    # One rename header per build tree (every prefixed target shares it).
    header = project / "build" / "aoti_shim_rename" / "aoti_shim_rename.h"
    assert "aoti_torch_cuda_radix_sort_u32" in header_names(header.read_text())
    # Every source was compiled with the force-include and without shim.h's own include.
    commands = (project / "build" / "build.ninja").read_text()
    assert (
        f"-include{header}" in commands
        and "--pre-include=" in commands
        and "-DAOTI_SHIM_RENAME_FORCE_INCLUDED" in commands
    )
    cache = (project / "build" / "CMakeCache.txt").read_text()
    assert re.search(r"^CMAKE_CUDA_COMPILER:\w+=.*/nvidia/cu13/bin/nvcc$", cache, re.M)
    assert "/usr/local/cuda" not in cache
