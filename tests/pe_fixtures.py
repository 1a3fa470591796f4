"""PE fixtures for the reader's tests: random small DLLs, compiled and linked here.

A seeded generator (:func:`specs`) draws each DLL: its exports (by name, by ordinal only,
forwarded), the DLLs it imports from (import libraries written from generated ``.def``
files, so a dependency is a name, not a built DLL), which of those are delay-loaded, and
which names are imported by ordinal. zig's clang compiles; LLVM's lld-link (``zig
lld-link``) links, because ``zig cc`` refuses ``--delayload`` while lld-link takes
``/delayload:``. No C runtime: ``/noentry``, and the delay-load helper is a stub of ours
(the fixtures are read, never run).
"""

from __future__ import annotations

import random
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ZIG = (sys.executable, "-m", "ziglang")
TARGETS = {"x86_64": ("x86_64-windows-gnu", "x64"), "arm64": ("aarch64-windows-gnu", "arm64")}
CFLAGS = ("-fno-sanitize=all", "-O1", "-nostdlib")


@dataclass(frozen=True)
class DepSpec:
    """A DLL imported from: its name, delay-loaded or not, named and by-ordinal imports."""

    dll: str
    delay: bool
    names: tuple[str, ...]
    ordinals: tuple[int, ...]


@dataclass(frozen=True)
class PESpec:
    name: str
    arch: str
    dll: str
    exports: tuple[str, ...]
    noname_ordinal: int | None  # an export by ordinal only
    forwarder: tuple[str, str] | None  # (export name, "DLL.name" it forwards to)
    deps: tuple[DepSpec, ...]


def specs(seed: int, count: int) -> list[PESpec]:
    rng = random.Random(seed)
    drawn = []
    for index in range(count):
        tag = f"w{index}"
        deps = []
        for d in range(rng.randint(1, 3)):
            # The first dependency alternates between normal and delay-loaded, so both come up.
            delay = index % 2 == 1 if d == 0 else rng.random() < 0.5
            names = tuple(f"aoti_torch_{tag}_{d}_{rng.randrange(1 << 16):04x}_{i}" for i in range(rng.randint(1, 3)))
            ordinals = tuple(sorted(rng.sample(range(100, 200), rng.randint(0, 2))))
            dll = rng.choice(("aoti_cuda_shims", "torch_cpu", "c10", "shimdep")) + f"_{tag}{d}.dll"
            deps.append(DepSpec(dll, delay, names, ordinals))
        drawn.append(PESpec(
            name=tag, arch=("x86_64", "arm64")[index % 2], dll=f"model_{tag}.dll",
            exports=tuple(f"{tag}_export_{i}" for i in range(rng.randint(1, 4))),
            noname_ordinal=rng.choice((None, 300 + index)),
            forwarder=rng.choice((None, (f"{tag}_forwarded", f"otherdll.{tag}_target"))),
            deps=tuple(deps),
        ))
    return drawn


def main_source(spec: PESpec) -> str:
    lines = []
    uses = []
    for dep in spec.deps:
        for name in dep.names:
            lines.append(f"extern __declspec(dllimport) int {name}(int);")
            uses.append(f"{name}(x)")
        for ordinal in dep.ordinals:
            alias = _ordinal_alias(dep, ordinal)
            lines.append(f"extern __declspec(dllimport) int {alias}(int);")
            uses.append(f"{alias}(x)")
    body = " + ".join(uses) or "0"
    lines += [f"int {name}(int x) {{ return {body} + {i}; }}" for i, name in enumerate(spec.exports)]
    if any(dep.delay for dep in spec.deps):
        # The delay-load helper lld-link's thunks call; never run here, so a stub.
        lines.append("void *__delayLoadHelper2(const void *descriptor, void **slot) { return 0; }")
    return "\n".join(lines) + "\n"


def _ordinal_alias(dep: DepSpec, ordinal: int) -> str:
    return f"{dep.dll.removesuffix('.dll')}_ord{ordinal}"


def main_def(spec: PESpec) -> str:
    lines = [f"LIBRARY {spec.dll}", "EXPORTS"] + [f"  {name}" for name in spec.exports]
    if spec.noname_ordinal is not None:
        lines.append(f"  {spec.name}_hidden={spec.exports[0]} @{spec.noname_ordinal} NONAME")
    if spec.forwarder:
        lines.append(f"  {spec.forwarder[0]} = {spec.forwarder[1]}")
    return "\n".join(lines) + "\n"


def dep_def(dep: DepSpec) -> str:
    lines = [f"LIBRARY {dep.dll}", "EXPORTS"] + [f"  {name}" for name in dep.names]
    lines += [f"  {_ordinal_alias(dep, ordinal)} @{ordinal} NONAME" for ordinal in dep.ordinals]
    return "\n".join(lines) + "\n"


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed:\n{done.stdout}{done.stderr}")


def build(spec: PESpec, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    target, machine = TARGETS[spec.arch]
    libs = []
    for dep in spec.deps:
        definition = out / dep.dll.replace(".dll", ".def")
        definition.write_text(dep_def(dep))
        lib = definition.with_suffix(".lib")
        _run([*ZIG, "lld-link", "/lib", f"/def:{definition}", f"/machine:{machine}", f"/out:{lib}"])
        libs.append(str(lib))
    source, definition, obj = out / f"{spec.name}.c", out / f"{spec.name}.def", out / f"{spec.name}.obj"
    source.write_text(main_source(spec))
    definition.write_text(main_def(spec))
    _run([*ZIG, "cc", "-target", target, "-c", *CFLAGS, "-o", str(obj), str(source)])
    image = out / spec.dll
    delayed = [f"/delayload:{dep.dll}" for dep in spec.deps if dep.delay]
    _run([*ZIG, "lld-link", "/dll", "/noentry", f"/machine:{machine}", f"/out:{image}", f"/def:{definition}",
          str(obj), *libs, *delayed])
    return image


INTERESTING_32 = (0, 1, 2, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF)


def mutate(data: bytes, rng: random.Random, hot: list[tuple[int, int]]) -> bytes:
    """One mutant of a DLL: random bytes, header bytes, a 32-bit field set to an edge value,
    bytes inside a directory (``hot``), or a truncation."""
    out = bytearray(data)
    strategy = rng.randrange(6)
    if strategy == 0:
        for _ in range(rng.randint(1, 8)):
            out[rng.randrange(len(out))] = rng.randrange(256)
    elif strategy == 1:
        for _ in range(rng.randint(1, 3)):
            out[rng.randrange(min(len(out), 1024))] = rng.randrange(256)
    elif strategy in (2, 3) and hot:
        start, size = rng.choice(hot)
        at = start + rng.randrange(max(size - 4, 1))
        out[at : at + 4] = struct.pack("<I", rng.choice(INTERESTING_32 + (len(data), rng.randrange(1 << 32))))
    elif strategy == 4 and hot:
        start, size = rng.choice(hot)
        for _ in range(rng.randint(1, 6)):
            out[start + rng.randrange(max(size, 1))] = rng.randrange(256)
    else:
        del out[rng.randrange(len(out)) :]
    return bytes(out)
