"""checks/snapshot/native.py through ``aoti-shim snapshot``: a macOS or Windows torch, built
here in miniature (tests/torch_native_fixtures.py), recorded from its wheel and its folder.

The recorded names are held to llvm-nm-14 (Mach-O, leading underscore removed) and
llvm-readobj-14 (PE); which libraries are recorded, to the graph the fixture was built
with (torch/_C's dependencies for macOS, every lib/*.dll for Windows). A few seconds.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest

from aoti_shim.checks.elf.layout import STB_GLOBAL, STB_WEAK
from aoti_shim.checks.snapshot import native
from aoti_shim.checks.snapshot import record as snapshot
from aoti_shim.errors import InputError
from cli_support import CLI, one_line_error
from elf_fixtures import SYNTH_SYMBOLS, synth_elf
from macho_fixtures import write_fat
from torch_native_fixtures import CFLAGS, MACOS_LOADED, ZIG, run


def _snapshot(source: Path, out: Path, *flags: str) -> snapshot.Snapshot:
    done = subprocess.run([*CLI, "snapshot", str(source), "-o", str(out), *flags], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return snapshot.read(out)


def _nm_c_names(path: Path) -> dict[str, bool]:
    """llvm-nm-14's exported names, as C names (the underscore removed): name -> weak."""
    found = {}
    for line in run("llvm-nm-14", "-m", "--extern-only", "--defined-only", str(path)).splitlines():
        name = line.split()[-1]
        if name.startswith("_"):
            found[name[1:]] = "weak external" in line
    return found


def _readobj_names(path: Path) -> set[str]:
    rows = run("llvm-readobj-14", "--coff-exports", str(path)).splitlines()
    return {r.split("Name: ", 1)[1] for r in rows if r.strip().startswith("Name: ") and r.strip() != "Name:"}


def _bind(lib: snapshot.SnapshotLibrary, name: str) -> int:
    found = lib.find_export(name)
    assert found is not None, name
    return found.bind


def test_a_macos_wheel_is_recorded_as_c_names_of_what_import_torch_loads(
    native_torches: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    folder, wheel = native_torches["macos"]
    snap = _snapshot(wheel, tmp_path / "mac.json.gz")
    assert snap.format == "macho" and snap.torch_version == "9.9.0"
    libs = {lib.name: lib for lib in snap.libraries}
    assert set(libs) == MACOS_LOADED  # libtorchbind_test: reached from nothing torch loads
    for name, lib in libs.items():
        truth = _nm_c_names(folder / "lib" / name)
        assert lib.format == "macho" and lib.export_names() == set(truth), name
        assert all((_bind(lib, n) == STB_WEAK) == weak for n, weak in truth.items()), name
    assert _bind(libs["libc10.dylib"], "c10_w") == STB_WEAK
    assert _bind(libs["libtorch_cpu.dylib"], "aoti_torch_empty_strided") == STB_GLOBAL
    assert libs["libtorch_cpu.dylib"].find_export("_aoti_torch_empty_strided") is None
    assert libs["libtorch_cpu.dylib"].soname == "@rpath/libtorch_cpu.dylib"
    header, _ = _split_header((tmp_path / "mac.json.gz").read_bytes())
    assert header["object_format"] == "macho"
    # The folder, the wheel's own: the same record; --with-tests adds the test library.
    from_folder = _snapshot(folder, tmp_path / "dir.json.gz")
    assert [(x.name, x.export_names()) for x in from_folder.libraries] == \
        [(x.name, x.export_names()) for x in snap.libraries]
    with_tests = _snapshot(wheel, tmp_path / "all.json.gz", "--with-tests")
    assert {lib.name for lib in with_tests.libraries} == MACOS_LOADED | {"libtorchbind_test.dylib"}


def test_a_windows_wheel_records_every_dll_torch_loads_by_name(
    native_torches: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    folder, wheel = native_torches["windows"]
    snap = _snapshot(wheel, tmp_path / "win.json.gz")
    assert snap.format == "pe" and snap.torch_version == "9.9.0+cpu"
    libs = {lib.name: lib for lib in snap.libraries}
    # torch/__init__.py loads every lib/*.dll: extra.dll too, which no import names.
    assert set(libs) == {"c10.dll", "torch_cpu.dll", "torch_python.dll", "extra.dll"}
    for name, lib in libs.items():
        assert lib.format == "pe" and lib.export_names() == _readobj_names(folder / "lib" / name), name
        assert lib.soname == name
    assert "c10_hidden" not in libs["c10.dll"].export_names()  # by ordinal only: no name to bind
    assert libs["torch_cpu.dll"].find_export("aoti_torch_empty_strided") is not None


def test_the_import_graph_follows_the_extension_and_rpaths(native_torches: dict[str, tuple[Path, Path]]) -> None:
    folder, _ = native_torches["macos"]
    libs = {p.name: native.read_library(p, p.name, native.MACHO) for p in (folder / "lib").iterdir()}
    extension = native.read_library(folder / "_C.cpython-311-darwin.so", "_C", native.MACHO)
    loaded = native.import_set(native.MACHO, libs, extension)
    assert loaded is not None and loaded[0] == "libtorch_python.dylib" and set(loaded) == MACOS_LOADED
    assert "@loader_path/libshm.dylib" in libs["libtorch_python.dylib"].dependencies
    assert "@loader_path/lib/libtorch_python.dylib" in extension.dependencies and not extension.rpaths
    # An @rpath name with no LC_RPATH to resolve it is found nowhere: only what torch loads by path.
    bare = native.NativeLibrary(native.MACHO, None, {}, ("@rpath/libtorch_python.dylib",), ())
    assert native.import_set(native.MACHO, libs, bare) == ["libtorch_global_deps.dylib"]
    assert native.import_set(native.MACHO, libs, None) is None


def test_a_snapshot_names_one_object_format(native_torches: dict[str, tuple[Path, Path]], tmp_path: Path) -> None:
    folder, _ = native_torches["macos"]
    mixed = tmp_path / "torch-9.9.0-mixed.whl"
    with zipfile.ZipFile(mixed, "w") as zf:
        zf.writestr("torch/version.py", "__version__ = '9.9.0'\n")
        zf.write(folder / "lib" / "libc10.dylib", "torch/lib/libc10.dylib")
        zf.writestr("torch/lib/libtorch_cpu.so", synth_elf(SYNTH_SYMBOLS))
    done = subprocess.run([*CLI, "snapshot", str(mixed), "-o", str(tmp_path / "x.json.gz")], capture_output=True,
                          text=True, timeout=60)
    line = one_line_error(done, 1)
    assert "mix object formats (elf, macho)" in line
    with pytest.raises(InputError, match="is not one of elf, macho, pe"):
        snapshot._object_format("coff", "here")


def test_old_snapshots_are_elf_and_a_library_must_agree_with_its_snapshot(tmp_path: Path) -> None:
    for path in snapshot.shipped():
        snap = snapshot.read(path)
        assert snap.format == "elf" and {lib.format for lib in snap.libraries} == {"elf"}, path.name
    # A library that says macho inside an ELF snapshot (no object_format): refused, one line.
    data = snapshot.shipped()[0].read_bytes()
    header, rest = _split_header(data)
    header["libraries"][0]["format"] = "macho"
    edited = tmp_path / "edited.json.gz"
    edited.write_bytes(gzip.compress(json.dumps(header).encode(), mtime=0) + rest)
    with pytest.raises(InputError, match="library format differs from the snapshot's"):
        snapshot.read(edited)


def _split_header(data: bytes) -> tuple[dict[str, Any], bytes]:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    text = inflater.decompress(data)
    return json.loads(text), inflater.unused_data


@pytest.fixture(autouse=True, scope="module")
def _tools() -> None:
    for tool in ("llvm-nm-14", "llvm-readobj-14", "llvm-install-name-tool-14"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed (apt-get install llvm-14)")


def test_a_broken_dylib_or_dll_in_a_wheel_is_one_line(
    native_torches: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    for key, member in (("macos", "libc10.dylib"), ("windows", "c10.dll")):
        data = (native_torches[key][0] / "lib" / member).read_bytes()
        broken = tmp_path / f"torch-9.9.0-{key}.whl"
        with zipfile.ZipFile(broken, "w") as zf:
            zf.writestr("torch/version.py", "__version__ = '9.9.0'\n")
            zf.writestr(f"torch/lib/{member}", data[:200])  # the header, its tables cut off
        done = subprocess.run([*CLI, "snapshot", str(broken), "-o", str(tmp_path / "x.json.gz")],
                              capture_output=True, text=True, timeout=60)
        assert member in one_line_error(done, 1)
        assert not (tmp_path / "x.json.gz").exists()


def test_a_fat_dylib_is_one_library_when_its_slices_agree(tmp_path: Path) -> None:
    def thin(name: str, target: str, source: str) -> Path:
        (tmp_path / f"{name}.c").write_text(source)
        run(*ZIG, "cc", "-target", target, "-shared", *CFLAGS, "-o", str(tmp_path / name), str(tmp_path / f"{name}.c"))
        return tmp_path / name

    same = "int aoti_torch_x(int a) { return a; }\n"
    arm, intel = thin("arm.dylib", "aarch64-macos", same), thin("x86.dylib", "x86_64-macos", same)
    fat = native.read_library(write_fat([arm, intel], tmp_path / "fat.dylib", wide=False), "fat", native.MACHO)
    assert fat.exports.keys() == native.read_library(arm, "arm", native.MACHO).exports.keys() >= {"aoti_torch_x"}
    other = thin("x86b.dylib", "x86_64-macos", same + "int aoti_torch_y(int a) { return a; }\n")
    with pytest.raises(InputError, match="slices export different names"):
        native.read_library(write_fat([arm, other], tmp_path / "mixed.dylib", wide=True), "mixed", native.MACHO)


def test_the_magics_are_the_readers() -> None:
    """snapshot/native.py spells the Mach-O magics itself (no reader loaded for an ELF check)."""
    from aoti_shim.checks.macho import constants as mc
    from aoti_shim.checks.snapshot import native

    assert (native.MH_MAGIC, native.MH_MAGIC_64, native.FAT_MAGIC, native.FAT_MAGIC_64) == (
        mc.MH_MAGIC, mc.MH_MAGIC_64, mc.FAT_MAGIC, mc.FAT_MAGIC_64
    )
