"""Mach-O fixtures for the reader's tests: random small C programs, built here by cross linkers.

A seeded generator (:func:`specs`) draws each fixture: its exports (some weak definitions),
functions and data of a dependency dylib it imports two-level, names left undefined for
``-undefined dynamic_lookup`` (flat lookups), weak imports of both kinds, rpaths, the
dependency's link kind, and the architecture. Two linkers write them:

- zig's own Mach-O linker (the ``ziglang`` wheel): dyld-info opcodes (LC_DYLD_INFO_ONLY)
  only; it has no ``-fixup_chains``, no ``-bundle`` (it crashes) and no re-exported library,
  but has ``-weak-l``.
- ld64.lld (LLVM's Mach-O linker, Debian's ``lld-16``), where installed: chained fixups
  (LC_DYLD_CHAINED_FIXUPS and LC_DYLD_EXPORTS_TRIE), bundles, weak and re-exported
  dylibs. Objects come from zig's clang either way.

Fat files: :func:`lipo` (llvm-lipo) and :func:`write_fat` (the header written here, with
32- or 64-bit fat_arch entries, which a reader must accept alike).
"""

from __future__ import annotations

import random
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ZIG = (sys.executable, "-m", "ziglang")
ZIG_TARGETS = {"arm64": "aarch64-macos", "x86_64": "x86_64-macos"}
# Chained fixups need a deployment target dyld 4 reads them on (macOS 12 and later).
LLD_PLATFORM = ("-platform_version", "macos", "13.0", "13.0")
# No sanitizer runtime (zig cc turns UBSan on by default) and no libc: nothing to build first.
CFLAGS = ("-fno-sanitize=all", "-O1", "-nostdlib")


def ld64_lld() -> str | None:
    return shutil.which("ld64.lld") or shutil.which("ld64.lld-16")


def llvm_lipo() -> str | None:
    return shutil.which("llvm-lipo") or shutil.which("llvm-lipo-14")


@dataclass(frozen=True)
class MachOSpec:
    """One fixture: a dylib or bundle importing from a dependency dylib and from nowhere."""

    name: str
    arch: str  # arm64 or x86_64
    linker: str  # zig (dyld info) or lld (chained fixups)
    filetype: str  # dylib or bundle
    install_name: str
    dep_install_name: str
    dep_link: str  # load, weak or reexport
    exports: tuple[str, ...]
    weak_exports: tuple[str, ...]
    dep_functions: tuple[str, ...]
    dep_data: tuple[str, ...]
    dep_weak_imports: tuple[str, ...]
    flat: tuple[str, ...]
    flat_weak: tuple[str, ...]
    rpaths: tuple[str, ...]

    @property
    def dep_defines(self) -> tuple[str, ...]:
        return self.dep_functions + self.dep_weak_imports


def _names(rng: random.Random, stem: str, low: int, high: int) -> tuple[str, ...]:
    return tuple(f"{stem}_{rng.randrange(1 << 20):05x}_{i}" for i in range(rng.randint(low, high)))


def specs(seed: int, count: int, *, with_lld: bool) -> list[MachOSpec]:
    """``count`` zig-linked fixtures (alternating arm64 and x86_64) and, with ld64.lld, as many
    more chained-fixups ones (every third a bundle)."""
    rng = random.Random(seed)
    drawn: list[MachOSpec] = []
    linkers = ["zig"] * count + (["lld"] * count if with_lld else [])
    for index, linker in enumerate(linkers):
        arch = ("arm64", "x86_64")[index % 2]
        filetype = "bundle" if linker == "lld" and index % 3 == 0 else "dylib"
        # Every link kind the linker offers comes up, in turn.
        dep_link = (("load", "weak", "reexport") if linker == "lld" else ("load", "weak"))[
            index % (3 if linker == "lld" else 2)
        ]
        tag = f"m{index}"
        drawn.append(
            MachOSpec(
                name=tag,
                arch=arch,
                linker=linker,
                filetype=filetype,
                install_name=rng.choice(("@rpath/", "@loader_path/", "/opt/aoti/lib/")) + f"lib{tag}.dylib",
                dep_install_name=rng.choice(("@rpath/", "@executable_path/../lib/", "/usr/local/lib/"))
                + f"libd{tag}.dylib",
                dep_link=dep_link,
                exports=_names(rng, f"aoti_torch_{tag}_exp", 1, 4),
                weak_exports=_names(rng, f"{tag}_weakdef", 0, 2),
                dep_functions=_names(rng, f"{tag}_depfn", 1, 3),
                dep_data=_names(rng, f"{tag}_depvar", 0, 2),
                dep_weak_imports=_names(rng, f"{tag}_depweak", 0, 2),
                flat=_names(rng, f"aoti_torch_{tag}_flat", 1, 4),
                flat_weak=_names(rng, f"{tag}_flatweak", 0, 2),
                rpaths=tuple(rng.sample(("@loader_path", "@loader_path/../lib", "/opt/torch/lib"), rng.randint(0, 2))),
            )
        )
    return drawn


def dep_source(spec: MachOSpec) -> str:
    lines = [f"int {name}(int x) {{ return x + {i}; }}" for i, name in enumerate(spec.dep_defines)]
    lines += [f"int {name} = {i};" for i, name in enumerate(spec.dep_data)]
    return "\n".join(lines) + "\n"


def main_source(spec: MachOSpec) -> str:
    """Every import is used from an exported function, so each needs a bind."""
    lines = [f"extern int {name}(int);" for name in spec.dep_functions]
    lines += [f"extern int {name};" for name in spec.dep_data]
    lines += [f"extern int {name}(int) __attribute__((weak_import));" for name in spec.dep_weak_imports]
    lines += [f"extern int {name}(int);" for name in spec.flat]
    lines += [f"extern int {name}(int) __attribute__((weak_import));" for name in spec.flat_weak]
    uses = [f"{n}(x)" for n in spec.dep_functions + spec.flat] + list(spec.dep_data)
    uses += [f"({n} ? {n}(x) : 0)" for n in spec.dep_weak_imports + spec.flat_weak]
    body = " + ".join(uses) or "0"
    for i, name in enumerate(spec.exports):
        lines.append(f"int {name}(int x) {{ return {body} + {i}; }}")
    for i, name in enumerate(spec.weak_exports):
        lines.append(f"__attribute__((weak)) int {name}(int x) {{ return x * {i + 2}; }}")
    return "\n".join(lines) + "\n"


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed:\n{done.stderr}")


def build(spec: MachOSpec, out: Path) -> Path:
    """The fixture of ``spec`` under ``out`` (its dependency dylib beside it)."""
    out.mkdir(parents=True, exist_ok=True)
    target = ZIG_TARGETS[spec.arch]
    dep_c, main_c = out / f"d{spec.name}.c", out / f"{spec.name}.c"
    dep_c.write_text(dep_source(spec))
    main_c.write_text(main_source(spec))
    dep = out / f"libd{spec.name}.dylib"
    _run([*ZIG, "cc", "-target", target, "-shared", *CFLAGS, "-o", str(dep), str(dep_c),
          f"-Wl,-install_name,{spec.dep_install_name}"])
    suffix = "bundle" if spec.filetype == "bundle" else "dylib"
    image = out / f"{spec.name}.{suffix}"
    rpaths = [a for r in spec.rpaths for a in (("-Wl,-rpath," + r,) if spec.linker == "zig" else ("-rpath", r))]
    if spec.linker == "zig":
        link = {"load": [str(dep)], "weak": [f"-L{out}", f"-weak-ld{spec.name}"]}[spec.dep_link]
        _run([*ZIG, "cc", "-target", target, "-shared", *CFLAGS, "-o", str(image), str(main_c), *link,
              "-Wl,-undefined,dynamic_lookup", f"-Wl,-install_name,{spec.install_name}", *rpaths])
        return image
    obj = out / f"{spec.name}.o"
    _run([*ZIG, "cc", "-target", target, "-c", *CFLAGS, "-o", str(obj), str(main_c)])
    lld = ld64_lld()
    assert lld is not None
    options = {"load": [str(dep)], "weak": ["-weak_library", str(dep)], "reexport": ["-reexport_library", str(dep)]}
    kind = ["-bundle"] if spec.filetype == "bundle" else ["-dylib", "-install_name", spec.install_name]
    _run([lld, *kind, "-arch", spec.arch, *LLD_PLATFORM, "-fixup_chains", "-o", str(image), str(obj),
          *options[spec.dep_link], "-undefined", "dynamic_lookup", *rpaths])
    return image


def lipo(parts: list[Path], out: Path) -> Path:
    tool = llvm_lipo()
    assert tool is not None
    _run([tool, "-create", *map(str, parts), "-output", str(out)])
    return out


def write_fat(parts: list[Path], out: Path, *, wide: bool) -> Path:
    """A fat file written here: the header (fat_arch or fat_arch_64) and 4 KiB-aligned slices."""
    entry = 32 if wide else 20
    header = bytearray(struct.pack(">II", 0xCAFEBABF if wide else 0xCAFEBABE, len(parts)))
    body = bytearray()
    offset = 4096
    for part in parts:
        data = part.read_bytes()
        cputype, cpusubtype = struct.unpack_from("<II", data, 4)
        if wide:
            header += struct.pack(">IIQQII", cputype, cpusubtype, offset, len(data), 12, 0)
        else:
            header += struct.pack(">IIIII", cputype, cpusubtype, offset, len(data), 12)
        body += bytes(offset - 4096 - len(body)) + data
        offset = 4096 + len(body) + (-len(body) % 4096)
    assert len(header) <= 4096 and entry
    out.write_bytes(bytes(header) + bytes(4096 - len(header)) + bytes(body))
    return out


# Values that catch off-by-one and overflow handling when written into a 32-bit field.
INTERESTING_32 = (0, 1, 2, 3, 4, 7, 8, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF)


def mutate(data: bytes, rng: random.Random, hot: list[tuple[int, int]]) -> bytes:
    """One mutant of a Mach-O file: random bytes, header and load-command bytes, a 32-bit
    field set to an edge value, bytes inside a table (``hot``: the trie, binds, fixups, fat
    header), or a truncation."""
    out = bytearray(data)
    strategy = rng.randrange(6)
    if strategy == 0:
        for _ in range(rng.randint(1, 8)):
            out[rng.randrange(len(out))] = rng.randrange(256)
    elif strategy == 1:
        commands_end = min(len(out), 32 + struct.unpack_from("<I", data, 20)[0]) if data[:2] != b"\xca\xfe" else 4096
        for _ in range(rng.randint(1, 3)):
            out[rng.randrange(commands_end)] = rng.randrange(256)
    elif strategy == 2:
        at = rng.randrange(0, min(len(out), 4096) - 4, 4)
        value = rng.choice(INTERESTING_32 + (len(data), len(data) - 1, rng.randrange(1 << 32)))
        out[at : at + 4] = struct.pack("<I", value)
    elif strategy in (3, 4) and hot:
        start, size = rng.choice(hot)
        for _ in range(rng.randint(1, 6)):
            out[start + rng.randrange(max(size, 1))] = rng.choice((0, 0x80, 0xFF, rng.randrange(256)))
    else:
        del out[rng.randrange(len(out)) :]
    return bytes(out)
