"""The generated rename header: fresh, complete, and doing what it says when compiled."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from aoti_shim.cli import main
from aoti_shim.rename_header import header_names, manifest_names, own_header_names
from cli_support import CLI
from cmake_support import REPO, clean_env
from compile_support import compile_object
from torch_support import fake_torch_include

HEADER = REPO / "cmake" / "include" / "aoti_shim_rename.h"
MANIFEST = REPO / "shims" / "manifest.txt"
SHIM_INCLUDE = REPO / "shims" / "include"
# The repository's own name sources, for runs that write elsewhere than the repository.
OURS = ("--manifest", str(MANIFEST), "--shim-include", str(SHIM_INCLUDE))
# -P: the installed package, never the clone's folders.


def _run(*argv: str) -> int:
    return main(["rename-header", *argv])


def test_committed_header_is_fresh(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--root", str(REPO), "--check") == 0
    assert "renames every name" in capsys.readouterr().err


def test_the_header_renames_the_union_over_every_supported_torch() -> None:
    from aoti_shim.torch_names import shipped_names

    shipped = shipped_names()
    # Made from the wheels of each release (python -m aoti_shim.torch_names); see its header lines.
    assert shipped.versions == ("2.11.0", "2.12.0", "2.12.1", "2.13.0+cpu", "2.14.0", "2.14.1", "2.15.0")
    assert len(shipped.names) >= 821  # torch 2.14's count, as the upstream proposal counts them
    renamed = header_names(HEADER.read_text())
    assert shipped.names <= renamed
    # Shim ABI is what the headers declare, not the aoti_torch_ spelling: c/shim.h's profiler
    # marks (profiled blobs import them, libtorch exports them) and torch 2.15's two additions.
    for name in (
        "aoti_record_function_start",
        "aoti_record_function_end",
        "aoti_torch_mps__int_mm_out",
        "aoti_torch_xpu_geqrf",
    ):
        assert name in shipped.names and name in renamed, name
    # Every device's shims: CUDA, MPS and XPU fallbacks as well as the CPU ones.
    for device in ("cpu", "cuda", "mps", "xpu"):
        assert any(n.startswith(f"aoti_torch_{device}_") for n in shipped.names), device


def test_check_against_the_installed_torch_lists_what_the_shipped_header_lacks(tmp_path: Path) -> None:
    """Outside the source tree, --check reads the header installed with aoti-shim and names,
    one a line, every name that the torch's headers declare and it lacks."""
    torch = fake_torch_include(tmp_path / "include", "AOTITorchError aoti_torch_from_a_newer_torch(int);\n"
                               "AOTITorchError aoti_torch_empty_strided(int);\n")
    proc = subprocess.run([*CLI, "rename-header", "--check", "--torch-include", str(torch)],
                          capture_output=True, text=True, cwd=tmp_path, check=False)
    assert proc.returncode == 8, proc.stderr
    assert proc.stdout.splitlines() == ["aoti_torch_from_a_newer_torch"]
    assert "misses 1 name(s)" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    installed = subprocess.run(
        [*CLI, "rename-header", "--check"], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    if "torch is not installed" not in installed.stderr:
        assert installed.returncode == 0, installed.stdout + installed.stderr


def test_a_users_header_from_their_own_names(tmp_path: Path) -> None:
    """What a runtime runs in its own project: its manifest and shim headers, torch's names."""
    (tmp_path / "include" / "myrt").mkdir(parents=True)
    (tmp_path / "include" / "myrt" / "shim.h").write_text("int32_t aoti_torch_myrt_extra(void);\n")
    (tmp_path / "names.txt").write_text("aoti_torch_myrt_listed\n")
    proc = subprocess.run(
        [
            *CLI,
            "rename-header",
            "--shim-include",
            "include",
            "--manifest",
            "names.txt",
            "--output",
            "gen/aoti_shim_rename.h",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    names = header_names((tmp_path / "gen" / "aoti_shim_rename.h").read_text())
    assert {"aoti_torch_myrt_extra", "aoti_torch_myrt_listed", "aoti_torch_cuda_mm_out"} <= names
    again = subprocess.run(
        [
            *CLI,
            "rename-header",
            "--shim-include",
            "include",
            "--manifest",
            "names.txt",
            "--output",
            "gen/aoti_shim_rename.h",
            "--check",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize("option", ["--manifest", "--shim-include", "--torch-include"])
def test_a_named_input_that_is_missing_is_an_error(
    tmp_path: Path, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(option, str(tmp_path / "nope"), "--output", str(tmp_path / "h.h")) == 1
    assert f"{option} {tmp_path / 'nope'}: no such file or folder" in capsys.readouterr().err
    assert not (tmp_path / "h.h").exists()


def test_installed_header_is_the_committed_one() -> None:
    from aoti_shim.paths import cmake_dir

    assert (cmake_dir() / "include" / "aoti_shim_rename.h").read_text() == HEADER.read_text()


def test_generating_reproduces_the_committed_header(tmp_path: Path) -> None:
    out = tmp_path / "rename.h"
    assert _run("--output", str(out), *OURS) == 0
    assert out.read_text() == HEADER.read_text()


def test_check_names_a_missing_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "rename.h"
    lines = HEADER.read_text().splitlines(keepends=True)
    victim = next(i for i, line in enumerate(lines) if line.startswith("#define aoti_torch_empty_strided "))
    stale.write_text("".join(lines[:victim] + lines[victim + 1 :]))
    assert _run("--output", str(stale), *OURS, "--check") == 8
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "misses 1 name(s), listed on standard output: aoti_torch_empty_strided;" in err


def test_check_detects_a_stale_header_and_a_missing_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "rename.h"
    stale.write_text(HEADER.read_text().replace("do not edit", "edited"))
    assert _run("--output", str(stale), *OURS, "--check") == 8
    assert "is stale" in capsys.readouterr().err
    assert _run("--output", str(tmp_path / "absent.h"), *OURS, "--check") == 8
    assert "is missing" in capsys.readouterr().err
    assert not (tmp_path / "absent.h").exists()


def test_manifest_and_own_header_names_join_torchs(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.txt"
    manifest.write_text("# ours\naoti_torch_fixture_only_name  # a shim torch does not have\n\n")
    include = tmp_path / "include" / "ours"
    include.mkdir(parents=True)
    (include / "shim.h").write_text(
        "int32_t aoti_torch_only_in_our_header(void);\n// aoti_torch_commented_out(void);\n"
    )
    out = tmp_path / "rename.h"
    assert _run("--output", str(out), "--manifest", str(manifest), "--shim-include", str(tmp_path / "include")) == 0
    names = header_names(out.read_text())
    assert {"aoti_torch_fixture_only_name", "aoti_torch_only_in_our_header"} <= names
    assert "aoti_torch_commented_out" not in names
    assert "aoti_torch_empty_strided" in names  # from torch's headers


def test_bad_manifest_line_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "manifest.txt"
    manifest.write_text("aoti_torch_ok\nnot a name\n")
    out = tmp_path / "rename.h"
    assert _run("--output", str(out), "--manifest", str(manifest)) == 1
    err = capsys.readouterr().err.strip()
    assert err.endswith("manifest.txt:2: 'not a name' is not a C identifier")
    assert not out.exists()


def test_outside_the_source_tree_without_output_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("--root", str(tmp_path)) == 2
    assert "not the aoti-shim source tree" in capsys.readouterr().err


def test_every_name_the_manifest_lists_or_our_headers_declare_is_renamed() -> None:
    assert MANIFEST.is_file(), "shims/manifest.txt is missing"
    assert manifest_names(MANIFEST) <= header_names(HEADER.read_text())
    assert own_header_names(SHIM_INCLUDE) <= header_names(HEADER.read_text())


def test_every_shim_the_reference_library_exports_is_renamed() -> None:
    from aoti_shim.checks.elf.image import ElfImage
    from aoti_shim.paths import shim_library

    # The wheel ships the library (test_smoke asserts it): no library is a failure, not a skip.
    library = shim_library()
    with ElfImage(library) as image:
        exported = {name for name in image.exports() if "aoti_torch_" in name}
    assert exported, f"{library} exports no shims"
    plain = {name[name.index("aoti_torch_") :] for name in exported}
    assert plain <= header_names(HEADER.read_text())


def test_header_renames_declarations_definitions_and_calls(tmp_path: Path) -> None:
    nm = shutil.which("nm")
    assert nm, "nm (binutils) is needed"
    source = tmp_path / "t.cpp"
    source.write_text(
        "#include <stdint.h>\n"
        'extern "C" int32_t aoti_torch_dtype_float32(void);\n'
        'extern "C" int32_t aoti_torch_device_type_cpu(void) { return aoti_torch_dtype_float32(); }\n'
    )

    def symbols(*defines: str) -> str:
        obj = tmp_path / "t.o"
        compile_object(source, obj, (*defines, "-include", str(HEADER)), env=clean_env())
        return subprocess.run([nm, str(obj)], capture_output=True, text=True, check=True).stdout

    prefixed = symbols("-DAOTI_SHIM_SYMBOL_PREFIX=zz_")
    assert "U zz_aoti_torch_dtype_float32" in prefixed
    assert "T zz_aoti_torch_device_type_cpu" in prefixed
    assert " aoti_torch_" not in prefixed
    # Without the prefix macro the header does nothing.
    plain = symbols()
    assert "U aoti_torch_dtype_float32" in plain and "zz_" not in plain


def _named_header_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "include"
    (folder / "trap.h").mkdir(parents=True)
    return folder


def _dangling_link(tmp_path: Path) -> Path:
    folder = tmp_path / "include"
    folder.mkdir()
    (folder / "gone.h").symlink_to(tmp_path / "nowhere.h")
    return folder


def _latin1_header(tmp_path: Path) -> Path:
    folder = tmp_path / "include"
    folder.mkdir()
    (folder / "shim.h").write_bytes(b"/* caf\xe9 */ int32_t aoti_torch_x(void);\n")
    return folder


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (_named_header_dir, "trap.h: is a folder, not a file"),
        (_dangling_link, "gone.h: a dangling symbolic link (to "),
        (_latin1_header, "shim.h: not UTF-8 text (byte 6)"),
    ],
    ids=["folder-named-h", "dangling-link", "not-utf8"],
)
def test_bad_shim_headers_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make, needle: str
) -> None:
    include = make(tmp_path)
    out = tmp_path / "rename.h"
    assert _run("--output", str(out), "--shim-include", str(include)) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("aoti-shim: error: shim header ") and needle in err[0], err
    assert not out.exists()


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"aoti_torch_ok\nint\n", "manifest.txt:2: 'int' is not a shim name (aoti_torch_*)"),
        (
            b"aoti_torch_ok\nmyrt_aoti_torch_x\n",
            "manifest.txt:2: 'myrt_aoti_torch_x' is not a shim name (aoti_torch_*)",
        ),
        (b"aoti_torch_\xff\n", "manifest.txt: not UTF-8 text (byte 11)"),
    ],
)
def test_manifest_names_must_be_shim_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, needle: str
) -> None:
    manifest = tmp_path / "manifest.txt"
    manifest.write_bytes(content)
    out = tmp_path / "rename.h"
    assert _run("--output", str(out), "--manifest", str(manifest)) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(needle), err
    assert not out.exists()


def test_a_named_manifest_that_is_a_folder_or_a_shim_include_that_is_a_file_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rename.h"
    assert _run("--output", str(out), "--manifest", str(tmp_path)) == 1
    assert capsys.readouterr().err.strip().endswith(f"manifest {tmp_path}: is a folder, not a file")
    (tmp_path / "file.h").write_text("")
    assert _run("--output", str(out), "--shim-include", str(tmp_path / "file.h")) == 1
    assert capsys.readouterr().err.strip().endswith(f"--shim-include {tmp_path / 'file.h'}: not a folder")
    assert not out.exists()


def test_every_shim_include_folder_counts_and_hpp_and_cuh_are_read(tmp_path: Path) -> None:
    # Several folders (repeated or after one --shim-include) all count; before, only the last one given did.
    first, second, third = (tmp_path / name for name in ("first", "second", "third"))
    for folder in (first, second, third):
        folder.mkdir()
    (first / "a.h").write_text("int32_t aoti_torch_rt_from_first(void);\n")
    (second / "b.hpp").write_text('extern "C" int32_t aoti_torch_rt_from_hpp(void);\n')
    (third / "c.cuh").write_text('extern "C" int32_t aoti_torch_rt_from_cuh(void* stream);\n')
    (third / "d.txt").write_text("int32_t aoti_torch_rt_not_a_header(void);\n")
    out = tmp_path / "rename.h"
    # --root outside the source tree: no default manifest or shim folder of ours joins in.
    assert (
        _run(
            "--root",
            str(tmp_path),
            "--output",
            str(out),
            "--shim-include",
            str(first),
            "--shim-include",
            str(second),
            str(third),
        )
        == 0
    )
    names = header_names(out.read_text())
    assert {"aoti_torch_rt_from_first", "aoti_torch_rt_from_hpp", "aoti_torch_rt_from_cuh"} <= names
    assert "aoti_torch_rt_not_a_header" not in names
    assert "3 more listed in the runtime's shim manifest or declared in its shim headers" in out.read_text()


def test_check_gives_one_answer_from_any_folder(tmp_path: Path) -> None:
    # At f562a93 --check run from the source tree read the tree's header and manifest (821
    # names), and from anywhere else the installed header (734): two answers to one question.
    answers = []
    for folder in (REPO, tmp_path):
        proc = subprocess.run(
            [*CLI, "rename-header", "--check"], capture_output=True, text=True, cwd=folder, check=False
        )
        answers.append((proc.returncode, proc.stdout, proc.stderr))
    assert answers[0] == answers[1]
    assert "aoti_shim/cmake/include/aoti_shim_rename.h renames every name" in answers[0][2]
