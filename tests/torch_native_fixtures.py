"""A miniature macOS and Windows torch, built here from C by zig's cross linkers (the
``ziglang`` wheel: its clang, its Mach-O linker and lld-link): torch/lib's libraries, the
torch/_C extension, torch/version.py, and a wheel of them. The snapshot's tests and the
ground-truth tests (tests/native_record.py's functions) read them; a dozen compiles and
links, a few seconds in all.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ZIG = (sys.executable, "-m", "ziglang")
CFLAGS = ("-fno-sanitize=all", "-O1", "-nostdlib")


def run(*argv: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(argv)}:\n{done.stdout}{done.stderr}"
    return done.stdout


def dylib(out: Path, name: str, source: str, *links: str) -> Path:
    """A macOS arm64 dylib (or, named _C*.so, the extension), linked with ``links``."""
    c = out / f"{name}.c"
    c.write_text(source)
    image = out / name
    install = [f"-Wl,-install_name,@rpath/{name}"] if name.endswith(".dylib") else []
    run(*ZIG, "cc", "-target", "aarch64-macos", "-shared", *CFLAGS, "-o", str(image), str(c), *links, *install)
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


def macos_torch(out: Path) -> Path:
    """torch/lib/*.dylib and torch/_C*.so under ``out``; libshm is installed as @loader_path/."""
    lib = out / "torch" / "lib"
    lib.mkdir(parents=True)
    for name, (source, links) in MACOS.items():
        where = out / "torch" if name.startswith("_C") else lib
        resolved = [str(lib / link) if link.endswith(".dylib") else link for link in links]
        built = dylib(lib, name, source, *resolved)
        if name == "libshm.dylib":
            run("llvm-install-name-tool-14", "-id", "@loader_path/libshm.dylib", str(built))
        if name.startswith("_C"):
            # _C names libtorch_python by its path and has no rpath: libtorch_python's own
            # LC_RPATH must resolve the @rpath names it has.
            run("llvm-install-name-tool-14", "-change", "@rpath/libtorch_python.dylib",
                 "@loader_path/lib/libtorch_python.dylib", "-delete_rpath", "@loader_path/lib", str(built))
        if where != lib:
            built.rename(where / name)
    for leftover in lib.glob("*.c"):
        leftover.unlink()
    (out / "torch" / "version.py").write_text("__version__ = '9.9.0'\n")
    return out / "torch"


def dll(out: Path, name: str, exports: list[str], imports: dict[str, list[str]], noname: str | None = None,
        forwards: dict[str, str] | None = None, ordinals: dict[str, int] | None = None) -> Path:
    """A Windows x64 DLL exporting ``exports`` and importing each DLL's names; ``forwards``:
    exports forwarded (name -> "DLL.name" or "DLL.#ordinal", the .def file's forwarder);
    ``ordinals``: imported names taken by ordinal only (name -> its ordinal there)."""
    lines = [f"extern __declspec(dllimport) int {n}(int);" for names in imports.values() for n in names]
    uses = " + ".join(f"{n}(x)" for names in imports.values() for n in names) or "0"
    lines += [f"int {n}(int x) {{ return {uses} + {i}; }}" for i, n in enumerate(exports)]
    stem = name.split(".")[0]
    (out / f"{stem}.c").write_text("\n".join(lines) + "\n")
    hidden = [f"  {noname}={exports[0]} @77 NONAME"] if noname else []
    hidden += [f"  {n} = {target}" for n, target in (forwards or {}).items()]
    (out / f"{stem}.def").write_text("\n".join([f"LIBRARY {name}", "EXPORTS", *(f"  {n}" for n in exports), *hidden]))
    libs = []
    for dll, names in imports.items():
        d = out / f"imp_{dll}.def"
        by = ordinals or {}
        d.write_text("\n".join([f"LIBRARY {dll}", "EXPORTS",
                                *(f"  {n} @{by[n]} NONAME" if n in by else f"  {n}" for n in names)]) + "\n")
        run(*ZIG, "lld-link", "/lib", f"/def:{d}", "/machine:x64", f"/out:{d.with_suffix('.lib')}")
        libs.append(str(d.with_suffix(".lib")))
    obj = out / f"{stem}.obj"
    run(*ZIG, "cc", "-target", "x86_64-windows-gnu", "-c", *CFLAGS, "-o", str(obj), str(out / f"{stem}.c"))
    run(*ZIG, "lld-link", "/dll", "/noentry", "/machine:x64", f"/out:{out / name}", f"/def:{out / stem}.def",
         str(obj), *libs)
    for leftover in [*out.glob("*.c"), *out.glob("*.def"), *out.glob("*.obj"), *out.glob("*.lib")]:
        leftover.unlink()
    return out / name


def windows_torch(out: Path) -> Path:
    """torch/lib/*.dll and torch/_C*.pyd; torch_python imports TORCH_CPU.dll (the loader
    matches base names without regard to case); extra.dll is imported by nothing."""
    lib = out / "torch" / "lib"
    lib.mkdir(parents=True)
    dll(lib, "c10.dll", ["c10_f"], {}, noname="c10_hidden")
    dll(lib, "torch_cpu.dll", ["aoti_torch_empty_strided", "at_cpu"], {"c10.dll": ["c10_f"]})
    dll(lib, "torch_python.dll", ["THP_init"], {"TORCH_CPU.dll": ["at_cpu"]})
    dll(lib, "extra.dll", ["extra_f"], {})
    dll(out / "torch", "_C.cp311-win_amd64.pyd", ["PyInit__C"], {"torch_python.dll": ["THP_init"]})
    (out / "torch" / "version.py").write_text("__version__ = '9.9.0+cpu'\n")
    return out / "torch"


def wheel_of(package: Path, out: Path) -> Path:
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(package.rglob("*")):
            zf.write(path, path.relative_to(package.parent).as_posix())
        zf.writestr("torch/lib/libshm/alloc_info.h", "/* not a library */\n")
    return out


def build_torches(base: Path) -> dict[str, tuple[Path, Path]]:
    """{"macos": (its torch folder, its wheel), "windows": (...)} under ``base``."""
    mac, win = macos_torch(base / "mac"), windows_torch(base / "win")
    return {
        "macos": (mac, wheel_of(mac, base / "torch-9.9.0-cp311-cp311-macosx_14_0_arm64.whl")),
        "windows": (win, wheel_of(win, base / "torch-9.9.0+cpu-cp311-cp311-win_amd64.whl")),
    }
