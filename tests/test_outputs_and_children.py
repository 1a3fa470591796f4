"""Outputs never replace what they should not; children are isolated and die with their parent.

Issue 12 points 7, 8 and 9, on the real command line: ``check -o``, ``snapshot -o``
and ``rewrite-imports`` against inputs, FIFOs, device nodes, symlinks and
``/dev/stdout``; SIGTERM and SIGKILL during a LIEF rewrite; hostile ``json.py`` /
``lief.py`` files in the current folder.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_support import cli, one_line_error
from shims_support import imported_shim_names
from smoke_support import PREFIX

# The console script, as users run it: no current folder on its sys.path.
CLI = str(Path(sys.executable).parent / "aoti-shim")


def _copy_blob(fake, folder: Path, name: str = "model.so") -> Path:
    blob = folder / name
    blob.write_bytes(fake.blob.read_bytes())
    return blob


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# --- 12.7: what an output may replace -------------------------------------------------------


def test_check_output_never_lands_in_an_input_folder(fake, tmp_path: Path) -> None:
    # The output onto an input itself (by its path, a link, a hard link): tests/test_hostile_paths.py.
    before = fake.shims.read_bytes()
    folder = tmp_path / "libs"
    folder.mkdir()
    (folder / "libshims.so").write_bytes(before)
    line = one_line_error(cli("check", "--shim", str(folder), "-o", str(folder / "libshims.so")), 2)
    assert "lies in the input folder" in line
    assert (folder / "libshims.so").read_bytes() == before


@pytest.mark.parametrize("command", ["check", "scan", "check $GITHUB_STEP_SUMMARY"])
def test_an_output_on_a_kernel_file_system_is_refused_for_what_it_is(fake, tmp_path: Path, command: str) -> None:
    # Before review-fixes: "--output /proc/version: cannot write: No such file or directory (in
    # /proc)", after the whole check ran ("Invalid argument" for the step summary); the file is
    # there, and it is the kernel's.
    (tmp_path / "site").mkdir()
    env = {**os.environ, "GITHUB_STEP_SUMMARY": "/proc/version"}
    if command == "scan":
        done, what = cli("scan", str(tmp_path / "site"), "-o", "/proc/version"), "--output"
    elif command == "check":
        done, what = cli("check", "--shim", str(fake.shims), "-o", "/proc/version"), "--output"
    else:
        done, what = cli("check", "--shim", str(fake.shims), "--format", "github", env=env), "$GITHUB_STEP_SUMMARY"
    before = Path("/proc/version").read_bytes()
    assert one_line_error(done, 1) == (
        f"aoti-shim: error: {what} /proc/version: cannot write: a file of the kernel's proc file system (in /proc), "
        "which this command may not write; name a file to write"
    )
    assert Path("/proc/version").read_bytes() == before


def test_check_output_to_dev_stdout_writes_to_stdout(fake) -> None:
    proc = cli("check", "--shim", str(fake.shims), "--format", "json", "-o", "/dev/stdout")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["prefix"] == PREFIX


def test_rewrite_to_dev_stdout_writes_the_blob_to_stdout(fake, tmp_path: Path) -> None:
    blob = _copy_blob(fake, tmp_path)
    proc = subprocess.run(
        [CLI, "rewrite-imports", str(blob), "--prefix", PREFIX, "-o", "/dev/stdout"], capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(b"\x7fELF") and b"renamed 2 imports" in proc.stderr
    out = tmp_path / "from-stdout.so"
    out.write_bytes(proc.stdout)
    assert imported_shim_names(out) == {f"{PREFIX}aoti_torch_get_dim", f"{PREFIX}aoti_torch_dtype_float32"}


def test_rewrite_writes_through_links(fake, tmp_path: Path) -> None:
    real = _copy_blob(fake, tmp_path, "real.so")
    link = tmp_path / "link.so"
    link.symlink_to(real.name)
    # In place, through the link: the target is rewritten, the link stays a link.
    proc = cli("rewrite-imports", str(link), "--prefix", PREFIX)
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == "real.so"
    assert imported_shim_names(real) == {f"{PREFIX}aoti_torch_get_dim", f"{PREFIX}aoti_torch_dtype_float32"}
    # -o a link to another file: written through as well.
    blob = _copy_blob(fake, tmp_path, "model.so")
    other = tmp_path / "other.so"
    other.write_bytes(b"old")
    out_link = tmp_path / "out-link.so"
    out_link.symlink_to(other)
    proc = cli("rewrite-imports", str(blob), "--prefix", PREFIX, "-o", str(out_link))
    assert proc.returncode == 0, proc.stderr
    assert out_link.is_symlink() and imported_shim_names(other) == imported_shim_names(real)
    # -o a link to the blob, or a dangling link: refused (tests/test_hostile_paths.py).
    assert _hidden(tmp_path) == []


# --- 12.8: SIGTERM cleans up; no orphaned child --------------------------------------------


def _slow_lief(folder: Path, marker: Path) -> Path:
    """A LIEF that announces its pid and then takes its time (on the caller's PYTHONPATH)."""
    hook = folder / "hook"
    hook.mkdir()
    (hook / "lief.py").write_text(
        f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
    )
    return hook


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_rewrite_leaves_no_child_and_after_sigterm_no_temp_file(
    fake, tmp_path: Path, sig: signal.Signals
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    blob = _copy_blob(fake, work)
    marker = tmp_path / "child.pid"
    hook = _slow_lief(tmp_path, marker)
    env = {**os.environ, "PYTHONPATH": str(hook)}
    parent = subprocess.Popen([CLI, "rewrite-imports", str(blob), "--prefix", PREFIX], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (marker.is_file() and marker.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(marker.read_text())
        assert _alive(child)
        parent.send_signal(sig)
        _, err = parent.communicate(timeout=60)
    finally:
        if parent.poll() is None:
            parent.kill()
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the LIEF child outlived its parent"
    if sig == signal.SIGTERM:
        assert parent.returncode == 128 + signal.SIGTERM
        assert err.strip() == "aoti-shim: terminated"
        assert _hidden(work) == []  # no partial .tmp file
    assert imported_shim_names(blob) == {"aoti_torch_get_dim", "aoti_torch_dtype_float32"}  # untouched


# --- 12.9: children never import from the current folder ----------------------------------


def _hostile(folder: Path, marker: Path) -> None:
    for name in ("json", "lief", "runpy", "subprocess"):
        (folder / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\nraise SystemExit(3)\n")


def test_rewrite_worker_ignores_modules_in_the_current_folder(fake, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    marker = tmp_path / "ran"
    _hostile(work, marker)
    blob = _copy_blob(fake, work)
    proc = subprocess.run(
        [CLI, "rewrite-imports", "model.so", "--prefix", PREFIX], cwd=work, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists(), marker.read_text()
    assert imported_shim_names(blob) == {f"{PREFIX}aoti_torch_get_dim", f"{PREFIX}aoti_torch_dtype_float32"}


def test_every_python_child_starts_isolated(tmp_path: Path) -> None:
    # The smoke's compile and run children start the same way as the rewrite worker.
    from aoti_shim.children import python_argv

    marker = tmp_path / "ran"
    _hostile(tmp_path, marker)
    probe = tmp_path / "probe.json"
    probe.write_text('{"a": 1}')
    proc = subprocess.run(
        python_argv("json.tool", str(probe)), cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"a": 1} and not marker.exists()
    assert python_argv("json.tool")[1] == "-I"
    # Nothing in the installed package starts "python -m" itself.
    import aoti_shim

    root = Path(aoti_shim.__file__).parent
    offenders = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if p.name != "children.py" and '"-m", "aoti_shim' in p.read_text(encoding="utf-8")
    ]
    assert offenders == []



def test_the_backends_torch_probe_ignores_the_project_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pip runs the backend in the project's folder; a json.py there must not run in the probe.
    from aoti_shim.plugin import target_env

    marker = tmp_path / "ran"
    project = tmp_path / "project"
    project.mkdir()
    _hostile(project, marker)
    monkeypatch.chdir(project)
    found = target_env._probe_interpreter(sys.executable)
    assert any((p / "torch" / "lib").is_dir() for p in found)
    assert not marker.exists()
