"""The gate and the checker say what they decided (issue 35 §2): a passing build's verdict
and what it was checked against, the commonest shim mistakes told with their fix, a check
without --against that never reads a plain OK, and inputs that are not what was asked."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from aoti_shim.plugin import gate
from aoti_shim.plugin.gate import BuildRejected
from aoti_shim.plugin.prefix import PrefixChoice
from aoti_shim.plugin.settings import GateSettings
from cli_support import cli, one_line_error
from compile_support import compile_shared
from wheel_support import make_wheel

SNAPSHOT = "torch-2.14.1+cu130"


def _gate(wheel: Path, project: Path, prefix: str | None = None, **settings: object) -> None:
    choice = PrefixChoice(prefix, "-C aoti-shim.prefix" if prefix else "not set")
    gate.check_wheel(wheel, choice, GateSettings(**{"against": (SNAPSHOT,), **settings}), project)


def test_a_passing_build_leaves_its_verdict_in_the_build_folder(checker_libs: dict[str, Path], tmp_path: Path) -> None:
    """pip shows nothing of a passing backend: the report file is written without being asked
    for, and its last line says what was checked and against what."""
    wheel = make_wheel(
        tmp_path / "pkg-1.0-py3-none-any.whl",
        {"pkg/libshim.so": checker_libs["clean_shim"], "pkg/model.so": checker_libs["good_model"]},
    )
    project = tmp_path / "project"
    project.mkdir()
    _gate(wheel, project)
    text = (project / "build" / "aoti-shim-report.txt").read_text()
    assert re.search(r"^against: .*: torch 2\.14\.1\+cu130 at ", text, re.M), text
    assert text.endswith(
        "pkg-1.0-py3-none-any.whl: passed the check of 1 shim library and 1 model against torch 2.14.1+cu130\n"
    ), text


def test_a_shim_library_built_without_the_rename_header_is_told_to_include_it(
    checker_libs: dict[str, Path], tmp_path: Path
) -> None:
    """Every export unprefixed, the build's prefix known: one line naming the header, not a
    finding per name, a collision per name and a prefix mismatch that never name it."""
    wheel = make_wheel(tmp_path / "pkg-1.0-py3-none-any.whl", {"pkg/libshim.so": checker_libs["unprefixed_shim"]})
    with pytest.raises(BuildRejected):
        _gate(wheel, tmp_path, "myrt_", report="r.txt")
    text = (tmp_path / "r.txt").read_text()
    told = [line for line in text.splitlines() if "UNPREFIXED_EXPORT" in line]
    assert len(told) == 1 and "include <aoti_shim_rename.h> first" in told[0], text
    assert "FORCE_INCLUDE" in told[0] and "force-include = true" in told[0]
    assert "PREFIX_MISMATCH" not in text and "is also exported by" not in text
    collision = [line for line in text.splitlines() if "COLLISION" in line]
    assert (
        len(collision) == 1
        and "2 finding(s): the names the missed rename header left unprefixed are also exported by " in collision[0]
    )
    assert collision[0].endswith("!libtorch_cpu.so"), collision


def test_a_shim_built_without_extern_c_is_not_told_it_carries_no_prefix(
    checker_libs: dict[str, Path], tmp_path: Path
) -> None:
    source = tmp_path / "shims.cpp"
    source.write_text(
        '__attribute__((visibility("default"))) int myrt_aoti_torch_empty_strided() { return 0; }\n'
        '__attribute__((visibility("default"))) int myrt_aoti_torch_delete_tensor_object() { return 0; }\n'
    )
    lib = tmp_path / "libmangled.so"
    compile_shared(source, lib)
    for extra in ((), ("--prefix", "myrt_")):
        done = cli("check", "--shim", str(lib), "--model", str(checker_libs["good_model"]), *extra)
        assert done.returncode == 8, done.stderr
        assert "MANGLED_SHIM" in done.stdout and "no prefix at all" not in done.stdout
        assert "different prefixes" not in done.stdout
        # The blob's finding names the cause; the shim library's one finding is MANGLED_SHIM (issue 35 §2).
        assert ("their names only C++-mangled (e.g. '_Z" in done.stdout) is (not extra), done.stdout
        assert ("the shims define it only C++-mangled ('_Z" in done.stdout) is bool(extra), done.stdout
        assert "is exported by no shim library" not in done.stdout


def test_check_without_against_says_no_collision_was_judged(checker_libs: dict[str, Path]) -> None:
    done = cli("check", "--shim", str(checker_libs["clean_shim"]), "--model", str(checker_libs["good_model"]))
    assert done.returncode == 0, done.stderr
    verdict = done.stdout.splitlines()[-1]
    assert verdict.startswith(
        "OK: 0 blocking, 0 warning(s), 0 suppressed; no collision with libtorch judged (no --against"
    )
    judged = cli("check", "--shim", str(checker_libs["clean_shim"]), "--against", SNAPSHOT)
    assert judged.stdout.splitlines()[-1] == "OK: 0 blocking, 0 warning(s), 0 suppressed"


def test_a_folder_of_programs_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    source = tmp_path / "main.c"
    source.write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", str(source), "-o", str(folder / "tool")], check=True)
    line = one_line_error(cli("check", "--shim", str(folder)), 2)
    assert "holds only programs (1, e.g. " in line and "no shared library" in line and "no ELF file found" not in line
    wheel = make_wheel(tmp_path / "tools-1.0-py3-none-any.whl", {"tools/bin/tool": folder / "tool"})
    assert "holds only programs (1, e.g. " in one_line_error(cli("check", "--model", str(wheel)), 2)
    (tmp_path / "empty").mkdir()
    assert one_line_error(cli("check", "--shim", str(tmp_path / "empty")), 2).endswith(": no ELF file found")


def test_a_snapshot_of_a_folder_that_is_not_torch_says_so(checker_libs: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "lib"
    folder.mkdir()
    (folder / "libclean_shim.so").write_bytes(checker_libs["clean_shim"].read_bytes())
    line = one_line_error(cli("snapshot", str(folder), "-o", str(tmp_path / "s.json.gz")), 1)
    assert "not torch's lib/ folder" in line and "--torch-version" not in line
    # --torch-version names the version of a torch it cannot tell; it makes no other folder torch
    # (it did: a runtime's lib/ passed as "torch 9.9", and --against it judged the runtime by itself).
    forced = cli("snapshot", str(folder), "-o", str(tmp_path / "s.json.gz"), "--torch-version", "9.9")
    assert "not torch's lib/ folder" in one_line_error(forced, 1)
    assert not (tmp_path / "s.json.gz").exists()
    # A torch lib/ folder without torch/version.py beside it: then the version is what is missing.
    (folder / "libc10.so").write_bytes(checker_libs["clean_shim"].read_bytes())
    line = one_line_error(cli("snapshot", str(folder), "-o", str(tmp_path / "s.json.gz")), 1)
    assert "pass --torch-version VERSION" in line
    done = cli("snapshot", str(folder), "-o", str(tmp_path / "s.json.gz"), "--torch-version", "2.14.1")
    assert done.returncode == 0, done.stderr


def test_a_prefix_without_its_underscore_is_in_the_verdict_pip_leaves(tmp_path: Path) -> None:
    """pip hides a passing backend's output, its prefix warning with it: the verdict line of
    the report file (what the README says to read) carries the warning too."""
    source = tmp_path / "shims.c"
    source.write_text("int myrtaoti_torch_device_type_cpu(void) { return 0; }\n")
    compile_shared(source, tmp_path / "libshim.so")
    wheel = make_wheel(tmp_path / "pkg-1.0-py3-none-any.whl", {"pkg/libshim.so": tmp_path / "libshim.so"})
    project = tmp_path / "project"
    project.mkdir()
    _gate(wheel, project, "myrt")
    last = (project / "build" / "aoti-shim-report.txt").read_text().splitlines()[-1]
    assert last.startswith("pkg-1.0-py3-none-any.whl: passed the check of 1 shim library"), last
    assert "warning: prefix 'myrt' from -C aoti-shim.prefix does not end in '_'" in last, last
