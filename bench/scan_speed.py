"""How fast is ``aoti-shim scan`` next to ``nm -D`` over the same library files?

Builds (or takes, ``--venv``) a virtual environment holding torch 2.13 and aoti-shim itself
(this installation written back as a wheel by ``aoti-shim wheelhouse``: its prefixed reference
shims are a runtime the scan judges), then, in one run and alternately so that both meet the
same machine load:

- scan: the whole ``aoti-shim scan VENV`` process (reading every distribution's RECORD,
  walking the site folder, reading every library and judging them);
- nm: ``nm -D`` over exactly the ELF files the scan read (its libraries, and the programs it
  read and found no shim ABI in), as one process (the strict anchor) and once per file,
  summed (the anchor bench/check_speed.py uses).

Each is the median wall time of ``--repeat`` warm runs, with CPU seconds beside it (on a
shared machine the wall clock also counts waiting for a core) and the peak resident memory
from ``wait4``. Memory: the scan of the whole venv against the scan of a site folder holding
only its largest library; bounded by the largest library means the two are close.

    python bench/scan_speed.py                       # torch==2.13.0 from pip's configured index
    python bench/scan_speed.py --torch-wheel /opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl
    python bench/scan_speed.py --venv .venv          # an existing environment, as it is
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# The check's bench's process timer, beside this file.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from check_speed import Run, run_process, summary

# Issue 35: the scan within 1.2x of one nm -D process over the same files.
GOAL_RATIO = 1.2
CLI = [sys.executable, "-m", "aoti_shim", "scan"]


def build_venv(work: Path, torch_wheel: str | None) -> Path:
    """A venv of torch and aoti-shim's own wheel; the bench needs the package, not tests/."""
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    wheels = work / "wheels"
    _run([sys.executable, "-m", "aoti_shim", "wheelhouse", str(wheels)], "aoti-shim wheelhouse")
    # torch from pip's own configuration (an index or find-links), unless a wheel is named.
    target = torch_wheel or "torch==2.13.0"
    own = sorted(wheels.glob("aoti_shim-*.whl"))
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-deps", "-q"]
    _run([*pip, target, *map(str, own)], f"pip install {target}")
    return venv


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"scan_speed: {what} failed:\n{done.stderr[-2000:]}")


def library_files(venv: Path, work: Path) -> tuple[list[str], dict]:
    done = subprocess.run([*CLI, str(venv), "--format", "json"], capture_output=True, text=True, check=False, cwd=work)
    if done.returncode not in (0, 4, 8):
        sys.exit(f"scan_speed: scan failed: {done.stderr.strip()}")
    doc = json.loads(done.stdout)
    files = []
    for dist in doc["distributions"]:
        for lib in dist["libraries"]:
            files.append(os.path.normpath(os.path.join(dist["location"], lib["path"])))
    files += [lib["path"] for lib in doc["unowned"]]
    # The programs it read too (and found no shim ABI in): the same files, all of them.
    sites = doc["environment"]["site_folders"]
    for entry in doc["ignored"]:
        if entry["kind"] == "program":
            found = [os.path.normpath(os.path.join(site, entry["path"])) for site in sites]
            files += [f for f in found if os.path.isfile(f)][:1]
    return files, doc


def largest_alone(files: list[str], work: Path) -> Path:
    """A site folder whose one distribution holds only the largest library (a link to it)."""
    big = max(files, key=os.path.getsize)
    site = work / "largest-only"
    shutil.rmtree(site, ignore_errors=True)
    info = site / "largest-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "largest").mkdir()
    os.symlink(big, site / "largest" / os.path.basename(big))
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: largest\nVersion: 1.0\n")
    (info / "RECORD").write_text(f"largest/{os.path.basename(big)},,\nlargest-1.0.dist-info/METADATA,,\n")
    return site


def nm_per_file(nm: str, files: list[str], work: str) -> Run:
    runs = [run_process([nm, "-D", f], work) for f in files]
    bad = [r for r in runs if r.status != "ok"]
    if bad:
        return bad[0]
    return Run(sum(r.seconds for r in runs), max(r.peak_mib for r in runs), "ok", sum(r.cpu for r in runs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", type=Path, help="scan this environment instead of building one")
    parser.add_argument("--torch-wheel", help="install torch from this wheel (default: torch==2.13.0 through pip)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temp folder, removed)")
    args = parser.parse_args()
    nm = shutil.which("nm")
    if nm is None:
        sys.exit("scan_speed: nm (binutils) not found")
    work = args.work or Path(tempfile.mkdtemp(prefix="aoti-shim-scan-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    # Bytecode as an installed package has it (pip compiles .pyc files), kept out of the tree:
    # with PYTHONDONTWRITEBYTECODE set and no .pyc beside the sources, every timed scan would
    # compile the package again (a fifth of its time), which no user's install does.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    try:
        venv = args.venv.resolve() if args.venv else build_venv(work, args.torch_wheel)
        files, doc = library_files(venv, work)
        torch = [d["version"] for d in doc["distributions"] if d["name"] == "torch"]
        size = sum(os.path.getsize(f) for f in files)
        print(f"environment: {doc['environment']['description']}; torch {torch[0] if torch else 'absent'}")
        print(
            f"libraries: {len(files)} files, {size / 2**20:.0f} MiB; largest "
            f"{max(map(os.path.getsize, files)) / 2**20:.0f} MiB"
        )
        scan_argv, nm_argv = [*CLI, str(venv)], [nm, "-D", *files]
        run_process(scan_argv, str(work)), run_process(nm_argv, str(work))  # warm the page cache
        scans, nms = [], []
        for _ in range(args.repeat):  # alternately: both meet the same load
            scans.append(run_process(scan_argv, str(work)))
            nms.append(run_process(nm_argv, str(work)))
        bad = [r for r in (*scans, *nms) if r.status != "ok"]
        if bad:
            sys.exit(f"scan_speed: a run failed: {bad[0].status}")
        scan, one_nm = summary(scans), summary(nms)
        per_file = nm_per_file(nm, files, str(work))
        alone = summary([run_process([*CLI, str(largest_alone(files, work))], str(work)) for _ in range(3)])
        rows = (
            ("aoti-shim scan VENV", scan),
            ("nm -D, one process over every file", one_nm),
            ("nm -D, once per file (summed)", per_file),
            ("aoti-shim scan of the largest library alone", alone),
        )
        for label, r in rows:
            print(f"  {label:<46} {r.seconds:7.3f} s wall  {r.cpu:7.3f} s cpu  {r.peak_mib:7.1f} MiB peak")
        ratio, ratio_cpu = scan.seconds / one_nm.seconds, scan.cpu / one_nm.cpu
        print(f"ratio scan / nm -D (one process): {ratio:.2f}x wall, {ratio_cpu:.2f}x cpu "
              f"(goal <= {GOAL_RATIO}x: {'met' if ratio <= GOAL_RATIO else 'NOT met'})")
        print(f"ratio scan / nm -D (once per file): {scan.seconds / per_file.seconds:.2f}x wall")
        print(f"memory: {scan.peak_mib:.1f} MiB for the venv, {alone.peak_mib:.1f} MiB for its largest library alone "
              f"({scan.peak_mib / alone.peak_mib:.2f}x)")
        print(
            f"scan wall times: {', '.join(f'{r.seconds:.3f}' for r in scans)}; median "
            f"{statistics.median(r.seconds for r in scans):.3f}"
        )
        return 0
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
