"""What does the build backend's gate add to a build? ``pip wheel`` of one shim project
through ``aoti_shim.build`` against the same project through plain ``scikit_build_core.build``.

The project is fixtures/packages/plugin_clean (two C libraries, one prefixed shim library),
copied twice into a scratch folder: as it is, and with the plain backend and the same prefix
given to CMake as ``cmake.define.AOTI_SHIM_SYMBOL_PREFIX`` (what aoti_shim.build passes), so
both compile the same sources with the same flags. Each build is a whole
``pip wheel --no-build-isolation --no-deps`` process in this interpreter's environment (its
scikit-build-core, CMake, compiler and torch: the gate checks against the installed torch, as
by default), a fresh build folder each time, the two timed alternately so both meet the same
machine load; wall seconds and CPU seconds (the process and the children it waited for,
from ``wait4``), median of ``--repeat``.

Goal (issue 38 §3): the gate's build within 1.2x of the plain build.

    python bench/gate_speed.py --repeat 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROJECT = REPO / "fixtures" / "packages" / "plugin_clean"
GOAL_RATIO = 1.2
GATE_BACKEND = 'build-backend = "aoti_shim.build"'
PLAIN_BACKEND = 'build-backend = "scikit_build_core.build"'


def _prefix_of(pyproject: str) -> str:
    for line in pyproject.splitlines():
        if line.startswith("prefix = "):
            return line.split("=", 1)[1].strip().strip('"')
    sys.exit(f"gate_speed: {PROJECT}/pyproject.toml names no [tool.aoti-shim] prefix")


def _projects(work: Path) -> tuple[Path, Path]:
    """(the gate's copy, the plain copy) of the fixture project."""
    gated, plain = work / "gated", work / "plain"
    shutil.copytree(PROJECT, gated)
    shutil.copytree(PROJECT, plain)
    text = (PROJECT / "pyproject.toml").read_text()
    if GATE_BACKEND not in text:
        sys.exit(f"gate_speed: {PROJECT}/pyproject.toml no longer builds with aoti_shim.build")
    define = f'\n[tool.scikit-build.cmake.define]\nAOTI_SHIM_SYMBOL_PREFIX = "{_prefix_of(text)}"\n'
    (plain / "pyproject.toml").write_text(text.replace(GATE_BACKEND, PLAIN_BACKEND) + define)
    return gated, plain


def _build(project: Path, out: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one pip wheel of ``project`` (exit on failure)."""
    shutil.rmtree(out, ignore_errors=True)
    argv = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "-q",
        "--no-build-isolation",
        "--no-deps",
        "-w",
        str(out),
        str(project),
    ]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if status != 0 or not list(out.glob("*.whl")):
        sys.exit(f"gate_speed: pip wheel {project.name} failed ({status}):\n{err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aoti-shim-gate-bench-") as tmp:
        work = Path(tmp)
        gated, plain = _projects(work)
        _build(gated, work / "out-gated")  # warm: CMake's and the compiler's first start
        _build(plain, work / "out-plain")
        runs: dict[str, list[tuple[float, float]]] = {"gated": [], "plain": []}
        for _ in range(args.repeat):
            runs["gated"].append(_build(gated, work / "out-gated"))
            runs["plain"].append(_build(plain, work / "out-plain"))
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
    print(f"aoti-shim gate speed, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; project: {PROJECT.relative_to(REPO)}")
    print(f"median of {args.repeat} builds each, alternately")
    for name, label in (
        ("gated", "pip wheel, aoti_shim.build (the gate)"),
        ("plain", "pip wheel, scikit_build_core.build"),
    ):
        print(f"  {label:45s} {med[name][0]:7.3f} s wall  {med[name][1]:7.3f} s cpu")
    wall_ratio, cpu_ratio = med["gated"][0] / med["plain"][0], med["gated"][1] / med["plain"][1]
    added = med["gated"][0] - med["plain"][0]
    met = "met" if wall_ratio <= GOAL_RATIO else "NOT met"
    print(f"gate / plain: {wall_ratio:.3f}x wall ({added:+.3f} s), {cpu_ratio:.3f}x cpu; goal <= {GOAL_RATIO}x: {met}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
