"""What --shim/--model take from folders and wheels: shared libraries only, wheel members
streamed (read the loader's way, nothing unpacked to disk)."""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from cli_support import CLI
from compile_support import compile_object, compile_program

from aoti_shim.checks import CheckSettings, run_check
from aoti_shim.checks.elf import ElfImage, file_kind
from aoti_shim.checks.inputs import Workspace, collect


@pytest.fixture(scope="module")
def build_tree(tmp_path_factory: pytest.TempPathFactory, checker_libs) -> Path:
    """A build folder as CMake leaves it: the shim library, a program (PIE), an object file."""
    tree = tmp_path_factory.mktemp("build-tree")
    shutil.copy(checker_libs["clean_shim"], tree / "libclean_shim.so")
    (tree / "main.c").write_text("int main(void) { return 0; }\n")
    compile_program(tree / "main.c", tree / "a.out")
    compile_object(tree / "main.c", tree / "main.o", ("-fPIC",))
    compile_program(tree / "main.c", tree / "static_addr", ("-no-pie",))
    return tree


def test_file_kinds(build_tree: Path) -> None:
    kinds = {name: file_kind((build_tree / name).read_bytes()[:4096]) for name in ("libclean_shim.so", "a.out", "main.o", "static_addr")}
    assert kinds == {"libclean_shim.so": "shared", "a.out": "executable", "main.o": "object", "static_addr": "executable"}


def test_a_build_folder_counts_only_shared_libraries(build_tree: Path) -> None:
    report = run_check(CheckSettings(shims=(str(build_tree),)))
    assert [Path(a.display).name for a in report.artifacts] == ["libclean_shim.so"]
    assert report.findings == ()
    quiet = subprocess.run([*CLI, "check", "--shim", str(build_tree)], capture_output=True, text=True)
    assert "checked: 1 shim library" in quiet.stdout
    assert "not checked: 3 ELF file(s)" in quiet.stdout and "a.out" not in quiet.stdout
    loud = subprocess.run([*CLI, "check", "-v", "--shim", str(build_tree)], capture_output=True, text=True)
    assert f"  shim: {build_tree / 'libclean_shim.so'}" in loud.stdout
    for name, kind in (("a.out", "executable"), ("main.o", "object"), ("static_addr", "executable")):
        assert f"  not checked ({kind}, no shared library): {build_tree / name}" in loud.stdout


def test_a_named_program_is_still_checked(build_tree: Path) -> None:
    report = run_check(CheckSettings(shims=(str(build_tree / "a.out"),)))
    assert [Path(a.display).name for a in report.artifacts] == ["a.out"]


def test_wheel_members_are_streamed_not_unpacked(checker_libs, build_tree: Path, tmp_path: Path) -> None:
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(checker_libs["unprefixed_shim"], "pkg/libunprefixed_shim.so")
        zf.write(checker_libs["model"], "pkg/model.so")
        zf.write(build_tree / "a.out", "pkg/bin/tool")
        zf.writestr("pkg/__init__.py", "")
    with Workspace() as ws:
        arts = collect([str(wheel)], ws)
        assert ws._dir is None  # no temp folder: nothing went to disk
        assert [a.display.split("!")[-1] for a in arts] == ["pkg/libunprefixed_shim.so", "pkg/model.so"]
        assert ws.ignored == [(f"{wheel}!pkg/bin/tool", "executable")]
        for art, lib in zip(arts, ("unprefixed_shim", "model")):
            assert art.image is not None and art.image.loader_view
            with ElfImage(checker_libs[lib]) as on_disk:
                assert dict(art.image.exports().items()) == dict(on_disk.exports().items())
                assert dict(art.image.imports().items()) == dict(on_disk.imports().items())
                assert art.image.needed == on_disk.needed and art.image.build_id == on_disk.build_id
    from_wheel = run_check(CheckSettings(shims=(str(wheel),), against=("torch",), prefix="myrt_"))
    from_file = run_check(CheckSettings(shims=(str(checker_libs["unprefixed_shim"]), str(checker_libs["model"])), against=("torch",), prefix="myrt_"))
    assert sorted((f.rule, f.symbol) for f in from_wheel.findings) == sorted((f.rule, f.symbol) for f in from_file.findings)
