"""(shim, blob, reference) triples for the native check, drawn by a seed and built here.

Each :class:`Triple` is a shim library (prefixed exports, now and then an unprefixed one or a
weak definition a second shim library shares), a blob (AOTInductor's entry point and shim
imports, each drawn: flat or two-level, from the shims or from libtorch, defined or not) and a
reference "libtorch" exporting the unprefixed names, as Mach-O dylibs (zig's linker, the
blob linked ``-undefined dynamic_lookup`` as torch links Darwin blobs) or as PE DLLs (lld-link,
imports through import libraries written from ``.def`` files). :func:`expected` derives the
findings from what the generator drew, by the loader rules in their plainest form, never by
asking the checker.
"""

from __future__ import annotations

import random
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from macho_fixtures import CFLAGS, ZIG, ZIG_TARGETS
from pe_fixtures import TARGETS as PE_TARGETS

PREFIX = "myrt_"
SHIM_DYLIB, TORCH_DYLIB = "@rpath/libmyrt_shims.dylib", "@rpath/libtorch_cpu.dylib"
SHIM_DLL, TORCH_DLL, OTHER_DLL = "myrt_shims.dll", "torch_cpu.dll", "other_rt.dll"
LIBOMP = "/opt/homebrew/opt/libomp/lib/libomp.dylib"
# What the blob does with one shim name, drawn per name.
#   ok: prefixed, the shims define it; missing: prefixed, no shim defines it;
#   unprefixed: the unprefixed name (libtorch defines it); torch_prefixed (PE): a prefixed
#   name imported from torch_cpu.dll; other (PE): a prefixed name from a DLL no shim is.
MACHO_USES = ("ok", "ok", "missing", "unprefixed")
PE_USES = ("ok", "ok", "missing", "unprefixed", "torch_prefixed", "other")


@dataclass(frozen=True)
class Triple:
    fmt: str  # macho or pe
    arch: str
    shim_exports: tuple[str, ...]  # C names, prefixed or not
    weak_shared: str | None  # a prefixed name weakly defined by this shim and by a second one
    uses: tuple[tuple[str, str], ...]  # (C name, use)
    links_shim: bool  # Mach-O: the blob links the shim dylib (its imports are two-level)
    links_torch: bool  # Mach-O: the blob links libtorch (unprefixed imports two-level from it)
    omp: str | None  # Mach-O: "used" or "unused": the blob loads LIBOMP by its absolute path
    torch_exports: tuple[str, ...] = field(default=())


def draw(seed: int, fmt: str) -> Triple:
    rng = random.Random(seed)
    pool = [f"aoti_torch_t{seed}_{i}" for i in range(rng.randint(3, 6))]
    uses_of = MACHO_USES if fmt == "macho" else PE_USES
    uses = tuple((n, rng.choice(uses_of)) for n in pool)
    if not any(u == "ok" for _, u in uses):  # shims with a prefixed name: the prefix is theirs to infer
        uses = ((f"aoti_torch_t{seed}_shim", "ok"), *uses)
    used = {n for n, _ in uses}
    shim_exports = [PREFIX + n for n, _ in uses]
    # An unprefixed export of a name the blob does not import (a runtime's partial rename).
    stray = f"aoti_torch_t{seed}_stray"
    if rng.random() < 0.5:
        shim_exports.append(stray)
    missing = {PREFIX + n for n, u in uses if u == "missing"}
    shim_exports = [n for n in shim_exports if n not in missing]
    # Now and then libtorch defines a prefixed name too: loaded first, it takes a flat lookup.
    oks = [PREFIX + n for n, u in uses if u == "ok"]
    claimed = {oks[0]} if oks and rng.random() < 0.5 else set()
    return Triple(
        fmt=fmt, arch=rng.choice(("arm64", "x86_64")), shim_exports=tuple(shim_exports),
        weak_shared=f"{PREFIX}aoti_torch_t{seed}_weak" if fmt == "macho" and rng.random() < 0.5 else None,
        uses=uses, links_shim=fmt == "macho" and rng.random() < 0.5, links_torch=fmt == "macho" and rng.random() < 0.5,
        omp=rng.choice((None, "used", "unused")) if fmt == "macho" else None,
        torch_exports=tuple(sorted(used | {stray} | claimed)),
    )


def blob_imports(t: Triple) -> list[tuple[str, str]]:
    """(C name the blob imports, where from: shim, torch, other, flat)."""
    out = []
    for name, use in t.uses:
        prefixed = PREFIX + name
        if use in ("ok", "missing") and t.fmt == "macho":
            # The linker binds a name to the first linked dylib defining it (the shim's first).
            linked = t.links_shim and prefixed in t.shim_exports
            out.append((prefixed, "shim" if linked else "torch" if t.links_torch and prefixed in t.torch_exports
                        else "flat"))
        elif use in ("ok", "missing"):
            out.append((prefixed, "shim"))
        elif use == "unprefixed":
            out.append((name, "torch" if t.links_torch or t.fmt == "pe" else "flat"))
        elif use == "torch_prefixed":
            out.append((prefixed, "torch"))
        else:
            out.append((prefixed, "other"))
    return out


def expected(t: Triple) -> set[tuple[str, str, str]]:
    """(rule, image: shim, shim2, blob or torch, C name or path) the check must find."""
    found: set[tuple[str, str, str]] = set()
    for name in t.shim_exports:
        if not name.startswith(PREFIX):
            found.add(("UNPREFIXED_EXPORT", "shim", name))
        if name in t.torch_exports:
            found.add(("COLLISION", "shim", name))  # every unprefixed name, and a claimed prefixed one
    if t.weak_shared:
        found.add(("DUPLICATE_DEFINER", "shim2", t.weak_shared))
    for name, src in blob_imports(t):
        if src == "torch" or (src == "flat" and name.startswith(PREFIX) and name in t.torch_exports):
            found.add(("BINDS_OUTSIDE_SHIMS", "blob", name))  # named in libtorch, or libtorch's is first
        elif not name.startswith(PREFIX):
            found.add(("UNPREFIXED_IMPORT", "blob", name))  # flat: libtorch's, loaded first
        elif src == "other" or name not in t.shim_exports:
            found.add(("UNSATISFIED_IMPORT", "blob", name))  # no shim DLL's, or flat or from a DLL lacking it
    if t.omp:
        found.add(("ABSOLUTE_DEPENDENCY", "blob", LIBOMP))
    return found


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed:\n{done.stdout}{done.stderr}")


def _defines(names: tuple[str, ...] | list[str], weak: tuple[str, ...] = ()) -> list[str]:
    lines = [f"int {n}(int x) {{ return x + {i}; }}" for i, n in enumerate(names)]
    return lines + [f"__attribute__((weak)) int {n}(int x) {{ return x * 3; }}" for n in weak]


def blob_source(t: Triple) -> str:
    names = [n for n, _ in blob_imports(t)]
    lines = [f"extern int {n}(int);" for n in names]
    if t.omp == "used":
        lines.append("extern int omp_get_num_threads(void);")
        names.append("omp_get_num_threads")
    body = " + ".join(f"{n}(x)" if n != "omp_get_num_threads" else f"{n}()" for n in names) or "0"
    lines.append(f"int AOTInductorModelContainerCreate(int x) {{ return {body}; }}")
    return "\n".join(lines) + "\n"


def build(t: Triple, out: Path) -> dict[str, Path]:
    """The triple's files under ``out``: shim, blob, torch (the reference), shim2 when drawn."""
    out.mkdir(parents=True, exist_ok=True)
    return _build_macho(t, out) if t.fmt == "macho" else _build_pe(t, out)


def _dylib(t: Triple, out: Path, stem: str, lines: list[str], install: str, *link: str) -> Path:
    source, lib = out / f"{stem}.c", out / f"{stem}.dylib"
    source.write_text("\n".join(lines) + "\n")
    _run([*ZIG, "cc", "-target", ZIG_TARGETS[t.arch], "-shared", *CFLAGS, "-o", str(lib), str(source), *link,
          f"-Wl,-install_name,{install}"])
    return lib


def _build_macho(t: Triple, out: Path) -> dict[str, Path]:
    weak = (t.weak_shared,) if t.weak_shared else ()
    files = {
        "shim": _dylib(t, out, "libmyrt_shims", _defines(t.shim_exports, weak), SHIM_DYLIB),
        "torch": _dylib(t, out, "libtorch_cpu", _defines(t.torch_exports), TORCH_DYLIB),
    }
    if weak:
        files["shim2"] = _dylib(t, out, "libmyrt_more", _defines([], weak), "@rpath/libmyrt_more.dylib")
    link = [str(files["shim"])] if t.links_shim else []
    link += [str(files["torch"])] if t.links_torch else []
    if t.omp:
        link.append(str(_dylib(t, out, "libomp", ["int omp_get_num_threads(void) { return 1; }"], LIBOMP)))
    blob_c = out / "blob.c"
    blob_c.write_text(blob_source(t))
    files["blob"] = out / "blob.dylib"
    _run([*ZIG, "cc", "-target", ZIG_TARGETS[t.arch], "-shared", *CFLAGS, "-o", str(files["blob"]), str(blob_c),
          *link, "-Wl,-undefined,dynamic_lookup", "-Wl,-install_name,@rpath/blob.dylib"])
    return files


def _dll(t: Triple, out: Path, dll: str, names: list[str] | tuple[str, ...], imports: dict[str, list[str]]) -> Path:
    """A DLL exporting ``names`` (a C function each) and importing ``imports`` (DLL -> names)."""
    target, machine = PE_TARGETS[t.arch]
    stem = dll.removesuffix(".dll")
    libs = []
    for other, wanted in imports.items():
        definition = out / f"imp_{other.removesuffix('.dll')}.def"
        definition.write_text(f"LIBRARY {other}\nEXPORTS\n" + "".join(f"  {n}\n" for n in wanted))
        lib = definition.with_suffix(".lib")
        _run([*ZIG, "lld-link", "/lib", f"/def:{definition}", f"/machine:{machine}", f"/out:{lib}"])
        libs.append(str(lib))
    wanted_all = [n for ns in imports.values() for n in ns]
    lines = [f"extern __declspec(dllimport) int {n}(int);" for n in wanted_all]
    lines += [f"__declspec(dllexport) int {n}(int x) {{ return x + {i}; }}" for i, n in enumerate(names)]
    if wanted_all:  # the blob: AOTInductor's entry point, calling every import
        uses = " + ".join(f"{n}(x)" for n in wanted_all)
        lines.append(f"__declspec(dllexport) int AOTInductorModelContainerCreate(int x) {{ return {uses}; }}")
    source, obj, image = out / f"{stem}.c", out / f"{stem}.obj", out / dll
    source.write_text("\n".join(lines) + "\n")
    _run([*ZIG, "cc", "-target", target, "-c", *CFLAGS, "-o", str(obj), str(source)])
    _run([*ZIG, "lld-link", "/dll", "/noentry", f"/machine:{machine}", f"/out:{image}", str(obj), *libs])
    return image


def _build_pe(t: Triple, out: Path) -> dict[str, Path]:
    imports: dict[str, list[str]] = {}
    for name, src in blob_imports(t):
        imports.setdefault({"shim": SHIM_DLL, "torch": TORCH_DLL, "other": OTHER_DLL}[src], []).append(name)
    return {
        "shim": _dll(t, out, SHIM_DLL, t.shim_exports, {}),
        "torch": _dll(t, out, TORCH_DLL, t.torch_exports, {}),
        "blob": _dll(t, out, "blob.dll", (), imports),
    }
