"""Shapes of library a hostile review found the check wrong about, each asked of the real
loader too (references and shims RTLD_GLOBAL, the blob RTLD_LOCAL | RTLD_NOW): libraries
linked -z nodlopen, references the loader never looks up, definitions its lookup passes over,
filters, a program's copy relocations.

Some shapes come from a linker flag; the others are one patched byte of a linked library
(what a hostile or broken tool writes), patched at the .dynsym entry pyelftools finds.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

from elftools.elf.elffile import ELFFile

from aoti_shim.checks import CheckSettings, run_check
from c_library_support import ENTRY, EXPORT, using
from c_library_support import c_library as _lib
from c_library_support import defining as _define
from c_library_support import loads as _loads
from compile_support import compile_program

NAME = "myrt_aoti_torch_get_data_ptr"


def _use(*names: str) -> str:
    return using(*names) + ENTRY


def _bindings(globals_: list[Path], blob: Path, tmp: Path) -> set[tuple[str, str, str]]:
    """(importer, definer, symbol) file names of what ld.so bound, loaded as _loads does."""
    log = tmp / "ld"
    env = {"LD_DEBUG": "bindings", "LD_DEBUG_OUTPUT": str(log), "PATH": "/usr/bin:/bin"}
    code = (
        "import ctypes, os, sys\n"
        "for p in sys.argv[1:-1]: ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)\n"
        "ctypes.CDLL(sys.argv[-1], mode=os.RTLD_NOW | os.RTLD_LOCAL)\n"
    )
    subprocess.run([sys.executable, "-c", code, *map(str, globals_), str(blob)], env=env, check=True)
    out = set()
    for part in tmp.glob("ld.*"):
        for line in part.read_text().splitlines():
            if "binding file" in line and "aoti" in line:
                words = line.split()
                at = words.index("file")
                out.add((Path(words[at + 1]).name, Path(words[at + 4]).name, line.split("`")[1].rstrip("'")))
        part.unlink()
    return out


def _patched(
    lib: Path,
    out: Path,
    name: str,
    *,
    info: int | None = None,
    other: int | None = None,
    value: int | None = None,
    shndx: int | None = None,
) -> Path:
    """A copy of ``lib`` with one field of its .dynsym entry ``name`` replaced (ELF64 LE)."""
    data = bytearray(lib.read_bytes())
    with lib.open("rb") as f:
        dynsym = ELFFile(f).get_section_by_name(".dynsym")
        index = next(i for i, s in enumerate(dynsym.iter_symbols()) if s.name == name)
        at = dynsym["sh_offset"] + index * dynsym["sh_entsize"]
    if info is not None:
        data[at + 4] = info
    if other is not None:
        data[at + 5] = other
    if shndx is not None:
        struct.pack_into("<H", data, at + 6, shndx)
    if value is not None:
        struct.pack_into("<Q", data, at + 8, value)
    out.write_bytes(bytes(data))
    return out


def _blocking(report) -> set[tuple[str, str, str]]:
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
    for shim_, blob_, culprit in (
        (closed_shim, blob, closed_shim),
        (shim, closed_blob, closed_blob),
        (shim, needing, dep),
    ):
        loaded = _loads([torch, shim_], blob_)
        assert loaded.returncode != 0 and "cannot be dlopen()ed" in loaded.stderr, loaded.stderr
        report = run_check(CheckSettings(shims=(str(shim_),), models=(str(blob_),), against=(str(torch),)))
        assert report.blocking, (shim_, blob_)
        said = {(Path(f.artifact).name, f.message) for f in report.findings if f.rule == "LOAD_FAILURE"}
        refused = (
            culprit.name,
            "cannot be loaded next to the others: it is linked -z nodlopen (DF_1_NOOPEN): dlopen refuses it",
        )
        if culprit is dep:  # found by the blob's run path: said, and the blob that needs it
            assert said == {
                refused,
                (needing.name, f"cannot be loaded next to the others: needs {dep}, which dlopen refuses (-z nodlopen)"),
            }
        else:
            assert said == {refused}
    # Given as a checked library itself, the dependency is said once, as the blob is.
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(needing), str(dep)), against=(str(torch),)))
    assert {(r, a) for r, a, _ in _blocking(report)} == {
        ("LOAD_FAILURE", "libneeding.so"),
        ("LOAD_FAILURE", "libdep.so"),
    }


# -- references the loader never looks up -----------------------------------------------------


def test_a_reference_the_loader_never_looks_up_binds_to_nothing(tmp_path: Path) -> None:
    """An undefined .dynsym entry that is STB_LOCAL, or of hidden, internal or protected
    visibility: glibc binds it to its own library at address 0, no lookup, no error (the
    blob loads and the call jumps into its ELF header). The check said OK for the
    prefixed name, and for the unprefixed one made STB_LOCAL."""
    torch = _lib(tmp_path, "torch_cpu", _define("aoti_torch_get_data_ptr"))
    shim = _lib(tmp_path, "shim", _define(NAME))
    blob = _lib(tmp_path, "blob", _use(NAME))
    unprefixed = _lib(tmp_path, "ublob", _use("aoti_torch_get_data_ptr"))
    cases = [
        (blob, NAME, {"info": 0x02}, "a local symbol"),  # STB_LOCAL, STT_FUNC
        (blob, NAME, {"other": 2}, "a hidden symbol"),
        (blob, NAME, {"other": 1}, "a internal symbol"),
        (blob, NAME, {"other": 3}, "a protected symbol"),
        (unprefixed, "aoti_torch_get_data_ptr", {"info": 0x02}, "a local symbol"),
        (unprefixed, "aoti_torch_get_data_ptr", {"other": 2}, "a hidden symbol"),
    ]
    for n, (built, name, change, kind) in enumerate(cases):
        work = tmp_path / f"case{n}"
        work.mkdir()
        patched = _patched(built, work / built.name, name, **change)
        assert _loads([torch, shim], patched).returncode == 0
        # Bound to no library; a protected one is looked up, and then bound to itself.
        itself = {(built.name, built.name, name)} if change == {"other": 3} else set()
        assert _bindings([torch, shim], patched, work) == itself, change
        report = run_check(CheckSettings(shims=(str(shim),), models=(str(patched),), against=(str(torch),)))
        assert _blocking(report) == {("BINDS_OUTSIDE_SHIMS", built.name, name)}, change
        (finding,) = report.findings
        assert finding.message == (
            f"refers to '{name}' as {kind} without defining it: the loader never looks it up and binds it to "
            "address 0 of this library itself, never to the shims"
        )


# -- definitions the loader's lookup passes over -------------------------------------------------


def test_a_definition_the_lookup_passes_over_serves_no_import(tmp_path: Path) -> None:
    """glibc's do_lookup_x skips a definition of value 0 (outside SHN_ABS and TLS) and one
    of a type that is no code or data (STT_SECTION, an unknown type), and finds nothing the
    .gnu.hash bloom filter rules out: the blob then fails to load. The check said OK for
    each. An SHN_ABS definition is taken (the call goes to its absolute value)."""
    torch = _lib(tmp_path, "torch_cpu", _define("aoti_torch_get_data_ptr"))
    shim = _lib(tmp_path, "shim", _define(NAME, "myrt_aoti_torch_get_sizes"))
    blob = _lib(tmp_path, "blob", _use(NAME))
    with shim.open("rb") as f:
        gnu_hash = ELFFile(f).get_section_by_name(".gnu.hash")
        bloom_at, bloom_words = (
            gnu_hash["sh_offset"] + 16,
            struct.unpack_from("<I", shim.read_bytes(), gnu_hash["sh_offset"] + 8)[0],
        )
    no_bloom = tmp_path / "bloom"
    no_bloom.mkdir()
    data = bytearray(shim.read_bytes())
    data[bloom_at : bloom_at + 8 * bloom_words] = bytes(8 * bloom_words)
    (no_bloom / shim.name).write_bytes(bytes(data))
    shapes = {"value": {"value": 0}, "section": {"info": 0x13}, "type7": {"info": 0x17}}
    for key, change in shapes.items():
        (tmp_path / key).mkdir()
        _patched(shim, tmp_path / key / shim.name, NAME, **change)
    for key in (*shapes, "bloom"):
        patched = tmp_path / key / shim.name
        loaded = _loads([torch, patched], blob)
        assert loaded.returncode != 0 and f"undefined symbol: {NAME}" in loaded.stderr, (key, loaded.stderr)
        report = run_check(CheckSettings(shims=(str(patched),), models=(str(blob),), against=(str(torch),)))
        assert _blocking(report) == {("UNSATISFIED_IMPORT", "libblob.so", NAME)}, key
        (finding,) = [f for f in report.findings if f.rule == "UNSATISFIED_IMPORT"]
        assert "the loader's lookup passes over that definition" in finding.message
    (tmp_path / "abs").mkdir()
    absolute = _patched(shim, tmp_path / "abs" / shim.name, NAME, shndx=0xFFF1)
    assert _bindings([torch, absolute], blob, tmp_path / "abs") == {("libblob.so", "libshim.so", NAME)}
    assert not run_check(CheckSettings(shims=(str(absolute),), models=(str(blob),), against=(str(torch),))).blocking


# -- filters --------------------------------------------------------------------------------


def test_a_filter_shims_filtee_is_searched_before_it(tmp_path: Path) -> None:
    """A shim linked as a standard (-F) or auxiliary (-f) filter of another library (found
    by its run path): glibc loads the filtee with it and looks a name up there first, so
    the blob binds to the filtee's copy. The check said OK (it read no DT_FILTER)."""
    torch = _lib(tmp_path, "torch_cpu", _define("aoti_torch_get_data_ptr"))
    _lib(tmp_path, "other", _define(NAME))
    blob = _lib(tmp_path, "blob", _use(NAME))
    for flag in ("-F", "-f"):
        work = tmp_path / flag.strip("-")
        work.mkdir()
        shim = _lib(tmp_path, f"shim{flag[1]}", _define(NAME), (f"-Wl,{flag},libother.so", "-Wl,-rpath,$ORIGIN"))
        assert _bindings([torch, shim], blob, work) == {("libblob.so", "libother.so", NAME)}, flag
        report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),), against=(str(torch),)))
        # libother.so loads global with the shim and is judged as a shim is: a second definer.
        assert _blocking(report) == {
            ("BINDS_OUTSIDE_SHIMS", "libblob.so", NAME),
            ("DUPLICATE_DEFINER", "libother.so", NAME),
        }, flag
        (finding,) = [f for f in report.findings if f.rule == "BINDS_OUTSIDE_SHIMS"]
        assert finding.message == (
            f"imports '{NAME}', which binds to {tmp_path / 'libother.so'} (a dependency loaded with the shims) in the "
            "process, "
            f"not to {shim}, which also defines it"
        )
    # A filter of libtorch itself: libtorch lacks the prefixed name, so the shim's own serves.
    shim = _lib(tmp_path, "shimT", _define(NAME), ("-Wl,-F,libtorch_cpu.so", "-Wl,-rpath,$ORIGIN"))
    assert _bindings([torch, shim], blob, tmp_path / "F") == {("libblob.so", "libshimT.so", NAME)}
    assert not run_check(CheckSettings(shims=(str(shim),), models=(str(blob),), against=(str(torch),))).blocking


# -- copy relocations -----------------------------------------------------------------------

RUNNER = r"""
#include <dlfcn.h>
#include <string.h>
extern int STATE;
int main(int argc, char **argv) {
  int local = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--")) { local = 1; continue; }
    if (!dlopen(argv[i], local ? RTLD_LOCAL | RTLD_NOW : RTLD_GLOBAL | RTLD_LAZY)) return 2;
  }
  return STATE == 7 ? 0 : 3;
}
"""


def test_a_programs_copy_of_shim_data_is_the_one_instance(tmp_path: Path) -> None:
    """A non-PIE runner linked -rdynamic against the shim, reading the shim's data: ld
    gives it a copy (R_X86_64_COPY) that the loader fills from the shim and binds every
    reference to, the shim's own and the blob's. The check called the copy a second
    definer (DUPLICATE_DEFINER, 'each copy has its own state') and, with the runner as a
    --model, a model defining a shim. An unprefixed copy of libtorch's data still blocks."""
    state = "myrt_aoti_torch_state"
    torch = _lib(tmp_path, "torch_cpu", _define("aoti_torch_get_data_ptr") + "int aoti_torch_state = 7;\n")
    shim = _lib(tmp_path, "shim", f"int {state} = 7;\n{EXPORT} int {NAME}(void) {{ return {state}; }}\n")
    blob = _lib(tmp_path, "blob", f"extern int {state};\n{EXPORT} int use(void) {{ return {state}; }}\n" + ENTRY)
    runners = {}
    for name, lib, symbol in (("runner", shim, state), ("urunner", torch, "aoti_torch_state")):
        src = tmp_path / f"{name}.c"
        src.write_text(RUNNER.replace("STATE", symbol))
        runners[name] = tmp_path / name
        compile_program(
            src,
            runners[name],
            ("-no-pie", "-fno-pic", "-rdynamic", "-Wl,--no-as-needed", str(lib), "-Wl,-rpath,$ORIGIN"),
        )
    runner = runners["runner"]
    log = tmp_path / "ld"
    env = {"LD_DEBUG": "bindings", "LD_DEBUG_OUTPUT": str(log), "PATH": "/usr/bin:/bin"}
    subprocess.run([str(runner), str(torch), "--", str(blob)], env=env, check=True)
    bound = set()
    for part in tmp_path.glob("ld.*"):
        for line in part.read_text().splitlines():
            if f"`{state}'" in line:
                words = line.split()
                at = words.index("file")
                bound.add((Path(words[at + 1]).name, Path(words[at + 4]).name))
    assert bound == {("runner", "libshim.so"), ("libshim.so", "runner"), ("libblob.so", "runner")}
    for settings in (
        CheckSettings(shims=(str(shim),), models=(str(runner), str(blob)), against=(str(torch),)),
        CheckSettings(shims=(str(shim), str(runner)), models=(str(blob),), against=(str(torch),)),
    ):
        assert run_check(settings).findings == ()
    report = run_check(
        CheckSettings(shims=(str(shim),), models=(str(runners["urunner"]), str(blob)), against=(str(torch),))
    )
    assert _blocking(report) == {("MODEL_DEFINES_SHIM", "urunner", "aoti_torch_state")}
