"""The backend publishes only checked wheels, with the prefix the shims really carry.

Real in-process and subprocess builds of fixtures/packages/plugin_clean: CMake given
another prefix than the one requested must fail the build, and a backend killed at any
stage (SIGTERM or SIGKILL, while CMake runs or while the check runs) leaves no wheel in
the wheel folder; after SIGTERM it leaves no temp folder and no child either.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aoti_shim.errors import EXIT_BLOCKING

ENV_FREE = ("AOTI_SHIM_PREFIX", "AOTI_SHIM_TORCH", "CMAKE_ARGS", "SKBUILD_CMAKE_DEFINE", "SKBUILD_CMAKE_ARGS")


@pytest.fixture(autouse=True)
def _clean_build_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_FREE:
        monkeypatch.delenv(name, raising=False)


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "aoti-shim: error:" in line]


@pytest.mark.parametrize("how", ["init-cache-force", "hard-coded"])
def test_cmake_given_another_prefix_fails_the_build(
    plugin_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    import aoti_shim.build as backend

    project = plugin_project("plugin_clean")
    if how == "init-cache-force":
        init = tmp_path / "init.cmake"
        init.write_text('set(AOTI_SHIM_SYMBOL_PREFIX "other_" CACHE STRING "" FORCE)\n')
        monkeypatch.setenv("CMAKE_ARGS", f"-C {init}")
    else:
        lists = project / "CMakeLists.txt"
        lists.write_text(
            lists.read_text().replace("aoti_shim_prefix(pclean_shims)", "aoti_shim_prefix(pclean_shims PREFIX other_)")
        )
    out_dir = tmp_path / "dist"
    out_dir.mkdir()
    monkeypatch.chdir(project)
    with pytest.raises(SystemExit) as done:
        backend.build_wheel(str(out_dir), {"aoti-shim.against": "torch-2.13.0+cpu"})
    captured = capsys.readouterr()
    assert done.value.code == EXIT_BLOCKING, captured.out + captured.err
    assert "aoti-shim: prefix: pclean_ (from [tool.aoti-shim] prefix)" in captured.out
    errors = _error_lines(captured.err)
    assert len(errors) == 1, captured.err
    assert "carry the prefix 'other_', not 'pclean_' (from [tool.aoti-shim] prefix)" in errors[0]
    assert list(out_dir.iterdir()) == []


def test_prefix_left_to_cmake_is_read_from_the_shims(
    plugin_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import aoti_shim.build as backend

    project = plugin_project("plugin_clean")
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('prefix = "pclean_"', ""))
    lists = project / "CMakeLists.txt"
    lists.write_text(
        lists.read_text().replace("aoti_shim_prefix(pclean_shims)", "aoti_shim_prefix(pclean_shims PREFIX mine_)")
    )
    out_dir = tmp_path / "dist"
    out_dir.mkdir()
    monkeypatch.chdir(project)
    name = backend.build_wheel(str(out_dir), {"aoti-shim.against": "torch-2.13.0+cpu"})
    assert "aoti-shim: prefix: mine_ (read from the built shims)" in capsys.readouterr().out
    assert [p.name for p in out_dir.iterdir()] == [name]


# --- killed at each stage -------------------------------------------------------------------

_BACKEND = ("import sys, aoti_shim.build as b; print('PUBLISHED:', b.build_wheel(sys.argv[1], {'aoti-shim.against': "
    "'torch-2.13.0+cpu'}), flush=True)")


def _session_processes(sid: int) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(f"{entry.name}: {stat[: stat.rindex(')') + 1]}")
    return found


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
@pytest.mark.parametrize(
    ("stage", "marker"),
    [("cmake", "-- Configuring done"), ("check", "aoti-shim: checking ")],
)
def test_killed_backend_leaves_no_unchecked_wheel(
    plugin_project, tmp_path: Path, sig: signal.Signals, stage: str, marker: str
) -> None:
    project = plugin_project("plugin_clean")
    out_dir = tmp_path / "dist"
    out_dir.mkdir()
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ENV_FREE}
    env.update(TMPDIR=str(tmpdir), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-c", _BACKEND, str(out_dir)],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    seen: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if marker in line:
                proc.send_signal(sig)
                break
        else:
            pytest.fail("the build ended before the stage was reached:\n" + "".join(seen))
        rest = proc.stdout.read()
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    log = "".join(seen) + rest
    assert "PUBLISHED:" not in log
    # Nothing that looks like a wheel, anywhere under the wheel folder.
    assert [p for p in out_dir.rglob("*") if p.name.endswith(".whl")] == [], log
    if sig == signal.SIGTERM:
        assert code == 128 + signal.SIGTERM, log
        assert "aoti-shim: error: terminated (SIGTERM); nothing was published" in log
        assert list(tmpdir.iterdir()) == [], log  # no private folder left behind
        deadline = time.monotonic() + 10
        while _session_processes(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _session_processes(proc.pid) == [], log


def test_no_prefix_under_pip_names_the_pyproject_setting(
    plugin_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    # Under pip the fix is a [tool.aoti-shim] key; CMake's message named -DAOTI_SHIM_SYMBOL_PREFIX,
    # which a pip user does not pass.
    import aoti_shim.build as backend

    project = plugin_project("plugin_clean")
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('prefix = "pclean_"', ""))
    out_dir = tmp_path / "dist"
    out_dir.mkdir()
    monkeypatch.chdir(project)
    with pytest.raises(SystemExit) as done:
        backend.build_wheel(str(out_dir), {"aoti-shim.against": "torch-2.13.0+cpu"})
    assert done.value.code not in (0, None)
    captured = capfd.readouterr()
    printed = " ".join((captured.out + captured.err).split())
    assert (
        "aoti_shim_prefix: no prefix for 'pclean_shims': set prefix = \"<p>\" under [tool.aoti-shim] in pyproject.toml "
        "(or pip's -C aoti-shim.prefix=<p>), or pass PREFIX <p>"
    ) in printed, printed
    assert "-DAOTI_SHIM_SYMBOL_PREFIX" not in printed
    assert list(out_dir.iterdir()) == []
