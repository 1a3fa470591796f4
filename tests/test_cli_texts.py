"""What a user reads: snapshots by name, check's text and help, the project's words."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from cli_support import CLI, cli, one_line_error

REPO = Path(__file__).resolve().parents[1]
# -P: the installed package, never the clone's folders.


# --- snapshots by name ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["torch-2.14.1+cu130", "torch-2.14.1+cu130.json.gz"])
def test_check_against_a_shipped_snapshot_by_name(checker_libs, tmp_path: Path, name: str) -> None:
    # From a folder with no such file: the name alone finds the shipped snapshot.
    bad = cli(
        "check", "--shim", str(checker_libs["unprefixed_shim"]), "--prefix", "myrt_", "--against", name, cwd=tmp_path
    )
    assert bad.returncode == 8, bad.stderr
    assert "COLLISION" in bad.stdout and "aoti_torch_empty_strided" in bad.stdout and "libtorch_cpu.so" in bad.stdout
    clean = cli("check", "--shim", str(checker_libs["clean_shim"]), "--against", name, cwd=tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr


def test_a_file_of_that_name_beats_the_shipped_snapshot(checker_libs, tmp_path: Path) -> None:
    # A user's own library that happens to carry a snapshot's name is read as that file.
    (tmp_path / "torch-2.14.1+cu130").mkdir()
    result = cli("check", "--shim", str(checker_libs["unprefixed_shim"]), "--prefix", "myrt_",
                     "--against", "torch-2.14.1+cu130", cwd=tmp_path)
    assert "libtorch_cpu.so" not in result.stdout


def test_an_unknown_snapshot_name_lists_the_shipped_ones(checker_libs, tmp_path: Path) -> None:
    result = cli("check", "--shim", str(checker_libs["clean_shim"]), "--against", "torch-9.9.9+cpu", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "torch-9.9.9+cpu: no such file, nor a shipped snapshot" in line and "torch-2.14.1+cu130" in line


def test_the_command_and_the_plugin_share_one_resolver() -> None:
    from aoti_shim.checks.references.reference import resolve_snapshot_name
    from aoti_shim.checks.snapshot.record import shipped, shipped_snapshots

    assert set(shipped_snapshots()) >= {"torch-2.11.0+cu130", "torch-2.13.0+cpu", "torch-2.14.1+cu130"}
    for path in shipped():
        assert resolve_snapshot_name(path.name) == path
        assert resolve_snapshot_name(path.name[: -len(".json.gz")]) == path
    assert resolve_snapshot_name("sub/torch-2.13.0+cpu") is None
    assert resolve_snapshot_name("torch-9.9.9") is None
    gate = (REPO / "plugin" / "gate.py").read_text()
    assert "resolve_snapshot_name(" in gate and "shipped_snapshots()" not in gate


# --- check's text and help ------------------------------------------------------------


def test_a_prefix_inferred_from_the_models_says_so(checker_libs) -> None:
    result = cli("check", "--model", str(checker_libs["good_model"]))
    lines = result.stdout.splitlines()
    assert lines[0] == "prefix: myrt_ (inferred from the models' imports)", result.stdout
    assert lines[1].startswith("checked: 0 shim libraries, 1 model(s)")


def test_check_help_describes_every_choice() -> None:
    from aoti_shim.checks.check.command import COLOR_HELP, FAIL_ON_HELP, FORMAT_HELP
    from aoti_shim.checks.formats import FORMATS
    from aoti_shim.checks.report.model import FAIL_ON_CHOICES

    assert set(FORMAT_HELP) == set(FORMATS) and set(FAIL_ON_HELP) == set(FAIL_ON_CHOICES)
    result = cli("check", "--help")
    text = " ".join(result.stdout.split())  # argparse wraps lines
    for described in (FORMAT_HELP, FAIL_ON_HELP, COLOR_HELP):
        for choice, what in described.items():
            assert f"{choice}: {' '.join(what.split())}" in text


@pytest.mark.parametrize("command", ["check", "scan", "snapshot", "rename-header", "smoke", "rewrite-imports"])
def test_help_shows_no_docstring_markup(command: str) -> None:
    result = cli(command, "--help")
    assert result.returncode == 0
    assert "``" not in result.stdout and ":func:" not in result.stdout, result.stdout


def test_each_command_is_registered_by_the_module_the_cli_names() -> None:
    # A command line naming a command builds a parser of that command alone (its module's
    # imports only): the table must say which module registers which name.
    import argparse

    from aoti_shim.cli import COMMANDS, build_parser

    def names(parser: argparse.ArgumentParser) -> list[str]:
        return list(next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices)

    assert names(build_parser()) == list(COMMANDS)
    assert {command: names(build_parser(command)) for command in COMMANDS} == {
        command: [command] for command in COMMANDS
    }


def test_a_command_line_imports_only_its_own_command() -> None:
    # -P: the installed package. check must not pay for scan's environment reader or the smoke.
    code = (
        "import sys\nfrom aoti_shim.cli import main\ntry:\n    main(['check', '--help'])\nexcept SystemExit:\n    "
        "pass\n"
        "print(sorted(m for m in sys.modules if m in ('aoti_shim.checks.scan.command', 'aoti_shim.smoke.command', "
        "'aoti_shim.own_wheel')))"
    )
    result = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


# --- the project's words --------------------------------------------------------------

# Words that speak of how this project was made rather than of the project and its users.
_OFF_WORDS = re.compile(
    r"\bthe lead\b|\(lead, |\bhelpers?\b(?= (runs?|lands?))|"  # _OFF_WORDS' own words
    r"\bthis session\b|\bthe brief\b|\bthe GPU machine\b",  # _OFF_WORDS' own words
    re.I,
)


def test_every_text_speaks_of_the_project_and_its_users() -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=False).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout: no list of the project's files")
    offending = []
    for name in tracked:
        path = REPO / name
        if (
            path.suffix not in {".py", ".md", ".cmake", ".txt", ".sh", ".toml", ".cpp", ".h", ".cu", ".c"}
            or not path.is_file()
        ):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if _OFF_WORDS.search(line) and "_OFF_WORDS" not in line:
                offending.append(f"{name}:{number}: {line.strip()}")
    assert offending == []


def test_an_empty_path_to_check_is_a_usage_error(checker_libs, tmp_path: Path) -> None:
    shim = str(checker_libs["clean_shim"])
    for args, option in (
        (("--shim", shim, "-o", ""), "--output/-o"),  # before: the report went to standard output, exit 0
        (("--shim", ""), "--shim"),  # before: "error: : cannot read", exit 1
        (("--shim", shim, "--against", ""), "--against"),
        (("--shim", shim, "--model", ""), "--model"),
        (("--shim", shim, "--suppressions", ""), "--suppressions"),
    ):
        done = cli("check", *args, cwd=tmp_path)
        assert (done.returncode, done.stdout) == (2, ""), (args, done.stdout)
        assert done.stderr == f"aoti-shim: error: check: argument {option}: an empty path\n", args


@pytest.mark.parametrize(
    ("command", "args", "option"),
    [
        ("scan", ("",), "PATH"),
        ("scan", ("--python", ""), "--python"),
        ("scan", ("-o", ""), "--output/-o"),
        ("scan", ("--suppressions", ""), "--suppressions"),
        ("snapshot", ("",), "TORCH_LIB_DIR|WHEEL"),
        ("snapshot", (".", "-o", ""), "-o/--output"),
        ("rename-header", ("--output", ""), "--output"),
        ("rename-header", ("--check", "--torch-include", ""), "--torch-include"),
        ("rename-header", ("--manifest", ""), "--manifest"),
        ("rename-header", ("--shim-include", ""), "--shim-include"),
        ("rewrite-imports", ("", "--prefix", "myrt_"), "BLOB"),
        ("rewrite-imports", ("x.so", "--prefix", "myrt_", "-o", ""), "-o/--output"),
        ("smoke", ("--json", ""), "--json"),
        ("smoke", ("--cache-dir", ""), "--cache-dir"),
        ("smoke", ("--shims", ""), "--shims"),
    ],
)
def test_an_empty_path_to_any_command_is_a_usage_error(
    command: str, args: tuple[str, ...], option: str, tmp_path: Path
) -> None:
    # As for check: an unset variable ("$OUT") must not mean the current folder or a file named ''.
    done = cli(command, *args, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), (args, done.stdout, done.stderr)
    assert done.stderr == f"aoti-shim: error: {command}: argument {option}: an empty path\n", args
    assert list(tmp_path.iterdir()) == []


def test_a_standard_output_that_cannot_be_written_is_one_line_and_exit_1(checker_libs, tmp_path: Path) -> None:
    import os

    shim = str(checker_libs["clean_shim"])
    read, broken = os.pipe()
    os.close(read)  # the reader left: every write is EPIPE
    try:
        for args in (("--cmake-dir",), ("--torch-include-dir",), ("check", "--shim", shim)):
            for name, target in (("a full disk", "/dev/full"), ("a closed pipe", broken)):
                out = open(target, "wb") if isinstance(target, str) else target
                try:
                    done = subprocess.run(
                        [*CLI, *args], stdout=out, stderr=subprocess.PIPE, text=True, timeout=120, check=False
                    )
                finally:
                    if isinstance(target, str):
                        out.close()
                if args[0] == "check" and name == "a closed pipe":
                    # `check | head -1`: the verdict's status, quietly (issue 35; tests/test_exit_codes.py).
                    assert (done.returncode, done.stderr) == (0, ""), (args, name, done.stderr)
                    continue
                # Before: an OSError (BrokenPipeError) traceback.
                assert done.returncode == 1, (args, name, done.stderr)
                assert (
                    done.stderr.startswith("aoti-shim: error: cannot write to standard output: ")
                    and done.stderr.count("\n") == 1
                ), (args, name, done.stderr)
    finally:
        os.close(broken)


def test_a_closed_standard_output_is_one_line_before_anything_is_written(checker_libs, tmp_path: Path) -> None:
    """Started with stdout closed (sh's >&-): check and scan gave an AttributeError
    traceback (sys.stdout is None); wheelhouse wrote its wheel and lost the path."""
    shim = str(checker_libs["clean_shim"])
    closed = ("sh", "-c", 'exec "$@" >&-', "sh")
    for args, what in (
        (("check", "--shim", shim), "the report (give --output FILE)"),
        (("scan", str(tmp_path)), "the report (give --output FILE)"),
        (("wheelhouse", str(tmp_path / "wh")), "the wheel's path"),
    ):
        line = one_line_error(cli(*args, prefix=closed), 1)
        assert line == f"aoti-shim: error: standard output is closed: nothing to write {what} to", args
    assert not (tmp_path / "wh").exists()
    report = tmp_path / "report.txt"
    assert cli("check", "--shim", shim, "--output", str(report), prefix=closed).returncode == 0
    assert "OK" in report.read_text()


def test_a_snapshot_named_without_its_local_version_suggests_the_shipped_one(checker_libs, tmp_path: Path) -> None:
    result = cli("check", "--shim", str(checker_libs["clean_shim"]), "--against", "torch-2.14.1", cwd=tmp_path)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(
        "aoti-shim: error: --against torch-2.14.1: no such file, nor a shipped snapshot; did you mean "
        "'torch-2.14.1+cu130'? (shipped: "
    ), line
    # The backend's against says the same.
    from aoti_shim.errors import AotiShimError
    from aoti_shim.plugin import gate
    from aoti_shim.plugin.settings import GateSettings

    with pytest.raises(AotiShimError) as err:
        gate._references(GateSettings(against=("torch-2.14.1",)), tmp_path, None, "[tool.aoti-shim] against")
    assert str(err.value) == (
        f"[tool.aoti-shim] against: reference 'torch-2.14.1' does not exist ({tmp_path / 'torch-2.14.1'}); "
        "did you mean 'torch-2.14.1+cu130'?"
    )


def test_rewrite_imports_of_a_pt2_package_says_how_to_get_the_blob_out(tmp_path: Path) -> None:
    import zipfile

    package = tmp_path / "mlp.pt2"
    with zipfile.ZipFile(package, "w") as zf:
        zf.writestr("mlp/data/aotinductor/model/model.so", b"\x7fELF not really")
        zf.writestr("mlp/data/aotinductor/model/model.cpp", "")
    result = cli("rewrite-imports", str(package), "--prefix", "myrt_", "-o", str(tmp_path / "out.so"), cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line == (
        f"aoti-shim: error: {package}: a zip archive (an AOTInductor .pt2 package?), not a blob (it holds "
        "mlp/data/aotinductor/model/model.so): rewrite the blob inside it, extracted with "
        f"python -m zipfile -e {package} DIR, or build the package's sources with the prefix "
        "(aoti_shim_add_model(<name> PACKAGE <pt2> PREFIX <p>))"
    )
    assert not (tmp_path / "out.so").exists()


def test_every_install_hint_names_a_route_that_works_before_aoti_shim_is_on_an_index() -> None:
    # aoti-shim is on no index: "pip install aoti-shim", 'pip install "aoti-shim[torch]"' and a
    # bare "reinstall aoti-shim" (f562a93's hints) send a user to a route that fails.
    root = Path(__file__).resolve().parents[1]
    sources = [
        p
        for folder in ("src", "checks", "plugin", "smoke", "cmake")
        for p in (root / folder).rglob("*")
        if p.suffix in (".py", ".cmake")
    ]
    assert len(sources) > 40
    bad = []
    for source in sources:
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            if source.name == "extras.py":
                continue  # where the extras' fallback line is made
            if re.search(r"pip install [\"']?aoti-shim\b|pipx install aoti-shim", line) or (
                "reinstall aoti-shim" in line and "<the aoti-shim clone>" not in line
            ):
                bad.append(f"{source.relative_to(root)}:{number}: {line.strip()}")
    assert bad == []


_NO_SEPARATOR = (
    "aoti-shim: warning: --prefix 'myrt' does not end in '_': shim names become myrtaoti_torch_x; did you mean 'myrt_'?"
)


def test_check_warns_of_a_prefix_without_its_underscore_and_keeps_its_exit_status(checker_libs) -> None:
    # The warning is no finding: README's exit codes give it no bit, so --fail-on never still exits 0.
    warned = cli("check", "--shim", str(checker_libs["clean_shim"]), "--prefix", "myrt", "--fail-on", "never")
    assert warned.returncode == 0, warned.stderr
    assert warned.stderr.splitlines()[0] == _NO_SEPARATOR
    quiet = cli("check", "--shim", str(checker_libs["clean_shim"]), "--prefix", "myrt_", "--fail-on", "never")
    assert quiet.returncode == 0 and "warning" not in quiet.stderr, quiet.stderr


@pytest.mark.parametrize("command", ["rewrite-imports", "smoke"])
def test_every_command_taking_a_prefix_warns_of_it(command: str, tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-blob.so")
    args = (missing, "--prefix", "myrt") if command == "rewrite-imports" else ("--shims", missing, "--prefix", "myrt")
    warned = cli(command, *args)
    plain = cli(command, *args[:-1], "myrt_")
    assert warned.stderr.splitlines()[0] == _NO_SEPARATOR
    assert warned.returncode == plain.returncode != 0  # the same error after the warning
    assert warned.stderr.splitlines()[1:] == plain.stderr.splitlines()
