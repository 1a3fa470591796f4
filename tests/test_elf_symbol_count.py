""".dynsym's count when only PT_DYNAMIC names it (symbol_count.py), judged by readelf.

A seeded generator writes small libraries: 0 to 3 exported functions (0 is the case that
mattered: every .gnu.hash bucket empty, ``symoffset`` 1, the imports at 1..N unread), 0 to
5 imports of shim names (data, functions, functions only a constructor calls), linked with
and without ``--hash-style=both``, ``-z now`` and ``-z pack-relative-relocs``, 64- and 32-bit. Each is read
as a plain file, stripped of its section headers, and as a member of a wheel (kept whole,
and streamed up to PT_DYNAMIC); each must give readelf's imports and count, and scan the
same facts. About 2 s: 16 compiles of a few lines and two CLI runs.
"""

from __future__ import annotations

import random
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from aoti_shim.checks.abi import prefix as prefixes
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.elf.layout import DT_JMPREL, DT_PLTREL, DT_PLTRELSZ, DT_REL, DT_RELA, DT_RELASZ, layout
from aoti_shim.checks.elf.symbol_count import relocation_tables
from aoti_shim.checks.inputs import collect
from aoti_shim.checks.scan.environment import LibraryFile, read_wheel
from aoti_shim.checks.scan.judge import read_library
from aoti_shim.errors import InputError
from cli_support import cli
from compile_support import compile_shared
from test_elf_loader_view import sstrip
from wheel_support import make_wheel

SEED = 20261207
CASES = 16
PACK = "-Wl,-z,pack-relative-relocs"
M32 = "-m32 -nostdlib"
_WORDS = ("get_numel", "empty_strided", "get_data_ptr", "dtype_float32", "device_type_cpu", "grad_mode")


@dataclass(frozen=True)
class Case:
    """One generated library: its exported functions, its imports as (name, how) with how
    "data", "call" (from an export, or the constructor without one) or "ctor", and flags."""

    exports: int
    imports: tuple[tuple[str, str], ...]
    flags: tuple[str, ...]


def _cases(pack: bool) -> list[Case]:
    rng = random.Random(SEED)
    out = []
    for i in range(CASES):
        names = [f"{rng.choice(('', 'myrt_'))}aoti_torch_{rng.choice(_WORDS)}_{j}" for j in range(rng.randint(0, 5))]
        # Every export count with and without DT_HASH (.gnu.hash alone is the case that mattered);
        # every fifth 32-bit (REL relocations; no 32-bit libc here, so without one).
        both = (i // 4) % 2 == 1
        flags = [f for f, on in (("-Wl,--hash-style=both", both), ("-Wl,-z,now", rng.random() < 0.5),
                                 (PACK, pack and rng.random() < 0.5), (M32, i % 5 == 0)) if on]
        out.append(Case(i % 4, tuple((n, rng.choice(("data", "call", "ctor"))) for n in names), tuple(flags)))
    return out


def _source(case: Case) -> str:
    lines = ["static int sink;"]
    in_ctor, in_exports = [], []
    for name, how in case.imports:
        lines.append(f"extern int {name};" if how == "data" else f"extern int {name}(void);")
        use = f"sink += {name};" if how == "data" else f"sink += {name}();"
        (in_exports if how != "ctor" and case.exports else in_ctor).append(use)
    lines.append(f"__attribute__((constructor)) static void init(void) {{ {' '.join(in_ctor)} }}")
    for k in range(case.exports):
        body = " ".join(in_exports) if k == 0 else ""
        lines.append(f'__attribute__((visibility("default"))) int exported_{k}(void) {{ {body} return sink; }}')
    return "\n".join(lines) + "\n"


def _readelf(path: Path) -> tuple[set[str], int]:
    """(the undefined, non-local names, the entry count) readelf --dyn-syms -W prints."""
    out = subprocess.run(["readelf", "--dyn-syms", "-W", str(path)], capture_output=True, text=True, check=True).stdout
    found = re.search(r"'\.dynsym' contains (\d+) entries", out)
    assert found is not None, out
    count = int(found.group(1))
    imports = set()
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 8 and cols[0].endswith(":") and cols[6] == "UND" and cols[4] != "LOCAL":
            imports.add(cols[7].split("@")[0])
    return imports, count


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Case, Path]]:
    folder = tmp_path_factory.mktemp("symbol_count")
    probe = folder / "probe.c"
    probe.write_text("int f(void) { return 0; }\n")
    pack = compile_shared(probe, folder / "libprobe.so", (PACK,), check=False).returncode == 0
    out = []
    for i, case in enumerate(_cases(pack)):
        source = folder / f"gen{i}.c"
        source.write_text(_source(case))
        flags = [part for flag in case.flags for part in flag.split()]
        compile_shared(source, folder / "lib" / f"libgen{i}.so", ("-fvisibility=hidden", *flags))
        out.append((case, folder / "lib" / f"libgen{i}.so"))
    for wide in (True, False):
        assert any(
            case.exports == 0 and case.imports and "-Wl,--hash-style=both" not in case.flags
            and (M32 not in case.flags) == wide for case, _ in out
        ), f"the generator must make the case that matters (no export, imports, .gnu.hash alone), {wide=}"
    return out


def _members(wheel: Path, stream: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, ElfImage]:
    """Each member's image as check reads it: kept whole, or (``stream``) up to PT_DYNAMIC."""
    monkeypatch.setattr(collect, "SMALL_MEMBER", 0 if stream else collect.SMALL_MEMBER)
    images = {}
    with collect.open_wheel(str(wheel)) as zf, collect.Workspace() as ws:
        for info in zf.infolist():
            kind, art = collect.read_member(zf, info, f"{wheel}!{info.filename}", ws, 1 << 30)
            if art is not None:
                assert art.image is not None, "a member is read from its parts, not a temp file"
                images[Path(info.filename).name] = art.image
    return images


@pytest.mark.parametrize("stream", [False, True], ids=["kept-whole", "streamed"])
def test_every_view_gives_readelfs_imports(
    built: list[tuple[Case, Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    wheel = make_wheel(tmp_path / "gen-1.0-py3-none-linux_x86_64.whl", {f"gen/{p.name}": p for _, p in built})
    members = _members(wheel, stream, monkeypatch)
    for case, path in built:
        imports, count = _readelf(path)
        assert {n for n, _ in case.imports} <= imports
        bare = sstrip(path, tmp_path / path.name)
        with ElfImage(path) as plain, ElfImage(bare) as loader, members[path.name] as member:
            assert loader.loader_view and member.loader_view and not plain.loader_view
            for image in (plain, loader, member):
                assert (image.import_names(), image.symbol_count()) == (imports, count), (case, image.display)


def test_scan_reads_a_member_as_it_reads_the_file(built: list[tuple[Case, Path]], tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "gen-1.0-py3-none-linux_x86_64.whl", {f"gen/{p.name}": p for _, p in built})
    with collect.Workspace() as ws:
        members = {Path(f.display).name: f for f in read_wheel(str(wheel), ws, []).libraries}
        for case, path in built:
            shims = {n for n in _readelf(path)[0] if prefixes.is_shim_name(n)}
            on_disk = read_library(LibraryFile(str(path), path.name, "shared"), "gen 1.0", "gen")
            in_wheel = read_library(members[path.name], "gen 1.0", "gen")
            assert on_disk is not None and in_wheel is not None
            assert set(on_disk.shim_imports) == set(in_wheel.shim_imports) == shims, case
            assert on_disk.symbols == in_wheel.symbols


def test_check_of_a_member_exporting_nothing_finds_the_unprefixed_import(tmp_path: Path) -> None:
    # A hidden constructor is its only code: it uses the prefixed name and, unprefixed, one more.
    case = Case(0, (("myrt_aoti_torch_get_numel", "ctor"), ("aoti_torch_get_numel", "ctor")), ())
    source = tmp_path / "blob.c"
    source.write_text(_source(case))
    lib = tmp_path / "folder" / "libblob.so"
    compile_shared(source, lib, ("-fvisibility=hidden",))
    wheel = make_wheel(tmp_path / "blob-1.0-py3-none-linux_x86_64.whl", {"blob/libblob.so": lib})
    for given in (lib.parent, wheel):
        done = cli("check", "--model", str(given))
        assert done.returncode == 8, (given, done.stdout, done.stderr)
        (line,) = [s for s in done.stdout.splitlines() if "UNPREFIXED_IMPORT" in s]
        assert "imports 'aoti_torch_get_numel'" in line


def test_the_relocation_tables_that_name_symbols() -> None:
    relr = 36  # DT_RELR: relative relocations, no symbol
    tags = {DT_RELA: 0x100, DT_RELASZ: 48, DT_JMPREL: 0x200, DT_PLTRELSZ: 16, DT_PLTREL: DT_REL, relr: 0x300}
    assert relocation_tables(layout(2, "<"), tags) == [(DT_RELA, "DT_RELA", 48, 24), (DT_JMPREL, "DT_JMPREL", 16, 16)]
    assert relocation_tables(layout(1, ">"), {DT_REL: 0x100, DT_JMPREL: 0x200}) == [
        (DT_REL, "DT_REL", 0, 8), (DT_JMPREL, "DT_JMPREL", 0, 12)  # no DT_PLTREL: RELA, as relocations.py reads it
    ]


def test_a_relocation_past_the_symbol_tables_segment_is_one_line(tmp_path: Path) -> None:
    from elftools.elf.elffile import ELFFile

    source = tmp_path / "one.c"
    source.write_text(_source(Case(0, (("aoti_torch_get_numel", "ctor"),), ())))
    path = tmp_path / "libone.so"
    compile_shared(source, path, ("-fvisibility=hidden",))
    with path.open("rb") as f:
        at = ELFFile(f).get_section_by_name(".rela.plt")["sh_offset"]
    # The first PLT relocation now names symbol 1<<20: glibc would read it from far past .dynsym.
    data = bytearray(path.read_bytes())
    info = int.from_bytes(data[at + 8 : at + 16], "little")
    data[at + 8 : at + 16] = ((1 << 20) << 32 | (info & 0xFFFFFFFF)).to_bytes(8, "little")
    (tmp_path / "bad.so").write_bytes(data)
    bad = sstrip(tmp_path / "bad.so", tmp_path / "bad_bare.so")
    with pytest.raises(InputError, match=r"bad_bare.so: a relocation names symbol 1048576, past the \d+ its segment"):
        ElfImage(bad)
