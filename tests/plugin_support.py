"""Real pip installs of fixture projects, with no network: a wheelhouse and a target env.

The wheelhouse holds wheels repacked from the distributions installed in the test
environment (aoti-shim itself, scikit-build-core and everything they require), so an
isolated build resolves its build requirements from it with ``PIP_NO_INDEX``. The
target environment is a bare venv that sees the test environment's packages (torch,
pip, scikit-build-core) through a ``.pth`` file, the way a user's venv has torch:
pip's isolated builds hide it, as they hide any site-packages.
"""

from __future__ import annotations

import csv
import importlib.metadata as metadata
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wheel_support import record_hash

REPO = Path(__file__).resolve().parents[1]
PACKAGES = REPO / "fixtures" / "packages"

# Dist-info files that describe one installation, not the distribution.
_INSTALL_ONLY = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
# Environment variables that would leak the developer's or CI's settings into a build.
_SCRUBBED_PREFIXES = ("PIP_", "SKBUILD_", "AOTI_SHIM_", "PYTHON")
_SCRUBBED = {"CMAKE_ARGS", "VIRTUAL_ENV", "CONDA_PREFIX", "CMAKE_BUILD_TYPE"}


# A project declaring aoti-shim.prefix as a config-setting of its own: a default and an env.
DECLARED_PREFIX = {"config-setting": {"aoti-shim.prefix": {"default": "decl_", "env": "MYRT_PREFIX"}}}


def pyproject_tables(tool: dict[str, Any] | None = None, skb: dict[str, Any] | None = None) -> dict[str, Any]:
    """A parsed pyproject.toml holding these [tool.aoti-shim] and [tool.scikit-build] tables."""
    return {"tool": {"aoti-shim": tool or {}, "scikit-build": skb or {}}}


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _wheel_tag(dist: metadata.Distribution) -> str:
    tags = [
        line.split(":", 1)[1].strip()
        for line in (dist.read_text("WHEEL") or "").splitlines()
        if line.startswith("Tag:")
    ]
    if not tags:
        raise RuntimeError(f"{dist.metadata['Name']}: installed without a WHEEL file; cannot repack")
    parts = [t.split("-") for t in tags]
    # Compressed tag sets, as wheel filenames write them (py3-none-manylinux_a.manylinux_b).
    return "-".join(".".join(dict.fromkeys(p[i] for p in parts)) for i in range(3))


def _console_scripts(dist: metadata.Distribution) -> set[str]:
    return {ep.name for ep in dist.entry_points if ep.group in ("console_scripts", "gui_scripts")}


def repack_installed(name: str, dest: Path, compress: bool = True) -> Path:
    """A wheel of the installed distribution ``name`` (pip regenerates its console scripts)."""
    dist = metadata.distribution(name)
    version = dist.version
    site = Path(str(dist.locate_file(""))).resolve()
    env_root = site.parents[2] if site.name == "site-packages" else site
    data_dir = f"{_normalize(dist.metadata['Name'])}-{version}.data"
    scripts = _console_scripts(dist)
    records: list[tuple[str, str, str]] = []
    dist_info: str | None = None
    wheel = dest / f"{_normalize(dist.metadata['Name'])}-{version}-{_wheel_tag(dist)}.whl"
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(wheel, "w", compression=method, compresslevel=1 if compress else None) as zf:
        for entry in dist.files or ():
            rel = str(entry)
            parts = Path(rel).parts
            if "__pycache__" in parts or rel.endswith(".pyc"):
                continue
            if parts[0].endswith(".dist-info"):
                dist_info = parts[0]
                if parts[-1] in _INSTALL_ONLY:
                    continue
            source = (site / rel).resolve()
            if not source.is_file():
                continue
            if parts[0] == "..":
                # Outside site-packages: scripts and data files go back under .data/.
                inside = source.relative_to(env_root)
                if inside.parts[0] == "bin":
                    if source.name in scripts:
                        continue
                    arcname = f"{data_dir}/scripts/{source.name}"
                else:
                    arcname = f"{data_dir}/data/{inside.as_posix()}"
            else:
                arcname = Path(rel).as_posix()
            data = source.read_bytes()
            info = zipfile.ZipInfo.from_file(source, arcname)
            info.compress_type = method
            zf.writestr(info, data)
            records.append((arcname, record_hash(data), str(len(data))))
        if dist_info is None:
            raise RuntimeError(f"{name}: no .dist-info in its RECORD; cannot repack")
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerows(records)
        writer.writerow((f"{dist_info}/RECORD", "", ""))
        zf.writestr(f"{dist_info}/RECORD", buf.getvalue())
    return wheel


def requirement_closure(roots: tuple[str, ...]) -> list[str]:
    """The installed distributions ``roots`` need at run time (extras left out)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: dict[str, None] = {}
    queue = list(roots)
    while queue:
        name = canonicalize_name(queue.pop(0))
        if name in seen:
            continue
        seen[name] = None
        for spec in metadata.distribution(name).requires or ():
            req = Requirement(spec)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            queue.append(req.name)
    return list(seen)


def _system_tool(name: str) -> bool:
    """Whether ``name`` is on PATH outside the test environment (isolated builds use it)."""
    here = Path(sys.prefix).resolve()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(folder) / name
        if candidate.is_file() and os.access(candidate, os.X_OK) and here not in candidate.resolve().parents:
            return True
    return False


def assemble_wheelhouse(dest: Path) -> Path:
    """Every wheel an isolated build of a fixture project needs."""
    dest.mkdir(parents=True, exist_ok=True)
    roots = ["aoti-shim", "scikit-build-core"]
    # scikit-build-core asks for cmake/ninja only when the system lacks them.
    roots += [tool for tool in ("cmake", "ninja") if not _system_tool(tool)]
    for name in requirement_closure(tuple(roots)):
        repack_installed(name, dest)
    return dest


def hermetic_env(wheelhouse: Path, **extra: str) -> dict[str, str]:
    """The environment for one pip run: offline, no user configuration, no leaked build settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_SCRUBBED_PREFIXES) and k not in _SCRUBBED
    }
    env.update(
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(wheelhouse),
        PIP_CONFIG_FILE=os.devnull,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_CACHE_DIR="1",
        PIP_NO_INPUT="1",
    )
    env.update(extra)
    return env


@dataclass(frozen=True)
class TargetEnv:
    """A venv to install into; it sees the test environment's packages, not its own builds."""

    root: Path
    wheelhouse: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def site(self) -> Path:
        return Path(sysconfig.get_paths(vars={"base": str(self.root), "platbase": str(self.root)})["purelib"])

    def pip(self, *args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.python), "-m", "pip", *args],
            cwd=cwd,
            env=hermetic_env(self.wheelhouse, **env),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )

    def installed(self, dist_name: str) -> bool:
        norm = _normalize(dist_name)
        return any(_normalize(p.name.split("-")[0]) == norm for p in self.site.glob("*.dist-info"))


def make_target_env(root: Path, wheelhouse: Path, sites: tuple[str, ...] | None = None) -> TargetEnv:
    """A bare venv; ``sites`` (default: the test env's site-packages) are visible in it."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    env = TargetEnv(root=root, wheelhouse=wheelhouse)
    # An executed .pth line, so the test env's own .pth files count too. The fresh
    # known-paths set matters: pip's isolation re-runs this .pth to learn which paths
    # to hide, and an addsitedir that skipped already-present paths would hide nothing.
    if sites is None:
        sites = tuple(dict.fromkeys((sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])))
    lines = "".join(f"import site; site.addsitedir({s!r}, set())\n" for s in sites)
    (env.site / "_aoti_shim_test_env.pth").write_text(lines)
    return env


def copy_fixture(name: str, dest: Path) -> Path:
    """A private copy of fixtures/packages/<name> (builds write into the source tree)."""
    target = dest / name
    shutil.copytree(PACKAGES / name, target, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    return target
