"""The prefix rule has one source for Python and CMake (issue 34 §5): checks/abi/prefix_rule.txt.

CMake's _aoti_shim_resolve_prefix and the checker's validate() must accept and refuse the
same prefixes, and the reference shims' default must be the checker's DEFAULT_PREFIX; both
are run for real (cmake -P over the CMake package), in the clone's layout and the installed one.
"""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

from aoti_shim.checks.abi import prefix
from aoti_shim.errors import UsageError
from cmake_support import REPO, clean_env, tool

CANDIDATES = ["myrt_", "N_", "_", "A9_", "aoti_torchx_", "aoti_torch_mine_", "aoti_torch_", "9bad", "my-rt_"]


def _installed_cmake_dir() -> Path:
    spec = importlib.util.find_spec("aoti_shim.cmake")
    assert spec is not None and spec.submodule_search_locations, "aoti_shim.cmake is not installed"
    return Path(next(iter(spec.submodule_search_locations)))


LAYOUTS = {"clone": REPO / "cmake", "installed": _installed_cmake_dir()}


def _cmake(config_dir: Path, body: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "probe.cmake"
    script.write_text(f'include("{config_dir.as_posix()}/AotiShimConfig.cmake")\n{body}\n', encoding="utf-8")
    return subprocess.run([tool("cmake"), "-P", str(script)], capture_output=True, text=True, env=clean_env())


def _python_accepts(candidate: str) -> bool:
    try:
        prefix.validate(candidate)
    except UsageError:
        return False
    return True


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_cmake_reads_the_default_prefix_from_the_rule_file(layout: str, tmp_path: Path) -> None:
    done = _cmake(LAYOUTS[layout], 'message(NOTICE "default=[${AOTI_SHIM_DEFAULT_PREFIX}]")', tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"default=[{prefix.DEFAULT_PREFIX}]" in done.stderr


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_cmake_and_the_checker_judge_prefixes_alike(layout: str, tmp_path: Path) -> None:
    for candidate in CANDIDATES:
        call = (f'_aoti_shim_resolve_prefix(probe t "PREFIX;{candidate}" "" "{candidate}" out)\nmessage(NOTICE '
            f'"took=[${{out}}]")')
        done = _cmake(LAYOUTS[layout], call, tmp_path)
        cmake_accepts = done.returncode == 0 and f"took=[{candidate}]" in done.stderr
        assert cmake_accepts == _python_accepts(candidate), (candidate, done.stderr)


def test_the_shims_build_reads_no_python_source() -> None:
    # The old route parsed DEFAULT_PREFIX out of checks/abi/prefix.py by regex.
    text = (REPO / "shims" / "CMakeLists.txt").read_text(encoding="utf-8")
    assert "prefix.py" not in text
    assert "${AOTI_SHIM_DEFAULT_PREFIX}" in text
