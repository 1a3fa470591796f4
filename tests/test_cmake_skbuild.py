"""The fixture shim project built through scikit-build-core, which finds AotiShim by entry points.

``find_package(AotiShim CONFIG)`` resolves through the ``cmake.root`` entry point and
``include(AotiShim)`` through ``cmake.module``; neither is given a path. The prefix
comes from the project's ``cmake.define`` table, as the plugin would set it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cmake_support import PACKAGES, clean_env, log

SKBUILD_PREFIX = "fixt_"  # fixtures/packages/cmake_prefix/pyproject.toml

_BUILD_WHEEL = """
import sys
from scikit_build_core.build import build_wheel
settings = dict(arg.split("=", 1) for arg in sys.argv[2:])
print("WHEEL=" + build_wheel(sys.argv[1], settings))
"""


def _build_wheel(tmp: Path, **settings: str) -> tuple[subprocess.CompletedProcess[str], Path | None]:
    source = tmp / "src"
    shutil.copytree(PACKAGES / "cmake_prefix", source)
    out = tmp / "dist"
    out.mkdir()
    args = [sys.executable, "-c", _BUILD_WHEEL, str(out), *(f"{k}={v}" for k, v in settings.items())]
    result = subprocess.run(args, capture_output=True, text=True, env=clean_env(), cwd=source, check=False)
    wheels = list(out.glob("*.whl"))
    return result, wheels[0] if wheels else None


def _shim_exports(wheel: Path, tmp: Path) -> set[str]:
    from aoti_shim.checks.elf.image import ElfImage

    with zipfile.ZipFile(wheel) as archive:
        member = next(n for n in archive.namelist() if n.endswith("libfixture_shim.so"))
        path = Path(archive.extract(member, tmp / "unpacked"))
    with ElfImage(path) as image:
        return set(image.exports())


@pytest.fixture
def skbuild_wheel(tmp_path: Path):
    """``skbuild_wheel(**settings)``: fixtures/packages/cmake_prefix built into a wheel by scikit-build-core."""
    return lambda **settings: _build_wheel(tmp_path, **settings)


@pytest.mark.parametrize("find", ["config", "module"])
def test_scikit_build_core_finds_the_package_through_entry_points(find: str, skbuild_wheel, tmp_path: Path) -> None:
    result, wheel = skbuild_wheel(**{"cmake.define.FIXTURE_FIND": find})
    assert result.returncode == 0, log(result)
    assert wheel is not None, log(result)
    exports = _shim_exports(wheel, tmp_path)
    assert {f"{SKBUILD_PREFIX}aoti_torch_dtype_float32", f"{SKBUILD_PREFIX}aoti_torch_device_type_cpu"} <= exports
    assert not [name for name in exports if name.startswith("aoti_torch_")]
