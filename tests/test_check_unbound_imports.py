"""Every import binds, whatever its name: a blob (RTLD_NOW) whose import of a name that is
no shim ABI no library of its lookup scope defines cannot load, and LOAD_FAILURE says so.

The machine's own libraries (libc, libstdc++: the ld.so cache and the system folders) are
read for their exports; a library this machine lacks (a GPU driver's) may define anything,
so nothing beside it is judged. Each shape is also asked of the real loader where it can
be (a child process: the globals RTLD_GLOBAL, then the blob RTLD_LOCAL | RTLD_NOW).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aoti_shim.checks import CheckSettings, run_check
from aoti_shim.checks.loader import search
from c_library_support import ENTRY, EXPORT, c_library, defining, loads, using


def _lib(folder: Path, name: str, text: str, flags: tuple[str, ...] = (), *, soname: str | None = None) -> Path:
    # --no-as-needed: a DT_NEEDED entry stays though the library no longer defines what was used.
    return c_library(folder, name, text, ("-Wl,--no-as-needed", *flags), soname=soname)


def _blocking(report) -> set[tuple[str, str, str]]:
    return {(f.rule, Path(f.artifact).name, f.symbol) for f in report.findings if f.severity == "blocking"}


def _loads_with(env_path: Path | None, *paths: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    if env_path is not None:
        env["LD_LIBRARY_PATH"] = str(env_path)
    code = (
        "import ctypes, os, sys\n"
        "for p in sys.argv[1:-1]: ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)\n"
        "ctypes.CDLL(sys.argv[-1], mode=os.RTLD_NOW | os.RTLD_LOCAL)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, paths)], capture_output=True, text=True, env=env, check=False
    )


@pytest.fixture(autouse=True)
def _no_library_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)


def _deployment(tmp_path: Path, defines_helper: bool) -> tuple[Path, Path, Path]:
    """A shim, and a blob linked against libdep.so that defined helper; the deployment's
    libdep.so (in deploy/, found by LD_LIBRARY_PATH) defines it or not."""
    shim = _lib(tmp_path, "shim", defining("myrt_aoti_torch_x"))
    built = _lib(tmp_path / "build", "dep", defining("helper", "other"))
    blob = _lib(tmp_path, "blob", using("myrt_aoti_torch_x", "helper") + ENTRY, (str(built),))
    _lib(tmp_path / "deploy", "dep", defining("helper", "other") if defines_helper else defining("other"))
    built.unlink()
    return shim, blob, tmp_path / "deploy"


def test_a_found_dependency_that_lacks_an_import_fails_the_blob(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wrong OK of 1adf3f7: libdep.so is found (LD_LIBRARY_PATH) but defines no helper;
    dlopen refuses the blob ('undefined symbol: helper'), the check said OK."""
    shim, blob, deploy = _deployment(tmp_path, defines_helper=False)
    loaded = _loads_with(deploy, shim, blob)
    assert loaded.returncode != 0 and "undefined symbol: helper" in loaded.stderr, loaded.stderr
    monkeypatch.setenv("LD_LIBRARY_PATH", str(deploy))
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),)))
    assert _blocking(report) == {("LOAD_FAILURE", "libblob.so", "helper")}
    (finding,) = report.findings
    dep = os.path.realpath(deploy / "libdep.so")
    assert finding.message == (
        f"cannot be loaded next to the others: undefined symbol 'helper': no library of its lookup scope defines it "
        f"(its DT_NEEDED closure: {dep}; the references; the shims; the machine's libraries, libc among them); link it "
        "against the library that defines it (a DT_NEEDED entry), or make the one found define it (--library-path DIR "
        "names the deployment's folder)"
    ), finding.message
    assert "\n" not in finding.message and report.exit_code() == 8
    # The same dependency given by --library-path (the deployment's folder) is the same answer.
    monkeypatch.delenv("LD_LIBRARY_PATH")
    again = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),), library_path=(str(deploy),)))
    assert _blocking(again) == {("LOAD_FAILURE", "libblob.so", "helper")}


def test_a_found_dependency_that_defines_it_is_ok(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shim, blob, deploy = _deployment(tmp_path, defines_helper=True)
    assert _loads_with(deploy, shim, blob).returncode == 0
    monkeypatch.setenv("LD_LIBRARY_PATH", str(deploy))
    assert run_check(CheckSettings(shims=(str(shim),), models=(str(blob),))).findings == ()


def test_a_reference_or_a_shim_that_defines_it_binds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The references and the shims are global: what they define serves the blob."""
    shim, blob, deploy = _deployment(tmp_path, defines_helper=False)
    torch = _lib(tmp_path / "torch", "torchish", defining("aoti_torch_x", "helper"))
    monkeypatch.setenv("LD_LIBRARY_PATH", str(deploy))
    assert _loads_with(deploy, torch, shim, blob).returncode == 0
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),), against=(str(torch),)))
    assert _blocking(report) == set(), report.findings
    helping = _lib(tmp_path / "more", "helping", defining("myrt_aoti_torch_y", "helper"))
    assert _loads_with(deploy, shim, helping, blob).returncode == 0
    assert _blocking(run_check(CheckSettings(shims=(str(shim), str(helping)), models=(str(blob),)))) == set()


def test_the_machines_own_libraries_are_read(tmp_path: Path) -> None:
    """libc's and libm's functions bind (found through the ld.so cache and read); a name
    the machine's libc lacks does not."""
    text = "#include <stdio.h>\n#include <math.h>\n#include <unistd.h>\n"
    text += f"{EXPORT} double f(double x) {{ printf(\"%d\", getpid()); return cos(x); }}\n" + ENTRY
    blob = _lib(tmp_path, "blob", text, ("-lm",))
    assert _loads_with(None, blob).returncode == 0
    assert run_check(CheckSettings(models=(str(blob),))).findings == ()
    # A libc-only blob that also calls a function no library defines.
    odd = _lib(tmp_path, "odd", using("getpid", "no_such_libc_function") + ENTRY)
    loaded = _loads_with(None, odd)
    assert loaded.returncode != 0 and "undefined symbol: no_such_libc_function" in loaded.stderr, loaded.stderr
    assert _blocking(run_check(CheckSettings(models=(str(odd),)))) == {
        ("LOAD_FAILURE", "libodd.so", "no_such_libc_function")
    }


def test_libc_is_global_though_no_dt_needed_names_it(tmp_path: Path) -> None:
    """A blob linked with ld alone has no DT_NEEDED libc.so.6; every program has libc in
    its global scope, so its getpid binds there."""
    src = tmp_path / "bare.c"
    src.write_text(using("getpid") + ENTRY)
    subprocess.run(["gcc", "-c", "-fPIC", "-o", str(tmp_path / "bare.o"), str(src)], check=True)
    blob = tmp_path / "libbare.so"
    subprocess.run(["ld", "-shared", "-o", str(blob), str(tmp_path / "bare.o")], check=True)
    assert _loads_with(None, blob).returncode == 0
    assert run_check(CheckSettings(models=(str(blob),))).findings == ()


def test_a_weak_import_may_stay_unbound(tmp_path: Path) -> None:
    text = (
        f"extern int helper(void) __attribute__((weak));\n{EXPORT} int f(void) {{ return helper ? helper() : 0; }}\n"
        + ENTRY
    )
    blob = _lib(tmp_path, "blob", text)
    assert _loads_with(None, blob).returncode == 0
    assert run_check(CheckSettings(models=(str(blob),))).findings == ()


def test_a_dependencys_own_import_fails_the_blob_that_loads_it(tmp_path: Path) -> None:
    """libmid.so (found by the blob's RUNPATH) imports helper, which the liblow.so found now
    no longer defines: RTLD_NOW binds the whole closure, so the blob cannot load; the
    message names the library that imports it."""
    built = _lib(tmp_path / "build", "low", defining("helper"))
    mid = _lib(tmp_path / "lib", "mid", using("helper"), (str(built), "-Wl,-rpath,$ORIGIN"))
    _lib(tmp_path / "lib", "low", defining("other"))
    built.unlink()
    blob = _lib(tmp_path, "blob", using("use_all") + ENTRY, (str(mid), "-Wl,-rpath,$ORIGIN/lib"))
    loaded = _loads_with(None, blob)
    assert loaded.returncode != 0 and "undefined symbol: helper" in loaded.stderr, loaded.stderr
    report = run_check(CheckSettings(models=(str(blob),)))
    assert _blocking(report) == {("LOAD_FAILURE", "libblob.so", "helper")}
    (finding,) = report.findings
    assert (
        f"undefined symbol 'helper', which {os.path.realpath(mid)} (of its DT_NEEDED closure) imports"
        in finding.message
    )


def test_a_library_this_machine_lacks_may_define_it(tmp_path: Path) -> None:
    """libcuda.so.1 is not on this machine (a CI runner without a GPU): the blob's cuInit may
    be its, so no load failure is said, only the warning; the same for a shim's closure."""
    if "libcuda.so.1" in search.ld_so_cache():
        pytest.skip("this machine has a GPU driver: libcuda.so.1 is found")
    driver = _lib(tmp_path / "driver", "cuda", defining("cuInit", "cuLaunchKernel"), soname="libcuda.so.1")
    shim = _lib(tmp_path, "shim", defining("myrt_aoti_torch_x"))
    blob = _lib(tmp_path, "blob", using("myrt_aoti_torch_x", "cuInit") + ENTRY, (str(driver),))
    cuda_shim = _lib(tmp_path, "cudashim", defining("myrt_aoti_torch_y") + using("cuInit"), (str(driver),))
    other = _lib(tmp_path, "other", using("myrt_aoti_torch_y", "cuLaunchKernel") + ENTRY)
    driver.unlink()
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),)))
    assert [(f.rule, f.severity, f.symbol) for f in report.findings] == [
        ("UNSEEN_DEPENDENCY", "warning", "libcuda.so.1")
    ]
    report = run_check(CheckSettings(shims=(str(cuda_shim),), models=(str(other),)))
    assert [(f.rule, f.severity, f.symbol) for f in report.findings] == [
        ("UNSEEN_DEPENDENCY", "warning", "libcuda.so.1")
    ]
    # Without the driver in the closure the same import is judged: nothing defines it.
    alone = _lib(tmp_path, "alone", using("myrt_aoti_torch_x", "cuInit") + ENTRY)
    assert _blocking(run_check(CheckSettings(shims=(str(shim),), models=(str(alone),)))) == {
        ("LOAD_FAILURE", "libalone.so", "cuInit")
    }


def test_a_shims_imports_bind_at_load_or_at_their_first_call(tmp_path: Path) -> None:
    """A shim (RTLD_GLOBAL): an import of data binds when it loads, so one bound to nothing
    fails the load; a function import binds at its first call, which then fails (a host
    opening the shims RTLD_NOW, as ctypes does, is refused the load)."""
    data = _lib(
        tmp_path,
        "data",
        defining("myrt_aoti_torch_x") + f"extern int helper_data;\n{EXPORT} int g(void) {{ return helper_data; }}\n",
    )
    func = _lib(tmp_path, "func", defining("myrt_aoti_torch_y") + using("helper"))
    blob = _lib(tmp_path, "blob", using("myrt_aoti_torch_x") + ENTRY)
    lazy = subprocess.run(
        [
            sys.executable,
            "-c",
            "import ctypes, os, sys; "
            "libc = ctypes.CDLL(None); libc.dlopen.restype = ctypes.c_void_p; "
            "print(bool(libc.dlopen(sys.argv[1].encode(), os.RTLD_GLOBAL | os.RTLD_LAZY)), "
            "bool(libc.dlopen(sys.argv[2].encode(), os.RTLD_GLOBAL | os.RTLD_LAZY)))",
            str(data),
            str(func),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert lazy.stdout.split() == ["False", "True"], lazy
    assert "undefined symbol: helper" in loads([func], blob).stderr  # ctypes: RTLD_NOW
    report = run_check(CheckSettings(shims=(str(data), str(func)), models=(str(blob),)))
    assert _blocking(report) >= {
        ("LOAD_FAILURE", "libdata.so", "helper_data"),
        ("LOAD_FAILURE", "libfunc.so", "helper"),
    }
    messages = {f.symbol: f.message for f in report.findings if f.rule == "LOAD_FAILURE"}
    assert messages["helper_data"].startswith("cannot be loaded next to the others: undefined symbol 'helper_data'")
    assert messages["helper"].startswith(
        "loads, but its first call of undefined symbol 'helper' fails (a host opening it RTLD_NOW, as Python's ctypes "
        "does, is refused the load)"
    ), messages["helper"]


def test_a_version_the_machines_libc_lacks_fails_the_load(tmp_path: Path) -> None:
    """Linked against a stand-in libc.so.6 that has getpid@GLIBC_2.99: the machine's libc,
    now read, has no such version, and ld.so refuses the blob as the check says."""
    (tmp_path / "stub.map").write_text("GLIBC_2.99 { global: getpid; local: *; };\n")
    stub = c_library(
        tmp_path / "stub",
        "c",
        defining("getpid"),
        ("-nostdlib", f"-Wl,--version-script,{tmp_path / 'stub.map'}"),
        soname="libc.so.6",
    )
    blob = _lib(tmp_path, "blob", using("getpid") + ENTRY, ("-nostdlib", str(stub)))
    loaded = _loads_with(None, blob)
    assert loaded.returncode != 0 and "version `GLIBC_2.99' not found" in loaded.stderr, loaded.stderr
    report = run_check(CheckSettings(models=(str(blob),)))
    assert [(f.rule, f.message) for f in report.findings if f.severity == "blocking"] == [
        (
            "LOAD_FAILURE",
            "cannot be loaded next to the others: needs version 'GLIBC_2.99' of libc.so.6, which defines no such "
            "version",
        )
    ]


def test_a_cuda_process_has_the_driver_though_no_dt_needed_names_it(tmp_path: Path) -> None:
    """A CUDA blob linked against an empty libcuda.so.1 stand-in records no DT_NEEDED for it
    and leaves cuLaunchKernel undefined: the driver the CUDA runtime loads provides it. With
    the runtime in the process (a shim needing libcudart.so.13) the driver is part of it: read
    where this machine has it, else unknown, so no false block; without a runtime the same
    import binds to nothing."""
    if "libcuda.so.1" in search.ld_so_cache():
        pytest.skip("this machine has a GPU driver: libcuda.so.1 is read")
    runtime = _lib(tmp_path / "cuda", "cudart", defining("cudaMalloc"), soname="libcudart.so.13")
    shim = _lib(
        tmp_path, "shim", defining("myrt_aoti_torch_x") + using("cudaMalloc"), (str(runtime), "-Wl,-rpath,$ORIGIN/cuda")
    )
    plain = _lib(tmp_path, "plain", defining("myrt_aoti_torch_x"))
    blob = _lib(tmp_path, "blob", using("myrt_aoti_torch_x", "cuLaunchKernel") + ENTRY)
    assert run_check(CheckSettings(shims=(str(shim),), models=(str(blob),))).findings == ()
    assert _blocking(run_check(CheckSettings(shims=(str(plain),), models=(str(blob),)))) == {
        ("LOAD_FAILURE", "libblob.so", "cuLaunchKernel")
    }


_EXTENSION = """
#include <Python.h>
/* A runtime's shims in its Python module: CPython's API comes from the interpreter. */
__attribute__((visibility("default"))) int myrt_aoti_torch_get_numel(void* h, long* out) {
  PyObject* n = PyLong_FromLong(7);
  *out = PyLong_AsLong(n);
  Py_DECREF(n);
  return h == Py_None ? 1 : 0;
}
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rt", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__rt(void) { return PyModule_Create(&module); }
"""


def _extension(folder: Path, init: bool) -> Path:
    """A real CPython extension (no libpython DT_NEEDED, as manylinux builds them), or the same
    library without its PyInit_ (then nothing tells that an interpreter hosts it)."""
    import sysconfig

    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "rt.c"
    source.write_text(_EXTENSION if init else _EXTENSION.split("static struct")[0], encoding="utf-8")
    out = folder / "_rt.cpython-3x-linux.so"
    include = sysconfig.get_paths()["include"]
    subprocess.run(
        ["cc", "-shared", "-fPIC", f"-I{include}", "-o", str(out), str(source)], check=True, capture_output=True
    )
    return out


def test_a_python_extensions_imports_of_cpythons_api_are_the_interpreters(tmp_path: Path) -> None:
    """A runtime shipping its shims in its Python module: the interpreter that imports it
    defines Py* (the truth: it imports and runs); the check said LOAD_FAILURE for each."""
    extension = _extension(tmp_path / "ext", init=True)
    blob = _lib(tmp_path, "blob", using("myrt_aoti_torch_get_numel") + ENTRY)
    code = f"import sys; sys.path.insert(0, {str(extension.parent)!r}); import importlib.util as u; " \
        f"s = u.spec_from_file_location('_rt', {str(extension)!r}); m = u.module_from_spec(s); s.loader.exec_module(m)"
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert imported.returncode == 0, imported.stderr
    report = run_check(CheckSettings(shims=(str(extension),), models=(str(blob),)))
    assert _blocking(report) == set(), [f.message for f in report.findings]
    # Without PyInit_ the same imports are the unknown host's: judged unbound, as before (the
    # data import, Py_None, at load, which stops there as ld.so does).
    plain = _extension(tmp_path / "plain", init=False)
    report = run_check(CheckSettings(shims=(str(plain),), models=(str(blob),)))
    assert {(n, s) for r, n, s in _blocking(report) if r == "LOAD_FAILURE"} == {(plain.name, "_Py_NoneStruct")}
