"""check and scan give the same kind of bad input the same exit status, the README's
(issue 35 §4): 1 for an input that cannot be read or is of the wrong type, 2 for a bad
argument, such as scan's report written into the environment it scans. At 4c8e217 scan said
2 for a text file and 1 for its report inside the environment; check said 1 for the text file."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from aoti_shim.errors import EXIT_TOOL_ERROR, EXIT_USAGE
from c_library_support import c_library, defining
from cli_support import CLI, cli, one_line_error
from scan_support import ScanEnvs, Venv, make_venv

SNAPSHOT = "torch-2.14.1+cu130"  # a shipped snapshot: no torch needed


@dataclass(frozen=True)
class Inputs:
    root: Path
    text: Path  # a text file
    fake_so: Path  # text named like a library
    fake_whl: Path  # text named like a wheel
    missing: Path
    venv: Venv


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    root = tmp_path_factory.mktemp("exit")
    for name in ("notes.txt", "libfake.so", "fake-1.0-py3-none-any.whl"):
        (root / name).write_text("hello\n")
    return Inputs(
        root, root / "notes.txt", root / "libfake.so", root / "fake-1.0-py3-none-any.whl", root / "nope.so",
        make_venv(root / "venv"),
    )


@dataclass(frozen=True)
class Case:
    name: str
    argv: Callable[[Inputs], tuple[str, ...]]
    code: int
    says: str


# The same kind of input in each pair of rows: check's, then scan's.
CASES = (
    Case("check a text file", lambda i: ("check", "--shim", str(i.text)), EXIT_TOOL_ERROR, "not an ELF file"),
    Case("scan a text file", lambda i: ("scan", str(i.text)), EXIT_TOOL_ERROR, "not a site folder"),
    Case("check text named .so", lambda i: ("check", "--shim", str(i.fake_so)), EXIT_TOOL_ERROR, "not an ELF file"),
    Case("scan text named .so", lambda i: ("scan", str(i.fake_so)), EXIT_TOOL_ERROR, "not a site folder"),
    Case("check text named .whl", lambda i: ("check", "--wheel", str(i.fake_whl)), EXIT_TOOL_ERROR, "not a readable"),
    Case("scan text named .whl", lambda i: ("scan", str(i.fake_whl)), EXIT_TOOL_ERROR, "not a readable"),
    Case("check a missing file", lambda i: ("check", "--shim", str(i.missing)), EXIT_TOOL_ERROR, "No such file"),
    Case("scan a missing file", lambda i: ("scan", str(i.missing)), EXIT_TOOL_ERROR, "No such file"),
    Case("check a bad option value", lambda i: ("check", "--fail-on", "sometimes"), EXIT_USAGE, "invalid choice"),
    Case("scan a bad option value", lambda i: ("scan", "--fail-on", "sometimes"), EXIT_USAGE, "invalid choice"),
    # A report into the scanned environment: a bad argument, new file or old, root or site folder.
    Case(
        "scan -o into the venv's root",
        lambda i: ("scan", str(i.venv.root), "-o", str(i.venv.root / "report.txt")),
        EXIT_USAGE,
        "lies in the scanned environment",
    ),
    Case(
        "scan -o onto a file of the venv",
        lambda i: ("scan", str(i.venv.root), "-o", str(i.venv.root / "pyvenv.cfg")),
        EXIT_USAGE,
        "lies in the scanned environment",
    ),
    Case(
        "scan of its site folder -o into its bin/",
        lambda i: ("scan", str(i.venv.site), "-o", str(i.venv.root / "bin" / "report.txt")),
        EXIT_USAGE,
        "lies in the scanned environment",
    ),
    # A report onto one of the inputs: as bad an argument as one into the environment (before
    # review-fixes, 1: the output refusal was a plain tool error).
    Case(
        "check -o onto its input",
        lambda i: ("check", "--shim", str(i.text), "-o", str(i.text)),
        EXIT_USAGE,
        "is also an input",
    ),
    Case(
        "scan -o onto its suppressions file",
        lambda i: ("scan", str(i.venv.root), "--suppressions", str(i.text), "-o", str(i.text)),
        EXIT_USAGE,
        "is also an input",
    ),
    Case(
        "check -o into its input folder",
        lambda i: ("check", "--model", str(i.root), "-o", str(i.text)),
        EXIT_USAGE,
        "lies in the input folder",
    ),
)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_same_bad_input_gets_the_same_status(inputs: Inputs, case: Case) -> None:
    before = (inputs.venv.root / "pyvenv.cfg").read_bytes()
    done = cli(*case.argv(inputs), timeout=120)
    if case.says == "invalid choice":  # argparse's usage line comes first
        assert done.returncode == case.code and case.says in done.stderr, done.stderr
    else:
        assert case.says in one_line_error(done, case.code)
    assert not (inputs.venv.root / "report.txt").exists() and not (inputs.venv.root / "bin" / "report.txt").exists()
    assert (inputs.venv.root / "pyvenv.cfg").read_bytes() == before


def test_the_readme_table_names_both_kinds() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    table = readme[readme.index("## Exit codes") :]
    table = " ".join(table[: table.index("\n## ")].split())
    assert "a file of the wrong type given as input" in table and "inside the scanned environment" in table
    assert "`-o` into an input folder, `-o` or `$GITHUB_STEP_SUMMARY` naming one of the inputs" in table
    assert "with their verdict's status (`${PIPESTATUS[0]}`)" in table


def test_a_folder_without_a_library_is_a_usage_error_to_check_and_an_empty_scan(tmp_path: Path) -> None:
    """check --model EMPTY_DIR exits 2 and scan EMPTY_DIR 0 (the review of issue 35): check's
    arguments name the libraries it judges, and such a folder names none (as `check` with no
    input); scan judges the environment it is given, and an empty one holds nothing to judge.
    The README's exit codes say why they differ."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "run.sh").write_text("#!/bin/sh\n")
    for folder in (tmp_path / "empty", tmp_path / "scripts"):
        for flag in ("--shim", "--model"):
            assert one_line_error(cli("check", flag, str(folder)), EXIT_USAGE).endswith(f"{folder}: no ELF file found")
        done = cli("scan", str(folder), "--color", "never")
        assert done.returncode == 0 and "nothing was judged: no shared library in what was scanned" in done.stdout
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    codes = " ".join(readme[readme.index("## Exit codes") :].split())
    assert "a `check --shim`/`--model` folder that holds no shared library is `2`" in codes
    assert "while `scan` of a folder without one is `0`, its verdict saying nothing was judged" in codes


# -- a reader that leaves: `aoti-shim check ... | head -1` --------------------------------------


def _into_closed_pipe(*args: str, stderr_too: bool = False) -> subprocess.CompletedProcess[str]:
    """The command with its standard output a real pipe whose reader has left (as `head -1`
    once it has its line): every write to it fails with EPIPE. ``stderr_too``: standard error
    goes there as well (`2>&1 | head -1`)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [*CLI, *args], stdout=write_end, stderr=write_end if stderr_too else subprocess.PIPE, text=True,
            timeout=300, check=False,
        )
    finally:
        os.close(write_end)


@pytest.fixture(scope="module")
def shims(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("pipe")
    return {
        "clean": c_library(root, "clean", defining("myrt_aoti_torch_x")),
        "unprefixed": c_library(root, "bad", defining("aoti_torch_get_data_ptr")),
        # Its prefix inferred (a note on standard error), one shim name exported without it.
        "half": c_library(root, "half", defining("myrt_aoti_torch_x", "aoti_torch_get_data_ptr")),
    }


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "junit"])
@pytest.mark.parametrize("output", [(), ("-o", "/dev/stdout")], ids=["stdout", "-o /dev/stdout"])
def test_a_closed_pipe_ends_quietly_with_the_verdicts_status(
    shims: dict[str, Path], scan_envs: ScanEnvs, fmt: str, output: tuple[str, ...]
) -> None:
    """4299e25 said "cannot write to standard output: Broken pipe" and exited 1 whatever the
    verdict; ${PIPESTATUS[0]} after `| head -1` must still be the verdict."""
    runs = (
        ("check", "--shim", str(shims["clean"]), "--against", SNAPSHOT),
        ("check", "--shim", str(shims["unprefixed"]), "--against", SNAPSHOT),
        ("scan", str(scan_envs.clean.root)),
        ("scan", str(scan_envs.dirty.root)),
    )
    verdicts = []
    for argv in runs:
        whole = cli(*argv, "--format", fmt)
        closed = _into_closed_pipe(*argv, "--format", fmt, *output)
        assert closed.returncode == whole.returncode, (argv, closed.stderr)
        assert "Traceback" not in closed.stderr and "standard output" not in closed.stderr, closed.stderr
        verdicts.append(whole.returncode)
    assert verdicts == [0, 8, 0, 8]



@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_closed_pipe_behind_2_and_1_keeps_the_verdicts_status(shims: dict[str, Path], fmt: str) -> None:
    """`check --format json 2>&1 | head -1`: the inferred prefix's note comes after the report,
    on standard error, the same closed pipe. At b6b8817 that note's EPIPE was the output error
    (exit 1) whatever the verdict; the text report names the prefix itself, so prints no note."""
    for shim, verdict in (("clean", 0), ("half", 8)):
        argv = ("check", "--shim", str(shims[shim]), "--against", SNAPSHOT, "--format", fmt)
        done = cli(*argv)
        assert done.returncode == verdict and ("prefix myrt_" in done.stderr) == (fmt != "text"), done.stderr
        assert _into_closed_pipe(*argv, stderr_too=True).returncode == verdict, (shim, fmt)


def test_a_closed_pipe_behind_2_and_1_takes_no_warning_for_an_error(shims: dict[str, Path]) -> None:
    """`--prefix myrt` (no trailing `_`) is warned of on standard error before the check runs:
    into a closed pipe, that warning's EPIPE ended the command with exit 1 (b6b8817)."""
    argv = ("check", "--shim", str(shims["half"]), "--prefix", "myrt", "--format", "json")
    done = cli(*argv)
    assert done.returncode == 8 and "aoti-shim: warning: --prefix 'myrt'" in done.stderr, done.stderr
    assert _into_closed_pipe(*argv, stderr_too=True).returncode == 8


def test_notes_stay_out_of_the_report_when_standard_error_is_closed(shims: dict[str, Path]) -> None:
    """`check --format json 2>&-`: with standard error closed, sys.stderr is None and
    print(file=None) writes to standard output: at b6b8817 the prefix's note and the --prefix
    warning landed in the JSON report, which then did not parse."""
    import json

    argv = ("check", "--shim", str(shims["half"]), "--prefix", "myrt", "--format", "json")
    done = subprocess.run(
        [*CLI, *argv], capture_output=False, stdout=subprocess.PIPE, text=True, timeout=300, check=False,
        preexec_fn=lambda: os.close(2),
    )
    assert done.returncode == 8
    assert json.loads(done.stdout)["prefix"] == "myrt", done.stdout[:300]


@pytest.mark.parametrize("case", [c for c in CASES if c.code == EXIT_USAGE], ids=lambda c: c.name)
def test_an_error_into_a_closed_pipe_keeps_its_status(inputs: Inputs, case: Case) -> None:
    """`2>&1 | head -1` on a bad command line: the error line's EPIPE went to the output-error
    path, and a usage error (2) read as a tool error (1) at b6b8817. With standard error
    closed, the line went to standard output instead."""
    assert _into_closed_pipe(*case.argv(inputs), stderr_too=True).returncode == case.code
    done = subprocess.run(
        [*CLI, *case.argv(inputs)], stdout=subprocess.PIPE, text=True, timeout=120, check=False,
        preexec_fn=lambda: os.close(2),
    )
    assert (done.returncode, done.stdout) == (case.code, "")
