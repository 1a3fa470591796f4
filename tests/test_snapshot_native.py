"""checks/snapshot/native.py through ``aoti-shim snapshot``: a macOS or Windows torch, built
here in miniature from C by zig's cross linkers, recorded from its wheel and its folder.

The recorded names are held to llvm-nm-14 (Mach-O, leading underscore removed) and
llvm-readobj-14 (PE); which libraries are recorded, to the graph the fixture was built
with (torch/_C's dependencies for macOS, every lib/*.dll for Windows). About a dozen zig
compiles and links, a few seconds in all.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
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

ZIG = (sys.executable, "-m", "ziglang")
CFLAGS = ("-fno-sanitize=all", "-O1", "-nostdlib")


def _run(*argv: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(argv)}:\n{done.stdout}{done.stderr}"
    return done.stdout


def _dylib(out: Path, name: str, source: str, *links: str) -> Path:
    """A macOS arm64 dylib (or, named _C*.so, the extension), linked with ``links``."""
    c = out / f"{name}.c"
    c.write_text(source)
    image = out / name
    install = [f"-Wl,-install_name,@rpath/{name}"] if name.endswith(".dylib") else []
    _run(*ZIG, "cc", "-target", "aarch64-macos", "-shared", *CFLAGS, "-o", str(image), str(c), *links, *install)
    return image


# The miniature macOS torch: what each library defines and links. _C names libtorch_python
# and libtorch_python names libshm by @loader_path, the rest are @rpath names; nothing
# `import torch` loads reaches libtorchbind_test (a test library).
MACOS = {
    "libc10.dylib": ("int c10_f(int x) { return x + 1; }\n__attribute__((weak)) int c10_w(int x) { return x; }\n", []),
    "libtorch_cpu.dylib": (
        "extern int c10_f(int);\nint aoti_torch_empty_strided(int x) { return c10_f(x); }\n"
        "int aoti_torch_dtype_float32(void) { return 6; }\nint at_cpu(int x) { return x; }\n",
        ["libc10.dylib", "-Wl,-rpath,@loader_path"],
    ),
    "libshm.dylib": ("int shm_init(void) { return 0; }\n", []),
    "libtorch_python.dylib": (
        "extern int at_cpu(int);\nextern int shm_init(void);\nint THP_init(int x) { return at_cpu(x) + shm_init(); }\n",
        ["libtorch_cpu.dylib", "libshm.dylib", "-Wl,-rpath,@loader_path"],
    ),
    "libtorch_global_deps.dylib": ("int global_deps_marker;\n", []),
    "libtorchbind_test.dylib": (
        "extern int at_cpu(int);\nint tb(int x) { return at_cpu(x); }\n", ["libtorch_cpu.dylib"]
    ),
    "_C.cpython-311-darwin.so": (
        "extern int THP_init(int);\nint PyInit__C(void) { return THP_init(0); }\n",
        ["libtorch_python.dylib", "-Wl,-rpath,@loader_path/lib"],
    ),
}
MACOS_LOADED = {
    "libc10.dylib", "libtorch_cpu.dylib", "libshm.dylib", "libtorch_python.dylib", "libtorch_global_deps.dylib"
}


def _macos_torch(out: Path) -> Path:
    """torch/lib/*.dylib and torch/_C*.so under ``out``; libshm is installed as @loader_path/."""
    lib = out / "torch" / "lib"
    lib.mkdir(parents=True)
    for name, (source, links) in MACOS.items():
        where = out / "torch" if name.startswith("_C") else lib
        resolved = [str(lib / link) if link.endswith(".dylib") else link for link in links]
        built = _dylib(lib, name, source, *resolved)
        if name == "libshm.dylib":
            _run("llvm-install-name-tool-14", "-id", "@loader_path/libshm.dylib", str(built))
        if name.startswith("_C"):
            # _C names libtorch_python by its path and has no rpath: libtorch_python's own
            # LC_RPATH must resolve the @rpath names it has.
            _run("llvm-install-name-tool-14", "-change", "@rpath/libtorch_python.dylib",
                 "@loader_path/lib/libtorch_python.dylib", "-delete_rpath", "@loader_path/lib", str(built))
        if where != lib:
            built.rename(where / name)
    for leftover in lib.glob("*.c"):
        leftover.unlink()
    (out / "torch" / "version.py").write_text("__version__ = '9.9.0'\n")
    return out / "torch"


def _dll(out: Path, name: str, exports: list[str], imports: dict[str, list[str]], noname: str | None = None) -> Path:
    """A Windows x64 DLL exporting ``exports`` and importing each DLL's names."""
    lines = [f"extern __declspec(dllimport) int {n}(int);" for names in imports.values() for n in names]
    uses = " + ".join(f"{n}(x)" for names in imports.values() for n in names) or "0"
    lines += [f"int {n}(int x) {{ return {uses} + {i}; }}" for i, n in enumerate(exports)]
    stem = name.split(".")[0]
    (out / f"{stem}.c").write_text("\n".join(lines) + "\n")
    hidden = [f"  {noname}={exports[0]} @77 NONAME"] if noname else []
    (out / f"{stem}.def").write_text("\n".join([f"LIBRARY {name}", "EXPORTS", *(f"  {n}" for n in exports), *hidden]))
    libs = []
    for dll, names in imports.items():
        d = out / f"imp_{dll}.def"
        d.write_text("\n".join([f"LIBRARY {dll}", "EXPORTS", *(f"  {n}" for n in names)]) + "\n")
        _run(*ZIG, "lld-link", "/lib", f"/def:{d}", "/machine:x64", f"/out:{d.with_suffix('.lib')}")
        libs.append(str(d.with_suffix(".lib")))
    obj = out / f"{stem}.obj"
    _run(*ZIG, "cc", "-target", "x86_64-windows-gnu", "-c", *CFLAGS, "-o", str(obj), str(out / f"{stem}.c"))
    _run(*ZIG, "lld-link", "/dll", "/noentry", "/machine:x64", f"/out:{out / name}", f"/def:{out / stem}.def",
         str(obj), *libs)
    for leftover in [*out.glob("*.c"), *out.glob("*.def"), *out.glob("*.obj"), *out.glob("*.lib")]:
        leftover.unlink()
    return out / name


def _windows_torch(out: Path) -> Path:
    """torch/lib/*.dll and torch/_C*.pyd; torch_python imports TORCH_CPU.dll (the loader
    matches base names without regard to case); extra.dll is imported by nothing."""
    lib = out / "torch" / "lib"
    lib.mkdir(parents=True)
    _dll(lib, "c10.dll", ["c10_f"], {}, noname="c10_hidden")
    _dll(lib, "torch_cpu.dll", ["aoti_torch_empty_strided", "at_cpu"], {"c10.dll": ["c10_f"]})
    _dll(lib, "torch_python.dll", ["THP_init"], {"TORCH_CPU.dll": ["at_cpu"]})
    _dll(lib, "extra.dll", ["extra_f"], {})
    _dll(out / "torch", "_C.cp311-win_amd64.pyd", ["PyInit__C"], {"torch_python.dll": ["THP_init"]})
    (out / "torch" / "version.py").write_text("__version__ = '9.9.0+cpu'\n")
    return out / "torch"


def _wheel(package: Path, out: Path) -> Path:
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(package.rglob("*")):
            zf.write(path, path.relative_to(package.parent).as_posix())
        zf.writestr("torch/lib/libshm/alloc_info.h", "/* not a library */\n")
    return out


@pytest.fixture(scope="module")
def torches(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """{"macos": (torch folder, wheel), "windows": (...)}."""
    base = tmp_path_factory.mktemp("native-torch")
    mac, win = _macos_torch(base / "mac"), _windows_torch(base / "win")
    return {
        "macos": (mac, _wheel(mac, base / "torch-9.9.0-cp311-cp311-macosx_14_0_arm64.whl")),
        "windows": (win, _wheel(win, base / "torch-9.9.0+cpu-cp311-cp311-win_amd64.whl")),
    }


def _snapshot(source: Path, out: Path, *flags: str) -> snapshot.Snapshot:
    done = subprocess.run([*CLI, "snapshot", str(source), "-o", str(out), *flags], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return snapshot.read(out)


def _nm_c_names(path: Path) -> dict[str, bool]:
    """llvm-nm-14's exported names, as C names (the underscore removed): name -> weak."""
    found = {}
    for line in _run("llvm-nm-14", "-m", "--extern-only", "--defined-only", str(path)).splitlines():
        name = line.split()[-1]
        if name.startswith("_"):
            found[name[1:]] = "weak external" in line
    return found


def _readobj_names(path: Path) -> set[str]:
    rows = _run("llvm-readobj-14", "--coff-exports", str(path)).splitlines()
    return {r.split("Name: ", 1)[1] for r in rows if r.strip().startswith("Name: ") and r.strip() != "Name:"}


def test_a_macos_wheel_is_recorded_as_c_names_of_what_import_torch_loads(
    torches: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    folder, wheel = torches["macos"]
    snap = _snapshot(wheel, tmp_path / "mac.json.gz")
    assert snap.format == "macho" and snap.torch_version == "9.9.0"
    libs = {lib.name: lib for lib in snap.libraries}
    assert set(libs) == MACOS_LOADED  # libtorchbind_test: reached from nothing torch loads
    for name, lib in libs.items():
        truth = _nm_c_names(folder / "lib" / name)
        assert lib.format == "macho" and lib.export_names() == set(truth), name
        assert all((lib.find_export(n).bind == STB_WEAK) == weak for n, weak in truth.items()), name  # type: ignore[union-attr]
    assert libs["libc10.dylib"].find_export("c10_w").bind == STB_WEAK  # type: ignore[union-attr]
    assert libs["libtorch_cpu.dylib"].find_export("aoti_torch_empty_strided").bind == STB_GLOBAL  # type: ignore[union-attr]
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
    torches: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    folder, wheel = torches["windows"]
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


def test_the_import_graph_follows_the_extension_and_rpaths(torches: dict[str, tuple[Path, Path]]) -> None:
    folder, _ = torches["macos"]
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


def test_a_snapshot_names_one_object_format(torches: dict[str, tuple[Path, Path]], tmp_path: Path) -> None:
    folder, _ = torches["macos"]
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
