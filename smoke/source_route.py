"""The source route: build a ``package_cpp_only`` package with ``aoti_shim_add_model``.

A throw-away CMake project that does what a runtime's own build does: find the
``AotiShim`` package and add the model with the prefix; the rename header is
force-included, so the blob only ever asks for prefixed names.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from aoti_shim.errors import AotiShimError
from aoti_shim.torch_location import locate

_PROJECT = """\
cmake_minimum_required(VERSION 3.21)
project(aoti_shim_smoke_model LANGUAGES CXX)
find_package(AotiShim CONFIG REQUIRED)
aoti_shim_add_model(smoke_model PACKAGE "{package}" PREFIX "{prefix}")
file(GENERATE OUTPUT "${{CMAKE_BINARY_DIR}}/blob_path.txt" CONTENT "$<TARGET_FILE:smoke_model>")
"""


@dataclass(frozen=True)
class SourceBuild:
    package: Path
    prefix: str
    build_dir: Path
    jobs: int = 2


def _tool(name: str) -> str | None:
    """A tool from this environment's bin first (pip's cmake/ninja), then PATH."""
    local = Path(sys.executable).parent / name
    return str(local) if local.is_file() else shutil.which(name)


def cmake_package_digest() -> str:
    """Changes whenever the installed CMake package (and so the blob it builds) changes."""
    from aoti_shim.paths import cmake_dir

    digest = hashlib.sha256()
    root = cmake_dir()
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in (".cmake", ".h", ".in", ".txt"):
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def built_blob(build_dir: Path) -> Path | None:
    """The blob a finished build in ``build_dir`` made, or None."""
    marker = build_dir / "blob_path.txt"
    if not marker.is_file():
        return None
    blob = Path(marker.read_text().strip())
    return blob if blob.is_file() else None


def configure_command(cmake: str, source_dir: Path, binary_dir: Path) -> list[str]:
    """The CMake configure command line of the source route's throw-away project."""
    from aoti_shim.paths import cmake_dir

    configure = [cmake, "-S", str(source_dir), "-B", str(binary_dir), f"-DAotiShim_DIR={cmake_dir()}",
                 f"-DAOTI_SHIM_PYTHON={sys.executable}", "-DCMAKE_BUILD_TYPE=Release"]
    # The torch this process checks and runs with, found as the checker finds it
    # ($AOTI_SHIM_TORCH first); without one CMake asks `aoti-shim --torch-include-dir` and fails.
    found = locate()
    if found is not None:
        configure.append(f"-DAOTI_SHIM_TORCH_INCLUDE_DIR={found.include}")
    ninja = _tool("ninja")
    if ninja:
        configure += ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"]
    return configure


def build_source_blob(build: SourceBuild) -> Path:
    """Configure and build; the blob path. A finished build in ``build_dir`` is reused."""
    reused = built_blob(build.build_dir)
    if reused is not None:
        return reused
    marker = build.build_dir / "blob_path.txt"
    cmake = _tool("cmake")
    if cmake is None:
        raise AotiShimError("source route: cmake not found (pip install cmake)")
    source_dir = build.build_dir / "src"
    binary_dir = build.build_dir / "build"
    configure = configure_command(
        cmake, source_dir, binary_dir
    )  # a bad $AOTI_SHIM_TORCH fails before anything is removed
    shutil.rmtree(build.build_dir, ignore_errors=True)
    source_dir.mkdir(parents=True)
    (source_dir / "CMakeLists.txt").write_text(_PROJECT.format(package=build.package.as_posix(), prefix=build.prefix))
    log = build.build_dir / "build.log"
    env = dict(os.environ)
    env.pop("CMAKE_ARGS", None)  # a user's CMAKE_ARGS must not change the prefix under us
    for step in (configure, [cmake, "--build", str(binary_dir), "-j", str(build.jobs)]):
        with open(log, "ab") as sink:
            proc = subprocess.run(step, stdout=sink, stderr=subprocess.STDOUT, env=env, check=False)
        if proc.returncode != 0:
            raise AotiShimError(f"source route: {'configure' if step is configure else 'build'} failed: "
                                f"{_first_error(log)} (log: {log})")
    built = binary_dir / "blob_path.txt"
    blob = Path(built.read_text().strip())
    marker.write_text(str(blob))
    return blob


def _first_error(log: Path) -> str:
    for line in log.read_text(errors="replace").splitlines():
        if "Error" in line or "error:" in line or "FATAL" in line:
            return line.strip()[:200]
    return "see the log"
