"""aoti-shim under every Python that torch 2.11 to 2.14 supports (3.10 to 3.13).

The installed aoti-shim (a py3 wheel: no Python extension inside) is repacked once and
installed into a fresh venv of each other Python found on this machine; there the
checker runs and a fixture shim project is built through the ``aoti_shim.build``
backend. torch itself is only installed where a torch wheel for that Python lies in
pip's configured find-links (this suite's own Python covers torch everywhere else).
Installing the dependencies (lief, scikit-build-core...) asks pip's configured index.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from plugin_support import copy_fixture, repack_installed

pytestmark = pytest.mark.slow

VERSIONS = ("3.10", "3.12", "3.13")


def _interpreter(version: str) -> str | None:
    """A working python<version>: pyenv's installed versions first (its shims on PATH
    refuse a version that is not selected), then PATH."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [str(p) for p in sorted(pyenv.glob(f"{version}.*/bin/python{version}"), reverse=True)]
    candidates += [found] if (found := shutil.which(f"python{version}")) else []
    for candidate in candidates:
        probe = subprocess.run([candidate, "-c", "import venv"], capture_output=True, timeout=60, check=False)
        if probe.returncode == 0:
            return candidate
    return None


@dataclass(frozen=True)
class Outcome:
    version: str
    interpreter: str | None
    steps: tuple[tuple[str, subprocess.CompletedProcess[str]], ...] = ()

    def step(self, name: str) -> subprocess.CompletedProcess[str]:
        return dict(self.steps)[name]


def _env(venv: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AOTI_SHIM_", "SKBUILD_", "PYTHON")) and k != "CMAKE_ARGS"
    }
    # The venv's scripts first, then this suite's (cmake and ninja: nothing to download for them).
    env["PATH"] = os.pathsep.join([str(venv / "bin"), str(Path(sys.executable).parent), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(venv)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _exercise(version: str, wheel: Path, libs: dict[str, Path], work: Path) -> Outcome:
    interpreter = _interpreter(version)
    if interpreter is None:
        return Outcome(version, None)
    venv = work / f"venv-{version}"
    env = _env(venv)
    steps: list[tuple[str, subprocess.CompletedProcess[str]]] = []

    def run(name: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(list(args), capture_output=True, text=True, env=env, cwd=cwd, timeout=900, check=False)
        steps.append((name, proc))
        return proc

    py = str(venv / "bin" / "python")
    if run("venv", interpreter, "-m", "venv", str(venv)).returncode != 0:
        return Outcome(version, interpreter, tuple(steps))
    if run("install", py, "-m", "pip", "install", "-q", str(wheel), "scikit-build-core>=1.1,<2").returncode != 0:
        return Outcome(version, interpreter, tuple(steps))
    aoti_shim = str(venv / "bin" / "aoti-shim")
    run("version", aoti_shim, "--version")
    snapshot = "torch-2.13.0+cpu"
    run("check clean", aoti_shim, "check", "--shim", str(libs["clean_shim"]), "--against", snapshot)
    run(
        "check collision",
        aoti_shim,
        "check",
        "--shim",
        str(libs["unprefixed_shim"]),
        "--prefix",
        "myrt_",
        "--against",
        snapshot,
    )
    project = copy_fixture("plugin_clean", work / f"project-{version}")
    dist = work / f"dist-{version}"
    run("backend build", py, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", str(dist),
        "--config-settings", f"aoti-shim.against={snapshot}", str(project))
    built = sorted(dist.glob("plugin_clean-*.whl"))
    if built:
        run("check built wheel", aoti_shim, "check", "--shim", str(built[0]), "--against", snapshot)
    # torch where pip finds a wheel of it for this Python without an index (find-links only).
    if run("torch", py, "-m", "pip", "install", "-q", "--no-index", "torch==2.13.0").returncode == 0:
        run("check against torch", aoti_shim, "check", "--shim", str(libs["clean_shim"]), "--against", "torch")
    return Outcome(version, interpreter, tuple(steps))


@pytest.fixture(scope="module")
def outcomes(checker_libs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    work = tmp_path_factory.mktemp("pythons")
    wheel = repack_installed("aoti-shim", work)
    with ThreadPoolExecutor(max_workers=len(VERSIONS)) as pool:
        found = pool.map(lambda v: _exercise(v, wheel, checker_libs, work), VERSIONS)
    return {o.version: o for o in found}


def _show(outcome: Outcome) -> str:
    return "\n".join(
        f"--- {name} (exit {p.returncode})\n{p.stdout[-2000:]}{p.stderr[-3000:]}" for name, p in outcome.steps
    )


def test_the_package_declares_python_3_10_to_3_13() -> None:
    from importlib.metadata import metadata

    meta = metadata("aoti-shim")
    assert meta["Requires-Python"] == ">=3.10"
    classifiers = set(meta.get_all("Classifier") or ())
    assert {f"Programming Language :: Python :: 3.{minor}" for minor in (10, 11, 12, 13)} <= classifiers


@pytest.mark.parametrize("version", VERSIONS)
def test_checker_and_backend_under_each_python(outcomes: dict[str, Outcome], version: str) -> None:
    outcome = outcomes[version]
    if outcome.interpreter is None:
        pytest.skip(f"no Python {version} on this machine (python{version} or pyenv)")
    log = _show(outcome)
    assert [
        name for name, p in outcome.steps if p.returncode != 0 and name not in ("check collision", "torch")
    ] == [], log
    assert outcome.step("install").returncode == 0, log
    assert outcome.step("version").returncode == 0, log
    assert outcome.step("check clean").returncode == 0, log
    collision = outcome.step("check collision")
    assert collision.returncode == 8 and "COLLISION" in collision.stdout, log
    assert outcome.step("backend build").returncode == 0, log
    assert outcome.step("check built wheel").returncode == 0, log
    if "check against torch" in dict(outcome.steps):
        assert outcome.step("check against torch").returncode == 0, log
