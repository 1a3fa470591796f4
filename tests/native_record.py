"""Ground truth from torch's macOS and Windows wheels: our Mach-O and PE readers against
independent readers, and the facts the checker needs recorded to a small JSON fixture.

A maintainer tool, not run by CI (tests download nothing). Run from the repository, with
the wheel downloaded once (``pip download torch==2.13.0 --no-deps --only-binary=:all:
--platform macosx_14_0_arm64 --python-version 3.11 -d /tmp/wheels``; ``--platform
win_amd64`` for Windows):

    python tests/native_record.py WHEEL OUT.json

It reads torch/lib's libraries and the torch/_C extension with ``aoti_shim.checks.macho`` /
``aoti_shim.checks.pe`` and with LLVM 14 (``llvm-objdump-14``, ``llvm-nm-14``,
``llvm-readobj-14``) and LIEF, and writes nothing when they disagree: each disagreement is
printed and the exit status is 1. LLVM 14 reads no LC_DYLD_EXPORTS_TRIE and no chained
fixups (it prints an empty trie and no binds): for such files LIEF is the judge of the trie
and the binds, llvm-nm-14 (the symbol table) of the exported names.
"""

from __future__ import annotations

import collections
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import lief

from aoti_shim.checks.abi.prefix import is_unprefixed
from aoti_shim.checks.macho import read as read_macho
from aoti_shim.checks.macho.facts import TWO_LEVEL, MachOFacts
from aoti_shim.checks.pe import read as read_pe
from aoti_shim.checks.pe.facts import PEFacts
from aoti_shim.checks.snapshot.record import capture

# The columns llvm-objdump prints for a bind's special library ordinal, by our lookup kind.
_SPECIAL = {"flat": "flat-namespace", "weak": "weak", "self": "this-image", "main_executable": "main-executable"}
_LIEF_SPECIAL = {0: "this-image", -1: "main-executable", -2: "flat-namespace", -3: "weak"}
TOOLS = ("llvm-objdump-14", "llvm-nm-14", "llvm-readobj-14", f"LIEF {lief.__version__}")


def _run(*argv: str) -> list[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.splitlines()


def short_name(install_name: str) -> str:
    """llvm-objdump's dylib column: the file name without folder, .dylib or a .B or .1 version."""
    base = install_name.rsplit("/", 1)[-1].removesuffix(".dylib")
    return re.sub(r"\.([A-Z]|[0-9]+)$", "", base)


def is_native(name: str) -> bool:
    lib = name.startswith("torch/lib/") and name.count("/") == 2 and name.endswith((".dylib", ".dll"))
    return lib or bool(re.fullmatch(r"torch/_C\.[^/]*\.(so|pyd)", name))


def extract(wheel: Path, into: Path) -> tuple[str, dict[str, Path]]:
    """The torch version and the wheel's torch/lib libraries and torch/_C extension, unpacked."""
    found: dict[str, Path] = {}
    with zipfile.ZipFile(wheel) as zf:
        version = re.search(r"__version__ = '([^']+)'", zf.read("torch/version.py").decode())
        for name in filter(is_native, zf.namelist()):
            out = into / name.rsplit("/", 1)[-1]
            out.write_bytes(zf.read(name))
            found[name] = out
    assert version, "no __version__ in torch/version.py"
    return version.group(1), found


# -- Mach-O -----------------------------------------------------------------------------


def macho_exports_judged(path: Path, facts: MachOFacts) -> tuple[dict[str, int], list[str]]:
    """Each reader's count of exported names, and every disagreement with ours."""
    ours = {(e.name, e.weak_definition) for e in facts.exports}
    names = {n for n, _ in ours}
    binary: Any = lief.MachO.parse(str(path)).at(0)
    by_lief = {(s.name, bool(s.export_info.flags & 0x4)) for s in binary.exported_symbols}
    nm = {line.split()[-1] for line in _run("llvm-nm-14", "--extern-only", "--defined-only", str(path))}
    counts = {"ours": len(ours), "LIEF": len(by_lief), "llvm-nm-14": len(nm)}
    problems = [f"exports and weak flags differ from LIEF's: {sorted(ours ^ by_lief)[:5]}"] if ours != by_lief else []
    if nm != names:
        problems.append(f"exported names differ from llvm-nm-14's: {sorted(nm ^ names)[:5]}")
    if facts.fixups == "dyld_info":  # LLVM 14 reads the trie of LC_DYLD_INFO only
        rows = _run("llvm-objdump-14", "--macho", "--exports-trie", str(path))
        trie = {(r.split()[1], "[weak_def]" in r) for r in rows[rows.index("Exports trie:") + 1 :] if r.strip()}
        counts["llvm-objdump-14"] = len(trie)
        if trie != ours:
            problems.append(f"the export trie differs from llvm-objdump-14's: {sorted(trie ^ ours)[:5]}")
    return counts, problems


def _column(binding: str, library: str | None) -> str:
    return short_name(library) if binding == TWO_LEVEL and library else _SPECIAL[binding]


def objdump_binds(path: Path) -> set[tuple[str, str]]:
    """{(symbol, dylib column)} of the bind, lazy-bind and weak-bind tables (dyld info only)."""
    binds: set[tuple[str, str]] = set()
    for flag, dylib_col, name_col in (("--bind", 5, 6), ("--lazy-bind", 3, 4), ("--weak-bind", None, 5)):
        rows = _run("llvm-objdump-14", "--macho", flag, str(path))
        header = next(i for i, line in enumerate(rows) if line.startswith("segment"))
        for line in rows[header + 1 :]:
            words = line.split()
            if words and "strong" not in words:
                binds.add((words[name_col], "weak" if dylib_col is None else words[dylib_col]))
    return binds


def _lief_column(bind: Any) -> str:
    # LIEF gives a weak-bind table entry ordinal 0 (the opcodes carry none) and class WEAK.
    if isinstance(bind, lief.MachO.DyldBindingInfo) and bind.binding_class == lief.MachO.DyldBindingInfo.CLASS.WEAK:
        return "weak"
    return short_name(bind.library.name) if bind.library_ordinal > 0 else _LIEF_SPECIAL[bind.library_ordinal]


def macho_imports_judged(path: Path, facts: MachOFacts) -> list[str]:
    ours = {(i.name, _column(i.binding, i.library)) for i in facts.imports}
    binary: Any = lief.MachO.parse(str(path)).at(0)
    by_lief = {(b.symbol.name, _lief_column(b)) for b in binary.bindings}
    problems = [f"binds differ from LIEF's: {sorted(ours ^ by_lief)[:5]}"] if ours != by_lief else []
    if facts.fixups == "dyld_info" and (objdump := objdump_binds(path)) != ours:
        problems.append(f"binds differ from llvm-objdump-14's: {sorted(objdump ^ ours)[:5]}")
    used = [line.split(" (compatibility")[0].strip()
            for line in _run("llvm-objdump-14", "--macho", "--dylibs-used", str(path))[1:]]
    if facts.install_name is not None and used[:1] == [facts.install_name]:
        used = used[1:]  # a dylib's list starts with its own LC_ID_DYLIB
    if used != [d.name for d in facts.dependencies]:
        problems.append(f"dependencies differ from llvm-objdump-14 --dylibs-used: {used}")
    rpaths = [c.path for c in binary.commands if isinstance(c, lief.MachO.RPathCommand)]
    if rpaths != list(facts.rpaths):
        problems.append(f"rpaths differ from LIEF's: {rpaths}")
    return problems


def macho_facts(path: Path) -> tuple[dict[str, Any], list[str]]:
    slices = read_macho(path)
    assert len(slices) == 1, f"{path.name}: {len(slices)} slices (torch's wheels are thin)"
    facts = slices[0]
    counts, problems = macho_exports_judged(path, facts)
    problems += macho_imports_judged(path, facts)
    c_names = [e.name[1:] for e in facts.exports if e.name.startswith("_")]
    kinds = collections.Counter(i.binding for i in facts.imports)
    return {
        "install_name": facts.install_name, "filetype": facts.filetype, "architecture": facts.architecture,
        "fixups": facts.fixups, "exports": counts,
        "exports_without_underscore": len(facts.exports) - len(c_names),
        "weak_definitions": sum(e.weak_definition for e in facts.exports),
        "shim_exports": sorted(n for n in c_names if is_unprefixed(n)),
        "dependencies": [[d.name, d.kind] for d in facts.dependencies], "rpaths": list(facts.rpaths),
        "import_kinds": dict(sorted(kinds.items())),
        # torch links Darwin libraries with -undefined dynamic_lookup: which names that leaves flat.
        "flat_imports_outside_python_api": sorted(
            i.name for i in facts.imports if i.binding == "flat" and not i.name.startswith(("_Py", "__Py"))
        ),
    }, problems


# -- PE ---------------------------------------------------------------------------------


def readobj(path: Path) -> tuple[set[str], set[tuple[str, str, bool]]]:
    """llvm-readobj-14's named exports and {(dll, symbol, delay)} imports."""
    exports: set[str] = set()
    imports: set[tuple[str, str, bool]] = set()
    block, dll = "", ""
    for line in _run("llvm-readobj-14", "--coff-exports", "--coff-imports", str(path)):
        words = line.strip().split(" ", 1)
        if line.endswith("{"):
            block = words[0]
        elif words[0] == "Name:" and block == "Export":
            if len(words) > 1:  # an unused ordinal (address 0) prints an empty name
                exports.add(words[1])
        elif words[0] == "Name:":
            dll = words[1]
        elif words[0] == "Symbol:":
            name = words[1].rsplit(" (", 1)[0] if not words[1].startswith(" (") else ""
            imports.add((dll, name or "#" + words[1].strip(" ()"), block == "DelayImport"))
    return exports, imports


def pe_facts(path: Path) -> tuple[dict[str, Any], list[str]]:
    facts: PEFacts = read_pe(path)
    named = {e.name for e in facts.exports if e.name}
    ours_imports = {(i.dll, i.name, i.delay) for i in facts.imports}
    exports, imports = readobj(path)
    binary: Any = lief.PE.parse(str(path))
    by_lief = {e.name for e in binary.get_export().entries if e.name} if binary.has_exports else set()
    problems = []
    if named != exports or named != by_lief:
        problems.append(f"exports differ: readobj {sorted(named ^ exports)[:5]}, LIEF {sorted(named ^ by_lief)[:5]}")
    if ours_imports != imports:
        problems.append(f"imports differ from llvm-readobj-14's: {sorted(ours_imports ^ imports)[:5]}")
    return {
        "dll_name": facts.dll_name, "architecture": facts.architecture, "is_dll": facts.is_dll,
        "exports": {"ours": len(named), "LIEF": len(by_lief), "llvm-readobj-14": len(exports)},
        "exports_by_ordinal_only": sum(e.name is None for e in facts.exports),
        "forwarders": sum(e.forwarder is not None for e in facts.exports),
        "shim_exports": sorted(n for n in named if is_unprefixed(n)),
        "dependencies": [[d.name, d.kind] for d in facts.dependencies],
        "imports": len(ours_imports),
    }, problems


# -- the record ---------------------------------------------------------------------------


def extension_imports(path: Path, fmt: str) -> list[list[Any]]:
    """Every import of torch/_C: (name, how it is looked up, from which library)."""
    if fmt == "macho":
        return sorted([i.name, i.binding, i.library] for i in read_macho(path)[0].imports)
    return sorted([i.name, "delay" if i.delay else "normal", i.dll] for i in read_pe(path).imports)


def download_command(wheel_name: str) -> str:
    """The pip command that fetches this wheel (its name says version, Python and platform)."""
    _, version, python, _, platform = wheel_name.removesuffix(".whl").split("-")
    return (f"pip download torch=={version} --no-deps --only-binary=:all: --platform {platform} "
            f"--python-version {python[2]}.{python[3:]} -d DIR")


def snapshot_facts(wheel: Path) -> dict[str, Any]:
    """What ``aoti-shim snapshot WHEEL`` records: the import set, each library's count of names."""
    doc = capture(wheel)
    return {
        "made_by": f"aoti-shim snapshot {wheel.name} -o OUT", "object_format": doc.get("object_format", "elf"),
        "libraries": {lib.name: {"count": len(lib.exports), "shim_exports": sum(map(is_unprefixed, lib.exports))}
                      for lib in doc["libraries"]},
    }


def record(wheel: Path, out_name: str) -> tuple[dict[str, Any], list[str]]:
    problems: list[str] = []
    libraries: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        version, members = extract(wheel, Path(tmp))
        fmt = "macho" if any(n.endswith(".dylib") for n in members) else "pe"
        extension = ""
        for member, path in sorted(members.items()):
            facts, found = (macho_facts if fmt == "macho" else pe_facts)(path)
            problems += [f"{member}: {p}" for p in found]
            facts.update(size=path.stat().st_size, sha256=hashlib.sha256(path.read_bytes()).hexdigest())
            if member.startswith("torch/_C"):
                extension = member
                facts["imports_of"] = extension_imports(path, fmt)
            libraries[member] = facts
    doc = {
        "made_by": f"python tests/native_record.py {wheel.name} {out_name}",
        "downloaded_by": download_command(wheel.name),
        "wheel": wheel.name, "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
        "torch_version": version, "format": fmt, "extension": extension, "judges": list(TOOLS),
        "libraries": libraries,
        "snapshot": snapshot_facts(wheel),
    }
    return doc, problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python tests/native_record.py WHEEL OUT.json", file=sys.stderr)
        return 2
    wheel, out = Path(argv[0]), Path(argv[1])
    doc, problems = record(wheel, out.name)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} disagreements: nothing written", file=sys.stderr)
        return 1
    out.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    print(f"wrote {out}: {len(doc['libraries'])} files of {wheel.name}, every reader agreeing", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
