"""Issue 23 §1, one test per bullet (each says OK, or reads less, on f562a93), and the
fixes issue 27 §2 asks of three messages. Where the loader has a say, it is asked too.

Libraries are built from C here, each in one gcc call; the loader is a child process
(references and shims RTLD_GLOBAL, the blob RTLD_LOCAL | RTLD_NOW).
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from aoti_shim.checks import CheckSettings, run_check
from aoti_shim.checks.abi.prefix import infer, is_shim_name, is_unprefixed, prefix_of
from aoti_shim.checks.check.run import checking
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.inputs import collect as inputs
from aoti_shim.rename_header import header_names
from c_library_support import ENTRY, EXPORT
from c_library_support import c_library as _lib
from c_library_support import defining as _define
from c_library_support import loads as _loads
from c_library_support import using as _use
from compile_support import compile_program

REPO = Path(__file__).resolve().parents[1]


def _found(report) -> set[tuple[str, str, str]]:
    return {(f.rule, Path(f.artifact).name, f.symbol) for f in report.findings if f.severity == "blocking"}


# -- shim ABI is what torch's headers declare ----------------------------------------------


def test_the_profiler_marks_are_shim_abi_everywhere(tmp_path: Path) -> None:
    """A blob compiled with profiler_mark_wrapper_call=True imports aoti_record_function_start
    and _end: libtorch exports them, so they bind to it; f562a93 said OK."""
    torch = _lib(
        tmp_path, "torch_cpu", _define("aoti_record_function_start", "aoti_record_function_end", "aoti_torch_x")
    )
    shim = _lib(tmp_path, "shim", _define("myrt_aoti_torch_x"))
    blob = _lib(
        tmp_path, "blob", _use("myrt_aoti_torch_x", "aoti_record_function_start", "aoti_record_function_end") + ENTRY
    )
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),), against=(str(torch),)))
    assert _found(report) == {
        ("UNPREFIXED_IMPORT", "libblob.so", "aoti_record_function_start"),
        ("UNPREFIXED_IMPORT", "libblob.so", "aoti_record_function_end"),
    }
    said = next(f for f in report.findings if f.symbol == "aoti_record_function_start")
    assert said.message == f"imports 'aoti_record_function_start', which binds to {torch} in the process"
    assert said.related == str(torch)
    # One notion for every tool: the name, its prefixed form, the rename header.
    assert is_unprefixed("aoti_record_function_start") and is_shim_name("myrt_aoti_record_function_end")
    assert prefix_of("myrt_aoti_record_function_start") == "myrt_"
    header = header_names((REPO / "cmake" / "include" / "aoti_shim_rename.h").read_text())
    assert {"aoti_record_function_start", "aoti_record_function_end", "aoti_torch_xpu_geqrf"} <= header


# -- symbol versions ---------------------------------------------------------------------------


def test_a_versioned_import_binds_only_to_its_version(tmp_path: Path) -> None:
    """The blob was linked against a shim build whose names are in version MYRT_2; the shim
    that is loaded defines MYRT_1 only: the loader refuses the blob. f562a93 said OK."""
    (tmp_path / "v1.map").write_text("MYRT_1 { global: myrt_aoti_torch_x; local: *; };\n")
    (tmp_path / "v2.map").write_text("MYRT_2 { global: myrt_aoti_torch_x; local: *; };\n")
    shim = _lib(tmp_path, "shim", _define("myrt_aoti_torch_x"), (f"-Wl,--version-script={tmp_path / 'v1.map'}",))
    stub_dir = tmp_path / "stub"
    stub_dir.mkdir()
    stub = _lib(stub_dir, "shim", _define("myrt_aoti_torch_x"), (f"-Wl,--version-script={tmp_path / 'v2.map'}",))
    blob = _lib(tmp_path, "blob", _use("myrt_aoti_torch_x") + ENTRY, (str(stub),))
    loaded = _loads([shim], blob)
    assert loaded.returncode != 0 and "version `MYRT_2' not found" in loaded.stderr, loaded.stderr
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),)))
    assert _found(report) == {("LOAD_FAILURE", "libblob.so", "")}
    (failure,) = report.findings
    assert (
        failure.message
        == "cannot be loaded next to the others: needs version 'MYRT_2' of libshim.so, which defines no such version"
    )


def test_an_unversioned_import_does_not_bind_to_a_hidden_version(tmp_path: Path) -> None:
    """myrt_aoti_torch_y is defined only as y@MYRT_OLD (hidden, version index 3): an
    unversioned reference does not bind to it (glibc takes hidden definitions only for
    index 2, the oldest version). f562a93 saw the name exported and said OK."""
    (tmp_path / "v.map").write_text("MYRT_NEW { global: myrt_aoti_torch_x; local: *; };\nMYRT_OLD { };\n")
    text = (
        _define("myrt_aoti_torch_x")
        + f"{EXPORT} int y_old(void) {{ return 2; }}\n"
        + '__asm__(".symver y_old, myrt_aoti_torch_y@MYRT_OLD");\n'
    )
    shim = _lib(tmp_path, "shim", text, (f"-Wl,--version-script={tmp_path / 'v.map'}",))
    blob = _lib(tmp_path, "blob", _use("myrt_aoti_torch_x", "myrt_aoti_torch_y") + ENTRY)
    loaded = _loads([shim], blob)
    assert loaded.returncode != 0 and "undefined symbol: myrt_aoti_torch_y" in loaded.stderr, loaded.stderr
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),)))
    assert _found(report) == {("UNSATISFIED_IMPORT", "libblob.so", "myrt_aoti_torch_y")}


def test_an_unversioned_import_binds_to_a_hidden_oldest_version(tmp_path: Path) -> None:
    """The other half of glibc's rule, asked of the loader: a hidden definition at version
    index 2 (the oldest version node) still serves an unversioned reference."""
    (tmp_path / "v.map").write_text("MYRT_OLD { };\nMYRT_NEW { global: myrt_aoti_torch_x; local: *; };\n")
    text = (
        _define("myrt_aoti_torch_x")
        + f"{EXPORT} int y_old(void) {{ return 2; }}\n"
        + '__asm__(".symver y_old, myrt_aoti_torch_y@MYRT_OLD");\n'
    )
    shim = _lib(tmp_path, "shim", text, (f"-Wl,--version-script={tmp_path / 'v.map'}",))
    blob = _lib(tmp_path, "blob", _use("myrt_aoti_torch_x", "myrt_aoti_torch_y") + ENTRY)
    assert _loads([shim], blob).returncode == 0
    assert run_check(CheckSettings(shims=(str(shim),), models=(str(blob),))).findings == ()


# -- ELF class, data encoding and machine ------------------------------------------------------


def test_a_foreign_machine_shim_cannot_load(tmp_path: Path) -> None:
    """This machine has no 32-bit toolchain: an AArch64 e_machine patched into an x86-64
    shim is what dlopen refuses the same way. f562a93 said OK."""
    built = _lib(tmp_path, "shim_x86", _define("myrt_aoti_torch_x"))
    data = bytearray(built.read_bytes())
    data[18:20] = (183).to_bytes(2, "little")
    shim = tmp_path / "libshim.so"
    shim.write_bytes(bytes(data))
    blob = _lib(tmp_path, "blob", _use("myrt_aoti_torch_x") + ENTRY)
    assert _loads([shim], blob).returncode != 0
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),)))
    assert ("LOAD_FAILURE", "libshim.so", "") in _found(report)
    failure = next(f for f in report.findings if f.rule == "LOAD_FAILURE")
    assert failure.message == (
        "cannot be loaded next to the others: it is ELF64 little-endian AArch64, the process ELF64 little-endian "
        "x86-64: it cannot load"
    )


# -- every library's imports count ------------------------------------------------------------


def test_a_shims_own_unprefixed_call_binds_to_libtorch(tmp_path: Path) -> None:
    torch = _lib(tmp_path, "torch_cpu", _define("aoti_torch_get_data_ptr"))
    shim = _lib(tmp_path, "shim", _define("myrt_aoti_torch_x") + _use("aoti_torch_get_data_ptr"))
    report = run_check(CheckSettings(shims=(str(shim),), against=(str(torch),)))
    assert _found(report) == {("UNPREFIXED_IMPORT", "libshim.so", "aoti_torch_get_data_ptr")}
    (finding,) = report.findings
    assert finding.message == (
        f"imports 'aoti_torch_get_data_ptr' itself (its own code calls the unprefixed name), which binds to {torch} in "
        "the process"
    )


def test_a_consumer_of_the_prefixed_abi_gets_blocking_unprefixed_imports(tmp_path: Path) -> None:
    """No AOTInductor entry point, but it imports the shims' prefix: a partial rename, not a
    stable-ABI extension (f562a93 gave a NOT_AN_AOTI_MODEL warning and exit 0)."""
    shim = _lib(tmp_path, "shim", _define("myrt_aoti_torch_a"))
    backend = _lib(tmp_path, "backend", _use("myrt_aoti_torch_a", "aoti_torch_b"))
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(backend),)))
    assert _found(report) == {("UNPREFIXED_IMPORT", "libbackend.so", "aoti_torch_b")}
    assert not [f for f in report.findings if f.rule == "NOT_AN_AOTI_MODEL"]
    assert report.exit_code() != 0


# -- dependencies are part of the process ---------------------------------------------------------


def test_a_shims_dependency_is_loaded_with_it(tmp_path: Path) -> None:
    """libstate.so takes the address of myrt_aoti_torch_state (a GLOB_DAT import, bound at
    load, not lazily) that libcore.so defines, and libcore.so comes after it: only a DT_NEEDED
    on libcore.so lets it load (dlopen maps the dependency first). f562a93 said OK either way."""
    core = _lib(tmp_path, "core", f"{EXPORT} int myrt_aoti_torch_state = 1;\n" + _define("myrt_aoti_torch_x"))
    text = (
        f"extern int myrt_aoti_torch_state;\n{EXPORT} int *state(void) {{ return &myrt_aoti_torch_state; }}\n"
        + _define("myrt_aoti_torch_y")
    )
    needs = _lib(tmp_path, "needs", text, ("-Wl,--no-as-needed", str(core), "-Wl,-rpath,$ORIGIN"))
    alone = _lib(tmp_path, "alone", text)
    blob = _lib(tmp_path, "blob", _use("myrt_aoti_torch_x", "myrt_aoti_torch_y") + ENTRY)
    assert _loads([needs, core], blob).returncode == 0
    assert run_check(CheckSettings(shims=(str(needs), str(core)), models=(str(blob),))).findings == ()
    loaded = _loads([alone, core], blob)
    assert loaded.returncode != 0 and "undefined symbol: myrt_aoti_torch_state" in loaded.stderr, loaded.stderr
    report = run_check(CheckSettings(shims=(str(alone), str(core)), models=(str(blob),)))
    # libalone.so does not load, so neither does what it defines for the blob.
    assert _found(report) == {
        ("UNSATISFIED_IMPORT", "libalone.so", "myrt_aoti_torch_state"),
        ("UNSATISFIED_IMPORT", "libblob.so", "myrt_aoti_torch_y"),
    }


def test_a_shims_dependency_found_by_its_runpath_takes_the_blobs_import(tmp_path: Path) -> None:
    """libfirst.so needs libold.so (found by RUNPATH $ORIGIN, not given to the check), an old
    copy defining myrt_aoti_torch_x; libsecond.so, the shim meant to serve it, loads after:
    the loader binds the blob's import to libold.so. The check knew only the given files
    and said OK; and a name only the dependency defines was 'unsatisfied' though it binds."""
    old = _lib(tmp_path, "old", _define("myrt_aoti_torch_x", "myrt_aoti_torch_q"))
    first = _lib(
        tmp_path, "first", _define("myrt_aoti_torch_a"), ("-Wl,--no-as-needed", str(old), "-Wl,-rpath,$ORIGIN")
    )
    second = _lib(tmp_path, "second", _define("myrt_aoti_torch_x"))
    blob = _lib(tmp_path, "blob", _use("myrt_aoti_torch_x", "myrt_aoti_torch_a") + ENTRY)
    code = (
        "import ctypes, os, sys\n"
        "for p in sys.argv[1:-1]: ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)\n"
        "ctypes.CDLL(sys.argv[-1], mode=os.RTLD_NOW | os.RTLD_LOCAL)\n"
    )
    env = dict(os.environ, LD_DEBUG="bindings")
    loaded = subprocess.run(
        [sys.executable, "-c", code, str(first), str(second), str(blob)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert loaded.returncode == 0, loaded.stderr
    assert f"binding file {blob} [0] to {old} [0]: normal symbol `myrt_aoti_torch_x'" in loaded.stderr
    report = run_check(CheckSettings(shims=(str(first), str(second)), models=(str(blob),)))
    # libold.so is judged as a shim is (loaded global with libfirst.so): its copy of the name
    # is a second definer beside libsecond.so's.
    assert _found(report) == {
        ("BINDS_OUTSIDE_SHIMS", "libblob.so", "myrt_aoti_torch_x"),
        ("DUPLICATE_DEFINER", "libold.so", "myrt_aoti_torch_x"),
    }
    (finding,) = [f for f in report.findings if f.rule == "BINDS_OUTSIDE_SHIMS"]
    assert finding.message == (
        f"imports 'myrt_aoti_torch_x', which binds to {old} (a dependency loaded with the shims) in the process, "
        f"not to {second}, which also defines it"
    )
    only_old = _lib(tmp_path, "blob_q", _use("myrt_aoti_torch_q", "myrt_aoti_torch_a") + ENTRY)
    assert _loads([first], only_old).returncode == 0
    assert run_check(CheckSettings(shims=(str(first),), models=(str(only_old),))).findings == ()


# -- executables are libraries too ---------------------------------------------------------------


def test_a_wheels_runner_that_exports_symbols_is_checked(tmp_path: Path) -> None:
    """A runner linked -rdynamic is the coalesced process itself: its unprefixed export binds
    first for every library. f562a93 skipped the executable (said only under -v)."""
    src = tmp_path / "runner.c"
    src.write_text(_define("aoti_torch_get_data_ptr", "myrt_aoti_torch_x") + "int main(void) { return 0; }\n")
    runner = tmp_path / "runner"
    compile_program(src, runner, ("-rdynamic",))
    wheel = tmp_path / "rt-1.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(runner, "rt/bin/runner")
    report = run_check(CheckSettings(shims=(str(wheel),)))
    assert ("UNPREFIXED_EXPORT", "runner", "aoti_torch_get_data_ptr") in {
        (r, Path(a).name.split("/")[-1], s) for r, a, s in _found(report)
    }
    # One without exports of its own stays what it was: a program, not checked.
    plain = tmp_path / "plain"
    (tmp_path / "plain.c").write_text("int main(void) { return 0; }\n")
    compile_program(tmp_path / "plain.c", plain)
    folder = tmp_path / "bin"
    folder.mkdir()
    os.replace(plain, folder / "plain")
    with pytest.raises(Exception, match="holds only programs"):
        run_check(CheckSettings(shims=(str(folder),)))


# -- a wheel member and the same file on disk -------------------------------------------------------


def test_a_member_whose_dynstr_runs_past_the_streamed_head_reads_as_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shape of a real 262 MB library: .dynstr (40 MB there) inside the first LOAD
    segment, beyond what the stream keeps of its head. f562a93 said '.dynstr lies outside
    the file' from the wheel and checked the extracted file fine. Scaled down: a 128 KiB
    head, a 210 KiB .dynstr."""
    names = [f"myrt_aoti_torch_{'long_name_' * 5}{i:05d}" for i in range(3000)]
    shim = _lib(tmp_path, "bigstr", _define(*names))
    wheel = tmp_path / "big-1.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(shim, "big/libbigstr.so")
    monkeypatch.setattr(inputs, "SMALL_MEMBER", 0)
    monkeypatch.setattr(inputs, "STREAM_HEAD", 128 << 10)
    with ElfImage(str(shim)) as image:
        _, strtab = image._table.dynsym()
        assert strtab.offset < (128 << 10) < strtab.offset + strtab.size, "the fixture's .dynstr straddles the head"
    of_file = run_check(CheckSettings(shims=(str(shim),)))
    of_wheel = run_check(CheckSettings(shims=(str(wheel),)))
    assert [(f.rule, f.symbol, f.message) for f in of_wheel.findings] == [
        (f.rule, f.symbol, f.message) for f in of_file.findings
    ]
    assert of_wheel.exit_code() == of_file.exit_code() == 0


# -- symlinked subfolders ----------------------------------------------------------------------------


def test_a_symlinked_subfolder_is_followed_and_a_loop_said(tmp_path: Path) -> None:
    """f562a93 skipped a symlinked subfolder silently: the unprefixed shim inside passed."""
    real = tmp_path / "real"
    real.mkdir()
    _lib(real, "bad", _define("aoti_torch_get_data_ptr"))
    top = tmp_path / "top"
    top.mkdir()
    _lib(top, "good", _define("myrt_aoti_torch_x"))
    (top / "lib").symlink_to(real, target_is_directory=True)
    (top / "loop").symlink_to(top, target_is_directory=True)
    with checking(CheckSettings(shims=(str(top),), prefix="myrt_")) as run:
        found = {(f.rule, Path(f.artifact).name, f.symbol) for f in run.findings()}
        ignored = run.header.ignored
    assert ("UNPREFIXED_EXPORT", "libbad.so", "aoti_torch_get_data_ptr") in found
    assert (str(top / "loop"), "symlinked folder read already (a loop, or a second link)") in ignored


# -- messages that name the fix (issue 27 §2) -----------------------------------------------------------


def test_a_shim_without_extern_c_is_said_to_be_one(tmp_path: Path) -> None:
    shim = _lib(tmp_path, "cxx", "int myrt_aoti_torch_empty_strided() { return 0; }\n", language="c++")
    report = run_check(CheckSettings(shims=(str(shim),)))
    (finding,) = [f for f in report.findings if f.rule == "MANGLED_SHIM"]
    assert finding.symbol == "_Z29myrt_aoti_torch_empty_stridedv"
    assert finding.message == (
        "exports 1 C++-mangled shim name(s), e.g. '_Z29myrt_aoti_torch_empty_stridedv': the shims are defined without "
        'extern "C", so no blob can bind to them; declare them extern "C" (include torch\'s shim headers, or wrap '
        'the definitions in an extern "C" block)'
    )
    # No prefix is read off a mangled name (f562a93: "the built shims carry the prefix '_Z29myrt_'").
    from aoti_shim.checks.abi.prefix import built_prefix

    assert built_prefix(shim) is None and infer(["_Z29myrt_aoti_torch_empty_stridedv"]) is None


def test_a_shim_without_extern_c_gets_one_finding_with_the_prefix_given_too(tmp_path: Path) -> None:
    """g++ without extern "C": the prefix is there, mangled. With --prefix myrt_ 4299e25 also said
    PREFIX_MISMATCH ("the given prefix is exported by no shim library"; 4c8e217: "the shims carry
    no prefix at all"): two findings for one cause, the second without the fix (issue 35 §2)."""
    shim = _lib(
        tmp_path, "cxx", "int myrt_aoti_torch_empty_strided() { return 0; }\nint myrt_aoti_torch_x() { return 0; }\n",
        language="c++",
    )
    for prefix in (None, "myrt_"):
        report = run_check(CheckSettings(shims=(str(shim),), prefix=prefix))
        on_shim = [f for f in report.findings if f.artifact == str(shim)]
        assert [f.rule for f in on_shim] == ["MANGLED_SHIM"], (prefix, [f.message for f in report.findings])
        assert "C++-mangled" in on_shim[0].message and 'declare them extern "C"' in on_shim[0].message
        assert not [f for f in report.findings if "no prefix at all" in f.message], prefix
    # Mangled under another prefix than the given one, the given one is still said to be missing.
    # So under a tail of it (`rt_` of `myrt_`): at 1c8bdb9 a substring of a mangling silenced it.
    for other in ("other_", "rt_"):
        report = run_check(CheckSettings(shims=(str(shim),), prefix=other))
        assert sorted(f.rule for f in report.findings) == ["MANGLED_SHIM", "PREFIX_MISMATCH"], other


def test_a_source_without_the_rename_header_is_told_to_include_it(tmp_path: Path) -> None:
    shim = _lib(tmp_path, "half", _define("myrt_aoti_torch_empty_strided", "aoti_torch_delete_tensor_object"))
    report = run_check(CheckSettings(shims=(str(shim),)))
    (finding,) = [f for f in report.findings if f.rule == "UNPREFIXED_EXPORT"]
    assert finding.message == (
        "exports 'aoti_torch_delete_tensor_object' without the prefix (expected "
        "'myrt_aoti_torch_delete_tensor_object'): "
        "other shims carry 'myrt_', so a source defines this one without the rename header; include "
        "<aoti_shim_rename.h> first, or use FORCE_INCLUDE"
    )
    both = _lib(tmp_path, "both", _define("myrt_aoti_torch_empty_strided", "aoti_torch_empty_strided"))
    (finding,) = [f for f in run_check(CheckSettings(shims=(str(both),))).findings if f.rule == "UNPREFIXED_EXPORT"]
    assert finding.message == (
        "exports 'aoti_torch_empty_strided' without the prefix (expected 'myrt_aoti_torch_empty_strided') beside "
        "'myrt_aoti_torch_empty_strided': a source defines it without the rename header; include <aoti_shim_rename.h> "
        "first, or use FORCE_INCLUDE"
    )


def test_a_runtimes_own_name_no_rename_list_holds_is_told_how_to_add_it(tmp_path: Path) -> None:
    shim = _lib(tmp_path, "own", _define("myrt_aoti_torch_empty_strided", "aoti_torch_cuda_int4_plain_mm"))
    report = run_check(CheckSettings(shims=(str(shim),)))
    (finding,) = [f for f in report.findings if f.rule == "UNPREFIXED_EXPORT"]
    assert finding.message == (
        "exports 'aoti_torch_cuda_int4_plain_mm' without the prefix (expected 'myrt_aoti_torch_cuda_int4_plain_mm'): "
        "no rename list holds this name (a runtime's own shim, not in torch's headers); add it with NAMES_FROM in "
        "CMake, `names-from` in [tool.aoti-shim], or `aoti-shim rename-header --shim-include DIR`"
    )
