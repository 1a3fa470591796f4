"""Hostile torch locations: what $AOTI_SHIM_TORCH and `aoti-shim --torch-include-dir` do with a
FIFO for version.py, escape sequences in a version, paths that are not UTF-8, and top-level
flags mixed with a command. Every one is an answer or one line and a documented exit code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from aoti_shim.torch_location import SHIM_HEADER, TORCH_ENV_VAR
from cli_support import cli


def _site(root: Path, version: bytes | None = b"__version__ = '9.9.9'\n") -> Path:
    package = root / "site" / "torch"
    (package / "lib").mkdir(parents=True)
    (package / "include" / SHIM_HEADER).parent.mkdir(parents=True)
    (package / "include" / SHIM_HEADER).write_text("AOTITorchError aoti_torch_fake(int);\n")
    if version is not None:
        (package / "version.py").write_bytes(version)
    return root / "site"


def _env(**extra: str | bytes) -> dict[str | bytes, str | bytes]:
    env: dict[str | bytes, str | bytes] = {k: v for k, v in os.environb.items() if not k.startswith(b"AOTI_SHIM_TORCH")}
    env.update({os.fsencode(k): os.fsencode(v) for k, v in extra.items()})
    return env


def _cli(*args: str, cwd: Path, **extra: str | bytes) -> subprocess.CompletedProcess[bytes]:
    return cli(*args, cwd=cwd, env=_env(**extra), timeout=60, text=False)


def test_a_fifo_for_version_py_does_not_hang_the_lookup(tmp_path: Path) -> None:
    site = _site(tmp_path, version=None)
    os.mkfifo(site / "torch" / "version.py")
    # In a child with a timeout: before the fix, open() waited for a writer forever.
    probe = "import sys; from aoti_shim.torch_location import version_in; print(version_in(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", probe, str(site / "torch")], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0 and done.stdout == "None\n", done.stderr


def test_a_version_py_with_junk_bytes_still_yields_its_version(tmp_path: Path) -> None:
    from aoti_shim.torch_location import version_in

    site = _site(tmp_path, version=b"\xff\xfe\x00junk\r\n__version__ = '1.2.3'\r\n\x80")
    assert version_in(site / "torch") == "1.2.3"


def test_the_override_note_on_stderr_is_one_safe_line(tmp_path: Path, checker_libs) -> None:
    # torch/version.py is anyone's bytes: an escape sequence, a bell, a NUL, a bidi override.
    site = _site(tmp_path, version=b"__version__ = '2.0\x1b[31mRED\x07\x00\xe2\x80\xaeevil'\n")
    (site / "torch" / "lib" / "libtorch_python.so").write_bytes(Path(checker_libs["unprefixed_shim"]).read_bytes())
    done = _cli(
        "check",
        "--shim",
        str(checker_libs["clean_shim"]),
        "--against",
        "torch",
        cwd=tmp_path,
        **{TORCH_ENV_VAR: str(site)},
    )
    assert done.returncode in (0, 4, 8), done.stderr
    note = done.stderr.decode()
    assert "overrides the installed torch" in note and note.count("\n") == 1, note
    assert not any(c in note for c in "\x1b\x07\x00\u202e"), ascii(note)


def test_a_top_level_flag_with_a_command_or_another_flag_is_a_usage_error(tmp_path: Path) -> None:
    # Before: `aoti-shim --torch-include-dir check --shim x` printed a folder and exited 0,
    # the check never ran (a CI gate that passes).
    for args, says in (
        (
            ("--torch-include-dir", "check", "--shim", "x.so"),
            "--torch-include-dir takes no command or other flag (got the command 'check')",
        ),
        (
            ("--cmake-dir", "check", "--shim", "x.so"),
            "--cmake-dir takes no command or other flag (got the command 'check')",
        ),
        (
            ("--cmake-dir", "--torch-include-dir"),
            "--cmake-dir takes no command or other flag (got --torch-include-dir)",
        ),
    ):
        done = _cli(*args, cwd=tmp_path)
        assert (done.returncode, done.stdout) == (2, b""), (args, done)
        assert done.stderr.decode() == f"aoti-shim: error: {says}\n"


def test_torch_include_dir_prints_a_non_utf8_folder_as_its_bytes(tmp_path: Path) -> None:
    root = Path(os.fsdecode(os.fsencode(tmp_path) + b"/t\xff o"))
    site = _site(root)
    # A strict stdout (a UTF-8 locale other than C's): before, a UnicodeEncodeError traceback.
    done = _cli("--torch-include-dir", cwd=tmp_path, PYTHONIOENCODING="utf-8:strict", **{TORCH_ENV_VAR: str(site)})
    assert (done.returncode, done.stderr) == (0, b""), done.stderr
    assert done.stdout == os.fsencode(site / "torch" / "include") + b"\n"


def _without_dac_override() -> list[str]:
    """A command prefix under which file modes bind (root ignores them otherwise)."""
    if os.geteuid() != 0:
        return []
    import shutil

    import pytest

    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: file modes cannot be made to bind")
    drop = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={drop}", f"--inh-caps={drop}"]


def test_a_folder_that_cannot_be_searched_is_one_line_everywhere(tmp_path: Path) -> None:
    site = _site(tmp_path)
    (site / "torch" / "lib" / "libtorch_python.so").write_bytes(b"\x7fELF")  # never read: unreachable
    out = tmp_path / "out"
    prefix = _without_dac_override()
    commands = (("--torch-include-dir",), ("check", "--shim", sys.executable, "--against", "torch"),
                ("rename-header", "--output", str(out / "h.h")))
    for locked, says in (
        (site, f"$AOTI_SHIM_TORCH={site}: cannot read {site / 'torch' / 'lib'}: Permission denied"),
        (site / "torch", f"$AOTI_SHIM_TORCH={site}: cannot read {site / 'torch' / 'lib'}: Permission denied"),
        (site / "torch" / "include", "Permission denied"),
    ):
        locked.chmod(0)
        try:
            for args in commands if locked.name != "include" else commands[2:]:
                done = cli(*args, prefix=prefix, cwd=tmp_path, env=_env(**{TORCH_ENV_VAR: str(site)}), timeout=60)
                # Before: a PermissionError traceback from Path.is_dir (Python < 3.14).
                assert done.returncode == 1 and done.stdout == "", (locked, args, done.stderr)
                assert done.stderr.count("\n") == 1 and says in done.stderr, (locked, args, done.stderr)
                assert not out.exists()
        finally:
            locked.chmod(0o755)


def test_a_fifo_for_a_shim_header_does_not_hang_rename_header(tmp_path: Path) -> None:
    site = _site(tmp_path)
    header = site / "torch" / "include" / SHIM_HEADER
    header.unlink()
    os.mkfifo(header)
    done = _cli("rename-header", "--output", str(tmp_path / "out" / "h.h"), cwd=tmp_path, **{TORCH_ENV_VAR: str(site)})
    assert done.returncode == 1 and done.stderr.decode() == f"aoti-shim: error: {header}: not a regular file\n"
    assert not (tmp_path / "out").exists()


def _model_project(source: Path) -> Path:
    """A CMake project that builds the recorded package as a model: it asks for torch's headers."""
    from cmake_support import RECORDED_PACKAGE

    source.mkdir()
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(p LANGUAGES CXX)\nfind_package(AotiShim CONFIG REQUIRED)\n"
        f'aoti_shim_add_model(blob PACKAGE "{RECORDED_PACKAGE.as_posix()}" PREFIX myrt_)\n'
    )
    return source


def test_a_reconfigure_follows_a_changed_aoti_shim_torch_but_keeps_a_given_folder(
    cmake_project, tmp_path: Path
) -> None:
    from cmake_support import log

    source = _model_project(tmp_path / "src")
    a, b = _site(tmp_path / "a"), _site(tmp_path / "b")
    build = tmp_path / "build"

    def configured(site: Path, **defines: str) -> str:
        done = cmake_project(source, defines, build=build, env={TORCH_ENV_VAR: str(site)}).configure()
        assert done.returncode == 0, log(done)
        cached = [
            line
            for line in (build / "CMakeCache.txt").read_text().splitlines()
            if line.startswith("AOTI_SHIM_TORCH_INCLUDE_DIR:")
        ]
        return cached[0].split("=", 1)[1]

    assert configured(a) == str(a / "torch" / "include")
    # Before: the first answer stayed cached, and the build compiled against a's headers.
    assert configured(b) == str(b / "torch" / "include")
    # A folder the user gave is theirs: a changed $AOTI_SHIM_TORCH does not replace it.
    assert configured(b, AOTI_SHIM_TORCH_INCLUDE_DIR=str(a / "torch" / "include")) == str(a / "torch" / "include")
    assert configured(b) == str(a / "torch" / "include")


def test_smoke_refuses_a_bad_aoti_shim_torch_before_compiling(tmp_path: Path) -> None:
    bad = tmp_path / "gone"
    done = _cli(
        "smoke",
        "--route",
        "source",
        "--model",
        "mlp",
        "--no-control",
        "-q",
        "--cache-dir",
        str(tmp_path / "cache"),
        cwd=tmp_path,
        **{TORCH_ENV_VAR: str(bad)},
    )
    # Before: the model compiled, then a FAIL row in the table and exit 8 (as if the shims failed).
    assert (done.returncode, done.stdout) == (1, b""), done.stdout.decode()[-500:]
    assert done.stderr.decode() == f"aoti-shim: error: $AOTI_SHIM_TORCH={bad}: no torch/lib there (no such folder); " \
        "give a site-packages folder, a torch package folder or its lib/ folder\n"


def test_cmake_refuses_a_torch_whose_path_has_a_semicolon(cmake_project, tmp_path: Path) -> None:
    from cmake_support import log

    source = _model_project(tmp_path / "src")
    site = _site(tmp_path / "semi;colon")
    done = cmake_project(source, build=tmp_path / "build", env={TORCH_ENV_VAR: str(site)}).configure()
    message = " ".join(done.stderr.split())
    # Before: "Found relative path while evaluating include directories" at generate time.
    assert done.returncode != 0 and "relative path" not in message, log(done)
    assert f"aoti_shim_add_model: torch's include folder '{site / 'torch' / 'include'}' has a ';'" in message, log(done)
