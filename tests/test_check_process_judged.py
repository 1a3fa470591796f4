"""Every library of the process is judged, and the process is derived, not guessed (issue 33
§1, §1b).

§1: a shim-ABI import of a blob's own dependency (a kernel library its RUNPATH finds) is
judged by the import rules as the blob's are, and the finding names the chain that loaded
it (``blob → libdep.so``). §1b: a library an extension module needs, or that needs
libtorch_python.so, lives in a CPython process; a program found in a wheel is a process of
its own; a program's copy relocations are no re-export of the C++ runtime. Each shape that
is about loading is asked of the real loader: a child process dlopens the globals
RTLD_GLOBAL, then the blob RTLD_NOW | RTLD_LOCAL, under LD_DEBUG=bindings.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from aoti_shim.checks import CheckSettings, run_check
from c_library_support import ENTRY, EXPORT, c_library, defining, using
from compile_support import compile_program, compiler

REPO = Path(__file__).resolve().parents[1]
SOURCES = REPO / "fixtures" / "checker"
LOADER = (
    "import ctypes, os, sys\n"
    "for p in sys.argv[1:-1]: ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)\n"
    "ctypes.CDLL(sys.argv[-1], mode=os.RTLD_NOW | os.RTLD_LOCAL)\n"
)


@pytest.fixture(autouse=True)
def _no_library_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)


def _lib(folder: Path, name: str, text: str, flags: tuple[str, ...] = ()) -> Path:
    return c_library(folder, name, text, ("-Wl,--no-as-needed", *flags))


def _load(*paths: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, LD_DEBUG="bindings")
    env.pop("LD_LIBRARY_PATH", None)
    return subprocess.run(
        [sys.executable, "-c", LOADER, *map(str, paths)], capture_output=True, text=True, env=env, check=False
    )


def _blocking(report) -> set[tuple[str, str, str]]:
    return {(f.rule, Path(f.artifact).name, f.symbol) for f in report.findings if f.severity == "blocking"}


def _message(report, rule: str, symbol: str) -> str:
    return next(f.message for f in report.findings if f.rule == rule and f.symbol == symbol)


# -- §1: a blob's own dependency ---------------------------------------------------------------


def _kernel_blob(tmp_path: Path, kernel_imports: tuple[str, ...]) -> tuple[Path, Path, Path]:
    """libtorch_cpu.so (a stand-in defining the unprefixed name), the shims (myrt_), and a
    blob whose kernel library kern/libkern.so (found by the blob's RUNPATH) imports
    ``kernel_imports``."""
    torch = _lib(tmp_path / "torch", "torch_cpu", defining("aoti_torch_get_numel", "aoti_torch_empty_strided"))
    shim = _lib(tmp_path, "shim", defining("myrt_aoti_torch_get_numel", "myrt_aoti_torch_empty_strided"))
    decls = "".join(f"extern int {n}(void);\n" for n in kernel_imports)
    kern = _lib(
        tmp_path / "kern",
        "kern",
        decls + f"{EXPORT} int kernel(void) {{ return {' + '.join(f'{n}()' for n in kernel_imports)}; }}\n",
    )
    blob_text = "extern int kernel(void);\n" + using("myrt_aoti_torch_get_numel", "kernel") + ENTRY
    blob = _lib(tmp_path, "blob", blob_text, (str(kern), "-Wl,-rpath,$ORIGIN/kern"))
    return torch, shim, blob


def test_a_partial_rename_in_a_runpath_dependency_binds_to_libtorch(tmp_path: Path) -> None:
    """libkern.so imports myrt_aoti_torch_empty_strided and aoti_torch_get_numel: the loader
    binds the unprefixed one to libtorch (the crash); 4c8e217 said OK."""
    torch, shim, blob = _kernel_blob(tmp_path, ("myrt_aoti_torch_empty_strided", "aoti_torch_get_numel"))
    kern = tmp_path / "kern" / "libkern.so"
    loaded = _load(torch, shim, blob)
    assert loaded.returncode == 0, loaded.stderr
    assert f"binding file {kern} [0] to {torch} [0]: normal symbol `aoti_torch_get_numel'" in loaded.stderr
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),), against=(str(torch),)))
    assert _blocking(report) == {("UNPREFIXED_IMPORT", "libkern.so", "aoti_torch_get_numel")}
    message = _message(report, "UNPREFIXED_IMPORT", "aoti_torch_get_numel")
    assert f"(loaded as {blob} → {kern})" in message, message
    assert f"binds to {torch} in the process" in message, message


def test_a_prefixed_name_no_shim_defines_in_a_dependency_fails_the_load(tmp_path: Path) -> None:
    """libkern.so imports myrt_aoti_torch_nothere: dlopen refuses the blob; 4c8e217 said OK."""
    torch, shim, blob = _kernel_blob(tmp_path, ("myrt_aoti_torch_nothere",))
    loaded = _load(torch, shim, blob)
    assert loaded.returncode != 0 and "undefined symbol: myrt_aoti_torch_nothere" in loaded.stderr, loaded.stderr
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),), against=(str(torch),)))
    assert _blocking(report) == {("UNSATISFIED_IMPORT", "libkern.so", "myrt_aoti_torch_nothere")}
    message = _message(report, "UNSATISFIED_IMPORT", "myrt_aoti_torch_nothere")
    assert f"(loaded as {blob} → {tmp_path / 'kern' / 'libkern.so'})" in message, message
    assert f"the dlopen of {blob} fails" in message, message


def test_an_unprefixed_name_with_no_libtorch_in_a_dependency_fails_the_load(tmp_path: Path) -> None:
    """No libtorch in the process: libkern.so's aoti_torch_get_numel binds to nothing and
    dlopen refuses the blob; 4c8e217 said OK."""
    _, shim, blob = _kernel_blob(tmp_path, ("aoti_torch_get_numel",))
    loaded = _load(shim, blob)
    assert loaded.returncode != 0 and "undefined symbol: aoti_torch_get_numel" in loaded.stderr, loaded.stderr
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),)))
    assert _blocking(report) == {("UNPREFIXED_IMPORT", "libkern.so", "aoti_torch_get_numel")}
    message = _message(report, "UNPREFIXED_IMPORT", "aoti_torch_get_numel")
    assert f"(loaded as {blob} → {tmp_path / 'kern' / 'libkern.so'})" in message, message
    assert "binds to no library of this process (the load fails: undefined symbol)" in message, message


def test_a_clean_dependency_and_a_stable_abi_extensions_own_dependency_add_nothing(tmp_path: Path) -> None:
    """A kernel library importing only the shims' names is clean; a stable-ABI extension's
    dependency imports libtorch's names by design, as the extension does (a warning once)."""
    torch, shim, blob = _kernel_blob(tmp_path, ("myrt_aoti_torch_empty_strided",))
    assert _load(torch, shim, blob).returncode == 0
    assert _blocking(run_check(CheckSettings(shims=(str(shim),), models=(str(blob),), against=(str(torch),)))) == set()
    dep = _lib(tmp_path / "ext", "extdep", using("aoti_torch_get_numel"))
    ext_text = "extern int use_all(void);\nextern int aoti_torch_empty_strided(void);\n"
    ext_text += f"{EXPORT} int ext(void) {{ return use_all() + aoti_torch_empty_strided(); }}\n"
    ext = _lib(tmp_path, "ext", ext_text, (str(dep), "-Wl,-rpath,$ORIGIN/ext"))
    assert _load(torch, ext).returncode == 0
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(ext),), against=(str(torch),)))
    assert _blocking(report) == set(), [f.message for f in report.findings]
    assert [f.rule for f in report.findings] == ["NOT_AN_AOTI_MODEL"]


# -- §1b: the Python host -----------------------------------------------------------------------

_HELPER = """
#include <Python.h>
__attribute__((visibility("default"))) PyObject *helper_value(void) { return PyLong_FromLong(7); }
"""
_EXTENSION = """
#include <Python.h>
extern PyObject *helper_value(void);
static PyObject *value(PyObject *self, PyObject *args) { return helper_value(); }
static PyMethodDef methods[] = {{"value", value, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ext", NULL, -1, methods};
PyMODINIT_FUNC PyInit__ext(void) { return PyModule_Create(&module); }
"""


def _python_library(folder: Path, name: str, text: str, flags: tuple[str, ...] = ()) -> Path:
    """A library built against CPython's headers, no libpython linked (as manylinux builds them)."""
    include = sysconfig.get_paths()["include"]
    return c_library(folder, name, text, (f"-I{include}", "-Wl,--no-as-needed", *flags))


def test_a_library_an_extension_module_needs_binds_cpythons_api_to_the_interpreter(tmp_path: Path) -> None:
    """_ext (PyInit__ext) needs libhelper.so, which calls PyLong_FromLong: it imports and runs
    in an interpreter; 4c8e217 said LOAD_FAILURE for the helper's Py* imports."""
    helper = _python_library(tmp_path / "pkg", "helper", _HELPER)
    ext = _python_library(tmp_path / "pkg", "_ext", _EXTENSION, (str(helper), "-Wl,-rpath,$ORIGIN"))
    ext = ext.rename(ext.with_name("_ext.so"))
    code = f"import sys; sys.path.insert(0, {str(ext.parent)!r}); import _ext; assert _ext.value() == 7"
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert imported.returncode == 0, imported.stderr
    report = run_check(CheckSettings(models=(str(ext),)))
    assert not [f for f in report.findings if f.rule == "LOAD_FAILURE"], [f.message for f in report.findings]
    # The same helper with no extension module above it: nothing says an interpreter hosts it.
    alone = _python_library(tmp_path / "alone", "helper", _HELPER)
    assert ("LOAD_FAILURE", "libhelper.so", "PyLong_FromLong") in _blocking(
        run_check(CheckSettings(models=(str(alone),)))
    )


def test_a_library_needing_libtorch_python_binds_cpythons_api_to_the_interpreter(tmp_path: Path) -> None:
    """libuser.so needs libtorch_python.so (a stand-in here) and calls PyLong_FromLong:
    libtorch_python lives only in an interpreter, so ctypes loads it there (RTLD_NOW);
    4c8e217 said LOAD_FAILURE."""
    torch_python = _lib(tmp_path / "torch", "torch_python", defining("THPVariable_Wrap"))
    user = _python_library(tmp_path, "user", _HELPER, (str(torch_python), "-Wl,-rpath,$ORIGIN/torch"))
    loaded = _load(user)
    assert loaded.returncode == 0, loaded.stderr
    report = run_check(CheckSettings(models=(str(user),)))
    assert not [f for f in report.findings if f.rule == "LOAD_FAILURE"], [f.message for f in report.findings]


def test_a_blobs_dependency_importing_cpythons_api_is_judged_by_the_process_it_lives_in(tmp_path: Path) -> None:
    """A blob needs libhelper.so, which calls PyLong_FromLong. With nothing saying the process
    is an interpreter (a C++ runner's dlopen of the blob), the helper's import binds to
    nothing: a real program's dlopen fails on it, and the check says LOAD_FAILURE naming the
    helper. When the blob needs libtorch_python.so (only an interpreter loads it), its whole
    closure lives in CPython: ctypes loads it, and the check says no LOAD_FAILURE. Before,
    only the library needing libtorch_python was taken as hosted, not its own dependency."""
    helper = _python_library(tmp_path / "deps", "helper", _HELPER)
    runner = tmp_path / "runner"
    source = tmp_path / "runner.c"
    source.write_text(
        "#include <dlfcn.h>\n#include <stdio.h>\n"
        "int main(int argc, char **argv) { if (!dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) { puts(dlerror()); return 1; "
        "} return 0; }\n"
    )
    compile_program(source, runner, ("-ldl",))
    text = "extern void *helper_value(void);\n" + f"{EXPORT} int use(void) {{ return helper_value() != 0; }}\n" + ENTRY
    blob = _lib(tmp_path, "blob", text, (str(helper), "-Wl,-rpath,$ORIGIN/deps"))
    ran = subprocess.run([str(runner), str(blob)], capture_output=True, text=True, check=False)
    assert ran.returncode != 0 and "undefined symbol: PyLong_FromLong" in ran.stdout, ran.stdout
    report = run_check(CheckSettings(models=(str(blob),)))
    assert ("LOAD_FAILURE", "libblob.so", "PyLong_FromLong") in _blocking(report)
    assert "libhelper.so" in _message(report, "LOAD_FAILURE", "PyLong_FromLong")
    torch_python = _lib(tmp_path / "torch", "torch_python", defining("THPVariable_Wrap"))
    run_path = "-Wl,-rpath,$ORIGIN/../deps:$ORIGIN/../torch"
    hosted = _lib(tmp_path / "hosted", "blob", text, (str(helper), str(torch_python), run_path))
    loaded = _load(hosted)
    assert loaded.returncode == 0, loaded.stderr
    report = run_check(CheckSettings(models=(str(hosted),)))
    assert not [f for f in report.findings if f.rule == "LOAD_FAILURE"], [f.message for f in report.findings]


# -- §1b: a program in a wheel is a process of its own ----------------------------------------------


def test_a_wheels_program_does_not_host_the_wheels_libraries(tmp_path: Path) -> None:
    """bin/tool (-no-pie: it exports its copy of stderr) needs libfoo.so; lib/libbar.so calls
    foo_helper without a DT_NEEDED on libfoo.so. dlopen refuses libbar.so; 4c8e217 put the
    tool first with libfoo.so global and said OK."""
    lib = tmp_path / "pkg" / "lib"
    foo = _lib(lib, "foo", defining("foo_helper"))
    bar = _lib(lib, "bar", using("foo_helper", "myrt_aoti_torch_get_numel") + ENTRY)
    tool = tmp_path / "pkg" / "bin" / "tool"
    tool.parent.mkdir(parents=True)
    compile_program(
        SOURCES / "stderr_tool.c", tool, ("-no-pie", "-Wl,--no-as-needed", str(foo), "-Wl,-rpath,$ORIGIN/../lib")
    )
    exported = subprocess.run(
        ["readelf", "--dyn-syms", "-W", str(tool)], capture_output=True, text=True, check=True
    ).stdout
    assert any(" stderr" in line and " UND " not in line for line in exported.splitlines()), exported
    assert subprocess.run([str(tool)], capture_output=True, text=True, check=False).returncode == 0
    shim = _lib(tmp_path, "shim", defining("myrt_aoti_torch_get_numel"))
    loaded = _load(shim, bar)
    assert loaded.returncode != 0 and "undefined symbol: foo_helper" in loaded.stderr, loaded.stderr
    wheel = tmp_path / "pkg-1.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path in (foo, bar, tool):
            zf.write(path, str(path.relative_to(tmp_path)))
    for given in (str(wheel), str(tmp_path / "pkg")):
        report = run_check(CheckSettings(shims=(str(shim),), models=(given,)))
        assert ("LOAD_FAILURE", "libbar.so", "foo_helper") in _blocking(report), (
            given,
            [f.message for f in report.findings],
        )
        assert not [f for f in report.findings if Path(f.artifact).name == "tool" and f.severity == "blocking"], given
    # Named as the program that hosts the blobs, the tool is the process's program again.
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(tool), str(bar))))
    assert ("LOAD_FAILURE", "libbar.so", "foo_helper") not in _blocking(report), [f.message for f in report.findings]


def _rdynamic_program(path: Path, *names: str) -> Path:
    """A PIE program (PT_INTERP) linked -rdynamic: it exports every function it defines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    source = path.parent.parent / f"{path.name}.c"  # a text file: both walks skip it
    source.write_text(defining(*names) + "int main(void) { return 0; }\n")
    compile_program(source, path, ("-rdynamic",))
    headers = subprocess.run(["readelf", "-lW", str(path)], capture_output=True, text=True, check=True).stdout
    assert "INTERP" in headers, headers
    exported = subprocess.run(
        ["nm", "-D", "--defined-only", str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert all(f" T {n}" in exported for n in names), exported
    # The loader itself never puts it in another process: dlopen refuses an executable.
    refused = subprocess.run(
        [sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", str(path)],
        capture_output=True, text=True, check=False,
    )
    assert refused.returncode != 0 and "cannot dynamically load" in refused.stderr, refused.stderr
    return path


def test_an_rdynamic_program_in_a_checked_folder_is_its_own_process(tmp_path: Path) -> None:
    """check --model FOLDER: bin/tool exports foo_helper (-rdynamic); lib/libbar.so calls
    foo_helper with no DT_NEEDED that defines it. Read as a library of the blob's process the
    tool would satisfy it (a false OK); judged as the program it is, libbar.so cannot load."""
    pkg = tmp_path / "pkg"
    bar = _lib(pkg / "lib", "bar", using("foo_helper", "myrt_aoti_torch_get_numel") + ENTRY)
    _rdynamic_program(pkg / "bin" / "tool", "foo_helper")
    shim = _lib(tmp_path, "shim", defining("myrt_aoti_torch_get_numel"))
    loaded = _load(shim, bar)
    assert loaded.returncode != 0 and "undefined symbol: foo_helper" in loaded.stderr, loaded.stderr
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(pkg),)))
    assert ("LOAD_FAILURE", "libbar.so", "foo_helper") in _blocking(report), [f.message for f in report.findings]
    assert not [f for f in report.findings if Path(f.artifact).name == "tool"], [f.message for f in report.findings]


def _distributions(site: Path, files: dict[str, list[Path]]) -> None:
    """Each name a distribution 1.0 installed in ``site`` whose RECORD lists its files."""
    for name, listed in files.items():
        info = site / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        rows = [f"{f.relative_to(site)},," for f in listed] + [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
        (info / "RECORD").write_text("\n".join(rows) + "\n")


def test_a_library_naming_an_interpreter_is_still_a_library(tmp_path: Path) -> None:
    """A shared object with PT_INTERP but not linked as a program (libc.so.6 is one; no
    DF_1_PIE) is loaded by dlopen, so it is judged with the environment's libraries: at
    0e27a51 scan took it for a program, and its unprefixed shims' HIJACK became OK."""
    from aoti_shim.checks.scan.run import ScanSettings, run_scan

    site = tmp_path / "site-packages"
    interp = 'const char interp[] __attribute__((section(".interp"))) = "/lib64/ld-linux-x86-64.so.2";\n'
    vendor = _lib(site / "vendor", "vendor", interp + defining("aoti_torch_get_data_ptr"))
    headers = subprocess.run(["readelf", "-lW", str(vendor)], capture_output=True, text=True, check=True).stdout
    assert "INTERP" in headers, headers
    loaded = subprocess.run(
        [sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", str(vendor)],
        capture_output=True, text=True, check=False,
    )
    assert loaded.returncode == 0, loaded.stderr
    ext = _lib(site / "ext", "ops", using("aoti_torch_get_data_ptr"))
    _distributions(site, {"vendor": [vendor], "ext": [ext]})
    report = run_scan(ScanSettings(paths=(str(site),)))
    assert [(h.provider, h.consumer) for h in report.hijacks] == [("vendor/libvendor.so", "ext/libops.so")]
    roles = {lib.display: lib.describe_roles() for lib in report.scanned.libraries}
    assert not roles["vendor/libvendor.so"].startswith("a program"), roles


def test_an_rdynamic_program_in_an_environment_hijacks_no_extension(tmp_path: Path) -> None:
    """scan: a distribution's -rdynamic program exporting one of libtorch's shim names beside
    torch and a stable-ABI extension of another distribution. 4299e25 placed the program
    RTLD_GLOBAL in the Python process: a false HIJACK of the extension and a COLLISION with
    libtorch_cpu.so. No Python process loads a program; it is listed as what it is."""
    from aoti_shim.checks.scan.run import ScanSettings, run_scan
    from torch_support import torch_package

    site = tmp_path / "site-packages"
    tool = _rdynamic_program(site / "runner" / "bin" / "tool", "aoti_torch_get_data_ptr")
    ext = _lib(site / "ext", "ops", using("aoti_torch_get_data_ptr"))
    _distributions(site, {"runner": [tool], "ext": [ext]})
    (site / "shared_torch.pth").write_text(f"{torch_package().parent}\n")
    report = run_scan(ScanSettings(paths=(str(site),)))
    assert [(f.rule, f.artifact) for f in report.findings if "runner" in f.artifact + (f.related or "")] == []
    assert report.hijacks == () or not any("runner" in h.provider for h in report.hijacks)
    roles = {lib.display: lib.describe_roles() for lib in report.scanned.libraries}
    assert roles["runner/bin/tool"].startswith("a program, its own process"), roles["runner/bin/tool"]
    # Nor is it a row of the providers table (b6b8817 listed it as an unprefixed provider).
    assert not [row for row in report.providers if "runner" in row.library], report.providers
    assert roles["ext/libops.so"] == "stable-ABI consumer", roles["ext/libops.so"]


def _is_program(path: Path) -> bool:
    """readelf's word, the independent judge: a program names an interpreter (PT_INTERP) and is
    ET_EXEC or a PIE (DF_1_PIE in DT_FLAGS_1); a shared object naming one is still a library."""
    def readelf(*flags: str) -> str:
        return subprocess.run(["readelf", "-W", *flags, str(path)], capture_output=True, text=True, check=True).stdout

    flags_1 = [line for line in readelf("-d").splitlines() if "(FLAGS_1)" in line]
    linked = "Type: EXEC " in " ".join(readelf("-h").split()) or any(" PIE" in line for line in flags_1)
    return "INTERP" in readelf("-l") and linked


def test_scans_header_counts_an_rdynamic_program_with_the_programs(tmp_path: Path) -> None:
    """Before review-fixes the header said "2 distributions, 3 ELF libraries": the -rdynamic
    tool (judged, for it exports shim ABI) counted as a library, the plain program as nothing."""
    from cli_support import cli

    site = tmp_path / "site-packages"
    tool = _rdynamic_program(site / "runner" / "bin" / "tool", "aoti_torch_get_data_ptr")
    plain = site / "runner" / "bin" / "plain"
    (tmp_path / "plain.c").write_text("int main(void) { return 0; }\n")
    compile_program(tmp_path / "plain.c", plain)
    interp = 'const char interp[] __attribute__((section(".interp"))) = "/lib64/ld-linux-x86-64.so.2";\n'
    vendor = _lib(site / "vendor", "vendor", interp + defining("myrt_aoti_torch_x"))
    ops = _lib(site / "vendor", "ops", using("myrt_aoti_torch_x"))
    files = [tool, plain, vendor, ops]
    _distributions(site, {"runner": [tool, plain], "vendor": [vendor, ops]})
    assert [_is_program(f) for f in files] == [True, True, False, False]
    done = cli("scan", str(site), "--color", "never")
    assert done.returncode == 0, done.stderr
    flat = " ".join(done.stdout.split())  # (the header wraps at 100 columns)
    assert f"scanned site folder {site}: 2 distributions, 2 ELF libraries, 2 programs " in flat, done.stdout
    assert "(-v lists the 2 libraries and 2 programs read and what each is)" in flat
    summary = cli("scan", str(site), "--format", "github").stdout
    counted = "2 distribution(s), 1 with ELF libraries (2 libraries), 0 libraries outside any distribution, 2 programs."
    assert counted in summary, summary


# -- §1b: copy relocations are no re-export ---------------------------------------------------------


def test_a_programs_copies_of_libstdcxx_data_are_no_reexported_runtime(tmp_path: Path) -> None:
    """g++ -no-pie on a one-line program: std::cout and std::cerr are R_X86_64_COPY targets of
    libstdc++ that the program exports; 4c8e217 said REEXPORTED_RUNTIME (executorch's flatc)."""
    compiler("c++")
    program = tmp_path / "hello"
    compile_program(SOURCES / "cout_program.cpp", program, ("-no-pie",))
    exported = subprocess.run(
        ["readelf", "--dyn-syms", "-W", str(program)], capture_output=True, text=True, check=True
    ).stdout
    assert any(" _ZSt4cout" in line and " UND " not in line for line in exported.splitlines()), exported
    report = run_check(CheckSettings(models=(str(program),)))
    assert [f.rule for f in report.findings] == [], [f.message for f in report.findings]
    # A library that links the runtime statically still re-exports it.
    static = c_library(
        tmp_path / "static",
        "static",
        '#include <stdexcept>\n__attribute__((visibility("default"))) void f() { throw std::runtime_error("x"); }\n',
        ("-static-libstdc++", "-static-libgcc"),
        language="c++",
    )
    assert "REEXPORTED_RUNTIME" in [f.rule for f in run_check(CheckSettings(models=(str(static),))).findings]


def test_a_found_programs_own_load_is_judged_once(tmp_path: Path) -> None:
    """A found program is judged as the process it is: one needing a library found nowhere
    cannot start (as the loader says); a shim another program loads, whose function import
    binds to nothing, is said once, though both processes load that shim."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    gone = _lib(tmp_path / "elsewhere", "gone", defining("gone_helper"))
    shim = _lib(tmp_path / "lib", "shim", defining("myrt_aoti_torch_get_numel", "foo_helper") + using("helper_nowhere"))
    flags = ("-no-pie", "-Wl,--no-as-needed,--allow-shlib-undefined", str(shim), "-Wl,-rpath,$ORIGIN/../lib")
    compile_program(SOURCES / "stderr_tool.c", folder / "tool", (*flags, str(gone)))
    compile_program(SOURCES / "stderr_tool.c", folder / "runs", flags)
    gone.unlink()
    started = subprocess.run([str(folder / "tool")], capture_output=True, text=True, check=False)
    assert started.returncode != 0 and "libgone.so: cannot open shared object file" in started.stderr, started.stderr
    assert subprocess.run([str(folder / "runs")], capture_output=True, text=True, check=False).returncode == 0
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(folder),)))
    blocking = sorted((f.rule, Path(f.artifact).name, f.symbol) for f in report.findings if f.severity == "blocking")
    assert blocking == [("LOAD_FAILURE", "libshim.so", "helper_nowhere"), ("LOAD_FAILURE", "tool", "")], blocking
    assert "needs libgone.so" in _message(report, "LOAD_FAILURE", ""), _message(report, "LOAD_FAILURE", "")
