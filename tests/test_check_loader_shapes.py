"""Shapes of library a hostile review found the check wrong about, each asked of the real
loader too (references and shims RTLD_GLOBAL, the blob RTLD_LOCAL | RTLD_NOW).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from compile_support import compile_shared

from aoti_shim.checks import CheckSettings, run_check

EXPORT = '__attribute__((visibility("default")))'
ENTRY = f"{EXPORT} int AOTInductorModelContainerRun(void) {{ return 0; }}\n"
NAME = "myrt_aoti_torch_get_data_ptr"


def _lib(tmp: Path, name: str, text: str, flags: tuple[str, ...] = ()) -> Path:
    src = tmp / f"{name}.c"
    src.write_text(text)
    out = tmp / f"lib{name}.so"
    compile_shared(src, out, ("-Wl,-soname," + out.name, *flags))
    return out


def _define(*names: str) -> str:
    return "".join(f"{EXPORT} int {n}(void) {{ return 1; }}\n" for n in names)


def _use(*names: str) -> str:
    decls = "".join(f"extern int {n}(void);\n" for n in names)
    return decls + f"{EXPORT} int use_all(void) {{ return {' + '.join(f'{n}()' for n in names)}; }}\n" + ENTRY


def _loads(globals_: list[Path], blob: Path) -> subprocess.CompletedProcess[str]:
    code = (
        "import ctypes, os, sys\n"
        "for p in sys.argv[1:-1]: ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)\n"
        "ctypes.CDLL(sys.argv[-1], mode=os.RTLD_NOW | os.RTLD_LOCAL)\n"
    )
    return subprocess.run([sys.executable, "-c", code, *map(str, globals_), str(blob)], capture_output=True, text=True, check=False)


def _blocking(report) -> set[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    return {(f.rule, Path(f.artifact).name, f.symbol) for f in report.findings if f.severity == "blocking"}


# -- DF_1_NOOPEN ------------------------------------------------------------------------------


def test_a_library_linked_nodlopen_cannot_be_dlopened(tmp_path: Path) -> None:
    """-z nodlopen (DF_1_NOOPEN) on the shim, the blob or the blob's dependency: dlopen
    refuses it ('shared object cannot be dlopen()ed'); the check said OK."""
    torch = _lib(tmp_path, "torch_cpu", _define("aoti_torch_get_data_ptr"))
    shim = _lib(tmp_path, "shim", _define(NAME))
    closed = tmp_path / "closed"
    closed.mkdir()
    closed_shim = _lib(closed, "shim", _define(NAME), ("-Wl,-z,nodlopen",))
    blob = _lib(tmp_path, "blob", _use(NAME))
    closed_blob = _lib(closed, "blob", _use(NAME), ("-Wl,-z,nodlopen",))
    dep = _lib(tmp_path, "dep", _define("dep_helper"), ("-Wl,-z,nodlopen",))
    needing = _lib(tmp_path, "needing", _use(NAME, "dep_helper"), (str(dep), "-Wl,-rpath,$ORIGIN"))
    for shim_, blob_, culprit in ((closed_shim, blob, closed_shim), (shim, closed_blob, closed_blob), (shim, needing, dep)):
        loaded = _loads([torch, shim_], blob_)
        assert loaded.returncode != 0 and "cannot be dlopen()ed" in loaded.stderr, loaded.stderr
        report = run_check(CheckSettings(shims=(str(shim_),), models=(str(blob_),), against=(str(torch),)))
        assert report.blocking, (shim_, blob_)
        said = {(Path(f.artifact).name, f.message) for f in report.findings if f.rule == "LOAD_FAILURE"}
        refused = (culprit.name, "cannot be loaded next to the others: it is linked -z nodlopen (DF_1_NOOPEN): dlopen refuses it")
        if culprit is dep:  # found by the blob's run path: said, and the blob that needs it
            assert said == {refused, (needing.name, f"cannot be loaded next to the others: needs {dep}, which dlopen refuses (-z nodlopen)")}
        else:
            assert said == {refused}
    # Given as a checked library itself, the dependency is said once, as the blob is.
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(needing), str(dep)), against=(str(torch),)))
    assert {(r, a) for r, a, _ in _blocking(report)} == {("LOAD_FAILURE", "libneeding.so"), ("LOAD_FAILURE", "libdep.so")}
