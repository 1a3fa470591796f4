"""Find the torch that the built wheel will live next to, from inside a build.

pip runs an isolated build in the interpreter it installs for, with that environment's
site-packages hidden (its ``sitecustomize`` strips them from ``sys.path``), so torch is
usually not importable here. Ask that same interpreter with ``-E`` (which skips pip's
``PYTHONPATH`` overlay), from an empty folder, for its normal ``sys.path`` instead. ``AOTI_SHIM_TORCH`` names a
torch explicitly for front-ends that build in a separate venv (``python -m build``, uv).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Mapping
from glob import glob
from pathlib import Path

from aoti_shim.checks.snapshot.record import shipped_snapshots
from aoti_shim.errors import InputError, UsageError
from aoti_shim.torch_location import TORCH_ENV_VAR, TorchLocation, from_environment, in_process, in_sites

# Printed by the probed interpreter: every sys.path entry that holds torch/lib.
_PROBE = (
    "import json, os, sys\n"
    "print(json.dumps([p for p in sys.path if p and os.path.isdir(os.path.join(p, 'torch', 'lib'))]))\n"
)


def _probe_interpreter(python: str) -> list[Path]:
    if not python:  # an embedded interpreter has no executable to ask
        return []
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    try:
        # From an empty private folder: "-c" puts the current folder on the path (Python
        # 3.10 has no -P), and the project's own json.py must not run in the probe.
        with tempfile.TemporaryDirectory(prefix="aoti-shim-probe-") as empty:
            done = subprocess.run(
                [python, "-E", "-c", _PROBE],
                env=env,
                cwd=empty,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0 or not done.stdout.strip():
        return []
    try:
        found = json.loads(done.stdout.strip().splitlines()[-1])
    except ValueError:
        return []
    return [Path(p) for p in found if isinstance(p, str)]


def _prefix_sites(prefix: str) -> list[Path]:
    pattern = os.path.join(prefix, "lib", "python3*", "site-packages")
    return [Path(p) for p in sorted(glob(pattern))]


def _base_sites() -> list[Path]:
    scheme = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    return [Path(scheme["purelib"]), Path(scheme["platlib"])]


def _candidates(environ: Mapping[str, str]) -> Iterator[tuple[str, list[Path]]]:
    yield f"the interpreter pip installs for, {sys.executable}", _probe_interpreter(sys.executable)
    here = in_process()
    yield "this build environment", [] if here is None else [here.site]
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if environ.get(var):
            yield f"${var} ({environ[var]})", _prefix_sites(environ[var])
    yield f"the base interpreter ({sys.base_prefix})", _base_sites()


def find_torch(environ: Mapping[str, str] | None = None) -> TorchLocation:
    """The target environment's torch, or a usage error that says how to point at one."""
    environ = os.environ if environ is None else environ
    try:
        explicit = from_environment(environ)
    except InputError as e:
        raise UsageError(str(e)) from None  # inside a build it is the configuration that is wrong
    if explicit is not None:
        return explicit
    looked: list[str] = []
    for how, sites in _candidates(environ):
        looked.append(how)
        found = in_sites(sites, how)
        if found is not None:
            return found
    names = ", ".join(f'"{n}"' for n in shipped_snapshots()) or "none"
    raise UsageError(
        "against = \"torch\" but no torch installation was found (looked in "
        + "; ".join(looked)
        + f"). Fix: install torch where the package is installed, or set {TORCH_ENV_VAR}=<site-packages or torch "
            "folder>, "
        f"or set [tool.aoti-shim] against to a shipped snapshot ({names}) or to reference libraries "
        "(against = [] checks prefixes only)"
    )
