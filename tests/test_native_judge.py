"""The native rules on (shim, blob, reference) triples a seeded generator draws and builds.

Each triple (tests/native_fixtures.py) is real Mach-O dylibs or PE DLLs, compiled and linked
here; the findings the check must give are derived from what the generator drew, and how each
blob import is bound (flat or two-level, which DLL) is held to llvm-objdump's and
llvm-readobj's reading of the built blob first, so the verdict rests on neither our reader
nor our model. About 5 s for both formats.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from aoti_shim.checks import CheckSettings, run_check
from aoti_shim.checks.native import judge
from aoti_shim.checks.native.image import NativeImage, NativeImport
from aoti_shim.checks.native.process import NativeProcess
from native_fixtures import Triple, blob_imports, build, draw, expected

SEED = int(os.environ.get("AOTI_SHIM_NATIVE_SEED", "3700"))
COUNT = int(os.environ.get("AOTI_SHIM_NATIVE_COUNT", "6"))


@pytest.fixture(scope="module", params=["macho", "pe"])
def triples(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> list[tuple[Triple, dict[str, Path]]]:
    out = tmp_path_factory.mktemp(request.param)
    drawn = [draw(SEED + i, request.param) for i in range(COUNT)]
    return [(t, build(t, out / str(i))) for i, t in enumerate(drawn)]


def _objdump_binds(blob: Path) -> dict[str, str]:
    """C name -> "flat" or the short dylib name, from llvm-objdump's bind tables."""
    done = subprocess.run(["llvm-objdump", "--macho", "--bind", "--lazy-bind", str(blob)],
                          capture_output=True, text=True, check=True)
    binds = {}
    for line in done.stdout.splitlines():
        fields = line.split()
        if fields and fields[0].startswith("__") and fields[-1].startswith("_"):
            binds[fields[-1][1:]] = "flat" if fields[-2] == "flat-namespace" else fields[-2]
    return binds


def _readobj_imports(blob: Path) -> dict[str, str]:
    """C name -> the DLL it is imported from, from llvm-readobj."""
    done = subprocess.run(["llvm-readobj", "--coff-imports", str(blob)], capture_output=True, text=True, check=True)
    dll, out = "", {}
    for line in done.stdout.splitlines():
        if m := re.match(r"\s*Name: (\S+)", line):
            dll = m.group(1)
        elif m := re.match(r"\s*Symbol: (\S+)", line):
            out[m.group(1)] = dll
    return out


_SHORT = {"shim": ("libmyrt_shims", "myrt_shims.dll"), "torch": ("libtorch_cpu", "torch_cpu.dll"),
          "other": ("", "other_rt.dll"), "flat": ("flat", "")}


def test_each_blob_is_bound_as_the_generator_drew_it(triples: list[tuple[Triple, dict[str, Path]]]) -> None:
    for t, files in triples:
        seen = _objdump_binds(files["blob"]) if t.fmt == "macho" else _readobj_imports(files["blob"])
        want = {name: _SHORT[src][0 if t.fmt == "macho" else 1] for name, src in blob_imports(t)}
        assert {n: seen.get(n) for n in want} == want, t


def _got(t: Triple, files: dict[str, Path]) -> set[tuple[str, str, str]]:
    shims = [str(files["shim"]), *([str(files["shim2"])] if "shim2" in files else [])]
    report = run_check(CheckSettings(shims=tuple(shims), models=(str(files["blob"]),), against=(str(files["torch"]),)))
    role = {str(p): k for k, p in files.items()}
    return {(f.rule, role[f.artifact], f.symbol) for f in report.findings}


def test_the_check_finds_what_each_triple_was_built_to_hold(triples: list[tuple[Triple, dict[str, Path]]]) -> None:
    rules = set()
    for t, files in triples:
        want = expected(t)
        assert _got(t, files) == want, t
        rules |= {r for r, _, _ in want}
    # The draw is no vacuous one: the rules each format's model decides come up.
    decided = {"UNSATISFIED_IMPORT", "BINDS_OUTSIDE_SHIMS", "UNPREFIXED_EXPORT", "COLLISION"}
    if triples[0][0].fmt == "macho":
        decided |= {"UNPREFIXED_IMPORT", "ABSOLUTE_DEPENDENCY", "DUPLICATE_DEFINER"}
    assert decided <= rules


def _image(display: str, role: str, exports: set[str] = frozenset(), imports: tuple[NativeImport, ...] = (),
           deps: tuple[tuple[str, str], ...] = (), weak: set[str] = frozenset()) -> NativeImage:
    return NativeImage(display, "macho", role, "arm64", f"@rpath/{display}", frozenset(exports), frozenset(weak),
                       imports, deps)


def test_an_unused_absolute_load_is_said_and_a_system_one_is_not() -> None:
    blob = _image("blob.dylib", "model", deps=(("/opt/x/libomp.dylib", "load"), ("/usr/lib/libSystem.B.dylib", "load"),
                                               ("/System/Library/Frameworks/Metal.framework/Metal", "load")))
    (found,) = judge.absolute_dependency(NativeProcess("macho", [], [blob]))
    assert found[1] == "/opt/x/libomp.dylib" and "binds none of its symbols" in found[2]


def test_two_non_weak_definers_are_two_states_and_two_weak_ones_coalesce() -> None:
    name = "myrt_aoti_torch_x"
    for weak, said in ((set(), "each copy has its own state"), ({name}, "dyld coalesces weak definitions")):
        a, b = _image("liba.dylib", "shim", {name}, weak=weak), _image("libb.dylib", "shim", {name}, weak=weak)
        (found,) = judge.duplicate_definer(NativeProcess("macho", [a, b], []))
        assert found[0] == "libb.dylib" and said in found[2]
    # Another architecture's slice is another process: no duplicate.
    other = NativeImage("libb.dylib (x86_64)", "macho", "shim", "x86_64", "@rpath/libb.dylib", frozenset({name}),
                        frozenset(), (), ())
    assert not list(judge.duplicate_definer(NativeProcess("macho", [_image("liba.dylib", "shim", {name}), other], [])))


def test_a_foreign_prefix_is_one_prefix_mismatch_not_unsatisfied_imports() -> None:
    shim = _image("libs.dylib", "shim", {"myrt_aoti_torch_a"})
    imports = tuple(NativeImport(f"other_aoti_torch_{c}", "flat", None) for c in "ab")
    p = NativeProcess("macho", [shim], [_image("blob.dylib", "model", imports=imports)], prefix="myrt_",
                      shim_prefixes=frozenset({"myrt_"}))
    assert not list(judge.unsatisfied_import(p))
    (found,) = judge.prefix_mismatch(p)
    assert "imports 2 shim name(s) with prefix 'other_'" in found[2]


def test_a_stable_abi_extension_is_said_once_not_per_import() -> None:
    imports = (NativeImport("aoti_torch_a", "flat", None), NativeImport("aoti_torch_b", "two_level",
                                                                        "@rpath/libtorch_cpu.dylib"))
    extension = _image("_ext.so", "model", {"PyInit__ext"}, imports)
    blob = _image("blob.dylib", "model", {"AOTInductorModelContainerCreate"}, imports)
    p = NativeProcess("macho", [], [extension, blob])
    (said,) = judge.not_an_aoti_model(p)
    assert said[0] == "_ext.so" and "its 2 unprefixed aoti_torch_* import(s)" in said[2]
    assert [f[0] for f in judge.unprefixed_import(p)] == ["blob.dylib"]
    assert [f[0] for f in judge.binds_outside_shims(p)] == ["blob.dylib"]
    weak_blob = _image("w", "model", {"AOTInductorModelContainerCreate"}, (NativeImport("aoti_torch_w", "weak", None),))
    (weak,) = judge.unprefixed_import(NativeProcess("macho", [], [weak_blob]))
    assert "by weak lookup" in weak[2]
