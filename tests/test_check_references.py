"""What a torch reference holds: the libraries ``import torch`` loads, test libraries on request.

A miniature torch is built from C sources: lib/ with the two import roots, what they need,
a test library (on torch's list) and a stray library (on no list: only DT_NEEDED leaves it
out), and a torch/_C*.so beside lib/. Every one of them exports a name a shim collides with.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from aoti_shim.checks import CheckSettings, run_check
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.snapshot import record as snapshot_mod
from aoti_shim.checks.snapshot.torch_libraries import TORCH_TEST_LIBRARIES
from compile_support import compile_shared
from wheel_support import make_wheel

# file name -> (DT_NEEDED libraries by -l name, the name it exports)
MINI_TORCH = {
    "libc10.so": ((), "c10_thing"),
    "libtorch_cpu.so": (("c10",), "aoti_torch_loaded_op"),
    "libtorch.so": (("torch_cpu",), "torch_stub"),
    "libtorch_global_deps.so": ((), "global_deps_thing"),
    "libtorch_python.so": (("torch", "torch_cpu", "c10"), "python_thing"),
    "libaoti_custom_ops.so": (("torch_cpu",), "aoti_torch_cpu_fn_square"),
    "libstray_unlisted.so": (("torch_cpu",), "aoti_torch_stray_op"),
}
LOADED = {"libc10.so", "libtorch_cpu.so", "libtorch.so", "libtorch_global_deps.so", "libtorch_python.so"}


def _build(source_dir: Path, lib: Path, name: str, needed: tuple[str, ...], export: str) -> None:
    source = source_dir / f"{name}.c"
    source.write_text(f'__attribute__((visibility("default"))) int {export}(void) {{ return 1; }}\n')
    # --no-as-needed: the fixtures call nothing of what they need, yet must record it.
    flags = (f"-L{lib}", "-Wl,--no-as-needed", *(f"-l{n}" for n in needed))
    compile_shared(source, lib / name, flags)


@pytest.fixture(scope="module")
def mini_torch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("mini-torch")
    site = root / "site"
    lib = site / "torch" / "lib"
    lib.mkdir(parents=True)
    src = root / "src"
    src.mkdir()
    for name, (needed, export) in MINI_TORCH.items():  # in dependency order
        _build(src, lib, name, needed, export)
    (site / "torch" / "version.py").write_text("__version__ = '9.9.9+mini'\n")
    c_ext = site / "torch" / "_C.cpython-311-x86_64-linux-gnu.so"
    _build(src, c_ext.parent, c_ext.name, (), "aoti_torch_c_ext_op")
    shim = root / "libshim.so"
    exports = " ".join(f"int {e}(void) {{ return 0; }}" for _, e in MINI_TORCH.values())
    (src / "shim.c").write_text(exports + " int aoti_torch_c_ext_op(void) { return 0; }\n")
    compile_shared(src / "shim.c", shim)
    files = {path.relative_to(site).as_posix(): path for path in sorted((site / "torch").rglob("*")) if path.is_file()}
    wheel = make_wheel(root / "torch-9.9.9-cp311-cp311-linux_x86_64.whl", files, compression=zipfile.ZIP_DEFLATED)
    return {"site": site, "lib": lib, "shim": shim, "wheel": wheel}


def _collided_with(report) -> set[str]:
    return {Path(f.related.split("!")[-1]).name for f in report.findings if f.rule == "COLLISION"}


def _reference_names(report) -> set[str]:
    return {Path(r.split("!")[-1]).name for r in report.references}


def test_the_mini_torch_has_a_listed_and_an_unlisted_test_library(mini_torch):
    assert "libaoti_custom_ops.so" in TORCH_TEST_LIBRARIES and "libstray_unlisted.so" not in TORCH_TEST_LIBRARIES
    with ElfImage(mini_torch["lib"] / "libtorch_python.so") as image:
        assert {"libtorch.so", "libtorch_cpu.so", "libc10.so"} <= set(image.needed)


def test_torch_means_what_import_torch_loads(mini_torch, monkeypatch):
    monkeypatch.setenv("AOTI_SHIM_TORCH", str(mini_torch["site"]))
    report = run_check(CheckSettings(shims=(str(mini_torch["shim"]),), against=("torch",)))
    assert _reference_names(report) == LOADED
    assert _collided_with(report) == LOADED
    everything = run_check(CheckSettings(shims=(str(mini_torch["shim"]),), against=("torch+tests",)))
    assert _reference_names(everything) == set(MINI_TORCH)


@pytest.mark.parametrize("form", ["lib", "package"])
def test_a_torch_folder_means_the_same(mini_torch, form):
    folder = mini_torch["lib"] if form == "lib" else mini_torch["lib"].parent
    report = run_check(CheckSettings(shims=(str(mini_torch["shim"]),), against=(str(folder),)))
    # A package folder means its lib/: not torch/_C*.so.
    assert _reference_names(report) == LOADED
    with_tests = run_check(CheckSettings(shims=(str(mini_torch["shim"]),), against=(f"{folder}+tests",)))
    assert _reference_names(with_tests) == set(MINI_TORCH)


def test_a_torch_wheel_means_its_lib_members_only(mini_torch):
    with zipfile.ZipFile(mini_torch["wheel"]) as zf:
        assert any(n.startswith("torch/_C") for n in zf.namelist())
    report = run_check(CheckSettings(shims=(str(mini_torch["shim"]),), against=(str(mini_torch["wheel"]),)))
    assert _reference_names(report) == LOADED
    assert all(r.split("!")[-1].startswith("torch/lib/") for r in report.references)
    assert "aoti_torch_c_ext_op" not in {f.symbol for f in report.findings if f.rule == "COLLISION"}
    with_tests = run_check(CheckSettings(shims=(str(mini_torch["shim"]),), against=(f"{mini_torch['wheel']}+tests",)))
    assert _reference_names(with_tests) == set(MINI_TORCH)


def test_snapshots_hold_the_same_set(mini_torch, tmp_path):
    for source in (mini_torch["lib"], mini_torch["wheel"]):
        doc = snapshot_mod.capture(source)
        assert {lib.name for lib in doc["libraries"]} == LOADED
        assert {lib.name for lib in snapshot_mod.capture(source, with_tests=True)["libraries"]} == set(MINI_TORCH)
    for shipped in snapshot_mod.shipped():
        names = {lib.name for lib in snapshot_mod.read(shipped).libraries}
        assert not names & TORCH_TEST_LIBRARIES, shipped.name


def test_plus_tests_on_something_else_is_an_input_error(mini_torch, tmp_path):
    from aoti_shim.errors import InputError

    with pytest.raises(InputError, match=r"no torch lib/ folder or torch wheel"):
        run_check(CheckSettings(shims=(str(mini_torch["shim"]),), against=(f"{tmp_path}+tests",)))
    with pytest.raises(InputError, match=r"does not exist"):
        run_check(CheckSettings(shims=(str(mini_torch["shim"]),), against=(f"{tmp_path}/nothing+tests",)))
    assert not os.path.exists(f"{tmp_path}+tests")


def test_a_reference_that_is_only_the_checked_library_says_so(checker_libs, tmp_path: Path) -> None:
    from aoti_shim.errors import InputError

    shim = str(checker_libs["clean_shim"])
    folder = tmp_path / "refs"
    folder.mkdir()
    os.symlink(shim, folder / "same.so")  # the same file, by another name in a folder
    for against in (shim, str(folder)):
        # Before: "no readable library with a dynamic symbol table", of a readable library.
        with pytest.raises(InputError, match=r"every library in .* is also given as --shim or --model"):
            run_check(CheckSettings(shims=(shim,), against=(against,)))
