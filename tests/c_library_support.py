"""Tiny C libraries for the binding tests: one built with its soname, and the sources that
define or call a list of names (the loader then judges what the check says)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from compile_support import compile_shared

EXPORT = '__attribute__((visibility("default")))'
ENTRY = f"{EXPORT} int AOTInductorModelContainerRun(void) {{ return 0; }}\n"


def c_library(
    folder: Path,
    name: str,
    text: str,
    flags: tuple[str, ...] = (),
    *,
    soname: str | None = None,
    language: str | None = None,
) -> Path:
    """``lib<name>.so`` (or ``soname``) in ``folder``, built from ``text`` with its file name as DT_SONAME."""
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / f"{name}.{'cpp' if language == 'c++' else 'c'}"
    src.write_text(text)
    out = folder / (soname or f"lib{name}.so")
    compile_shared(src, out, ("-Wl,-soname," + out.name, *flags))
    return out


def defining(*names: str) -> str:
    """C source exporting each name as ``int name(void)``."""
    return "".join(f"{EXPORT} int {n}(void) {{ return 1; }}\n" for n in names)


def using(*names: str) -> str:
    """C source importing each name and calling them all from ``use_all``."""
    decls = "".join(f"extern int {n}(void);\n" for n in names)
    return decls + f"{EXPORT} int use_all(void) {{ return {' + '.join(f'{n}()' for n in names)}; }}\n"


def loads(globals_: list[Path], blob: Path) -> subprocess.CompletedProcess[str]:
    """dlopen ``globals_`` RTLD_GLOBAL in order, then ``blob`` RTLD_NOW | RTLD_LOCAL, in a child."""
    code = (
        "import ctypes, os, sys\n"
        "for p in sys.argv[1:-1]: ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)\n"
        "ctypes.CDLL(sys.argv[-1], mode=os.RTLD_NOW | os.RTLD_LOCAL)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, globals_), str(blob)], capture_output=True, text=True, check=False
    )


def loader_platform() -> str:
    """AT_PLATFORM as the loader shows the auxiliary vector (``LD_SHOW_AUXV``): the
    ``$PLATFORM`` it expands (``haswell`` on AVX2 Intel with glibc < 2.37), never ``uname -m``."""
    shown = subprocess.run(
        ["/bin/true"], env=dict(os.environ, LD_SHOW_AUXV="1"), capture_output=True, text=True, check=True
    )
    found = re.search(r"^AT_PLATFORM:\s+(\S+)", shown.stdout, re.M)
    assert found is not None, f"the loader shows no AT_PLATFORM:\n{shown.stdout}"
    return found.group(1)


def loader_interpreter() -> str:
    """The running Python's dynamic linker (its PT_INTERP)."""
    from elftools.elf.elffile import ELFFile

    with open(os.path.realpath(sys.executable), "rb") as f:
        return str(next(seg for seg in ELFFile(f).iter_segments() if seg["p_type"] == "PT_INTERP").get_interp_name())


def loader_hwcaps_levels() -> list[str]:
    """The glibc-hwcaps levels this machine's loader searches, in its order (``ld.so --help``)."""
    helped = subprocess.run([loader_interpreter(), "--help"], capture_output=True, text=True, check=False).stdout
    section = helped.split("glibc-hwcaps directories", 1)[-1].split("\n\n", 1)[0]
    return re.findall(r"^  (\S+) \(supported, searched\)$", section, re.M)


def loader_lib() -> str:
    """What the loader expands ``$LIB`` to, from its own trace of a search (``LD_DEBUG=libs``)."""
    marker = "/nonexistent-aoti-shim-lib"
    env = dict(os.environ, LD_DEBUG="libs", LD_LIBRARY_PATH=marker + "/$LIB")
    traced = subprocess.run(
        [loader_interpreter(), "--list", os.path.realpath(sys.executable)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    # Every folder searched is $LIB's folder or a hwcaps subfolder of it: the shortest is it.
    folders = re.findall(re.escape(marker) + r"/([^:\s]+)", traced.stdout + traced.stderr)
    assert folders, traced.stderr
    return str(min(folders, key=len))
