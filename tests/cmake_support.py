"""Configure and build the CMake fixture projects under fixtures/packages/ for real.

CMake and Ninja come from the test environment (the ``cmake``/``ninja`` PyPI
packages put them beside the interpreter) or else from PATH. The AotiShim package
is the installed one (``aoti_shim.paths.cmake_dir()``) and the checker runs with
this interpreter, so the tests exercise what users get from ``pip install``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = REPO / "fixtures" / "packages"
RECORDED_PACKAGE = REPO / "fixtures" / "aoti_packages" / "mlp_cpu"
FIXTURE_PREFIX = "myrt_"

# Settings from the developer's or CI's shell that would change what CMake does.
_SCRUBBED = ("CMAKE_ARGS", "CMAKE_GENERATOR", "CMAKE_BUILD_TYPE", "CMAKE_PREFIX_PATH", "CMAKE_MODULE_PATH")


def tool(name: str) -> str:
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed (pip install '.[test]' brings it)")
    return found


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED and not k.startswith(("AOTI_SHIM_", "SKBUILD"))}
    # The interpreter's folder first, so `aoti-shim` and `ninja` are this environment's.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


@dataclass(frozen=True)
class CMakeProject:
    """One fixture project configured into one build folder."""

    source: Path
    build: Path
    defines: dict[str, str] = field(default_factory=dict)
    aoti_shim_dir: Path | None = None
    env: dict[str, str] = field(default_factory=dict)  # on top of clean_env() (which drops AOTI_SHIM_*)

    def configure(self) -> subprocess.CompletedProcess[str]:
        from aoti_shim.paths import cmake_dir

        args = [
            tool("cmake"),
            "-S",
            str(self.source),
            "-B",
            str(self.build),
            "-G",
            "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={tool('ninja')}",
            f"-DAotiShim_DIR={self.aoti_shim_dir or cmake_dir()}",
            f"-DPython_EXECUTABLE={sys.executable}",
        ]
        args += [f"-D{key}={value}" for key, value in self.defines.items()]
        return subprocess.run(
            args, capture_output=True, text=True, env={**clean_env(), **self.env}, cwd=self.build.parent, check=False
        )

    def build_all(self) -> subprocess.CompletedProcess[str]:
        args = [tool("cmake"), "--build", str(self.build), "-j2"]
        return subprocess.run(
            args, capture_output=True, text=True, env={**clean_env(), **self.env}, cwd=self.build.parent, check=False
        )

    def configure_and_build(self) -> subprocess.CompletedProcess[str]:
        configured = self.configure()
        assert configured.returncode == 0, f"configure failed:\n{configured.stdout}\n{configured.stderr}"
        return self.build_all()


def one_line(text: str) -> str:
    """CMake wraps long messages over indented lines: the message as one line."""
    return " ".join(text.split())


def log(result: subprocess.CompletedProcess[str]) -> str:
    return f"{result.stdout}\n{result.stderr}"
