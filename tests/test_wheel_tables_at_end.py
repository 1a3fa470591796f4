"""Wheel members whose loader tables lie at the end of the file, after PT_DYNAMIC.

torch 2.14.1's libtorch_cpu.so and libtorch_cuda.so (post-processed after the link) keep
.dynstr and .gnu.hash in a PT_LOAD segment appended at the end of the file, 400 MB past
PT_DYNAMIC; the checker, which streams wheel members, used to copy such a member to a temp
file (the whole wheel then took 1.5x the anchor and 980 MiB of temp disk). It now reads
forward to those tables. The fixture is built the same way: a real library, its .gnu.hash
and .dynstr copied into a new segment at its end and PT_DYNAMIC pointed there; the dynamic
loader itself says the result is sound (it loads it and binds through the moved tables).
"""

from __future__ import annotations

import ctypes
import struct
import subprocess
import zipfile
from pathlib import Path

import pytest

from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.elf.layout import SHT_GNU_HASH
from aoti_shim.checks.inputs import collect as inputs
from aoti_shim.errors import InputError
from compile_support import compile_shared
from wheel_support import make_wheel

PT_LOAD, PT_DYNAMIC, PT_GNU_STACK, PT_GNU_RELRO = 1, 2, 0x6474E551, 0x6474E552
DT_STRTAB, DT_GNU_HASH = 5, 0x6FFFFEF5
NAMES = [f"moved_{i:04d}" for i in range(300)]


def _align(n: int, to: int) -> int:
    return (n + to - 1) // to * to


def move_tables_to_end(path: Path, out: Path, *, apart: bool = False) -> None:
    """Copy .gnu.hash and .dynstr into a new PT_LOAD segment at the end of ``path``
    (ELF64 little-endian), point PT_DYNAMIC and the section headers at the copies. With
    ``apart`` each gets a segment of its own, a page between them: two ranges to fetch."""
    data = bytearray(path.read_bytes())
    (phoff, shoff) = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, 0x36)
    phdrs = [struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize) for i in range(phnum)]
    shdrs = [list(struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)) for i in range(shnum)]
    shstr = shdrs[shstrndx]

    def section(name: str) -> int:
        for i, s in enumerate(shdrs):
            start = shstr[4] + s[0]
            if data[start : data.index(b"\0", start)] == name.encode():
                return i
        raise AssertionError(name)

    gh, ds = section(".gnu.hash"), section(".dynstr")
    gh_bytes = bytes(data[shdrs[gh][4] : shdrs[gh][4] + shdrs[gh][5]])
    ds_bytes = bytes(data[shdrs[ds][4] : shdrs[ds][4] + shdrs[ds][5]])
    offset = _align(len(data), 0x1000)
    vaddr = _align(max(p[3] + p[6] for p in phdrs if p[0] == PT_LOAD), 0x1000)
    ds_at = _align(len(gh_bytes), 0x1000) + 0x1000 if apart else _align(len(gh_bytes), 8)
    data += b"\0" * (offset - len(data)) + gh_bytes + b"\0" * (ds_at - len(gh_bytes)) + ds_bytes
    # The unused PT_GNU_STACK entry becomes the new PT_LOAD (after the others: ascending);
    # apart, PT_GNU_RELRO (after it) the second.
    slot = next(i for i, p in enumerate(phdrs) if p[0] == PT_GNU_STACK)
    if apart:
        second = next(i for i, p in enumerate(phdrs) if p[0] == PT_GNU_RELRO)
        assert second > slot
        struct.pack_into(
            "<IIQQQQQQ",
            data,
            phoff + slot * phentsize,
            PT_LOAD,
            4,
            offset,
            vaddr,
            vaddr,
            len(gh_bytes),
            len(gh_bytes),
            0x1000,
        )
        struct.pack_into(
            "<IIQQQQQQ",
            data,
            phoff + second * phentsize,
            PT_LOAD,
            4,
            offset + ds_at,
            vaddr + ds_at,
            vaddr + ds_at,
            len(ds_bytes),
            len(ds_bytes),
            0x1000,
        )
    else:
        size = ds_at + len(ds_bytes)
        struct.pack_into(
            "<IIQQQQQQ", data, phoff + slot * phentsize, PT_LOAD, 4, offset, vaddr, vaddr, size, size, 0x1000
        )
    dyn = next(p for p in phdrs if p[0] == PT_DYNAMIC)
    for at in range(dyn[2], dyn[2] + dyn[5], 16):
        tag = struct.unpack_from("<q", data, at)[0]
        if tag == DT_GNU_HASH:
            struct.pack_into("<Q", data, at + 8, vaddr)
        elif tag == DT_STRTAB:
            struct.pack_into("<Q", data, at + 8, vaddr + ds_at)
    for i, (addr, off) in ((gh, (vaddr, offset)), (ds, (vaddr + ds_at, offset + ds_at))):
        shdrs[i][3], shdrs[i][4] = addr, off
        struct.pack_into("<IIQQQQIIQQ", data, shoff + i * shentsize, *shdrs[i])
    out.write_bytes(bytes(data))
    out.chmod(0o755)


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("moved")
    src = out / "lib.c"
    # Over inputs.SMALL_MEMBER, so the stream keeps only a head of it.
    body = [f"int {n}(void) {{ return {i}; }}" for i, n in enumerate(NAMES)]
    src.write_text(
        "static const char pad[6 << 20] = {1};\nconst char *pad_at(int i) { return &pad[i]; }\n"
        + "\n".join(body)
        + "\n"
    )
    plain = out / "libplain.so"
    compile_shared(src, plain)
    moved = out / "libmoved.so"
    move_tables_to_end(plain, moved)
    apart = out / "libapart.so"
    move_tables_to_end(plain, apart, apart=True)
    members = {"pkg/libmoved.so": moved, "pkg/libplain.so": plain, "pkg/libapart.so": apart}
    wheel = make_wheel(out / "moved-0.1-py3-none-linux_x86_64.whl", members, compression=zipfile.ZIP_DEFLATED)
    return {"plain": plain, "moved": moved, "apart": apart, "wheel": wheel}


def _exports_by_nm(path: Path) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def test_the_fixture_is_what_torch_2_14_1_showed(moved: dict[str, Path]) -> None:
    with ElfImage(moved["moved"]) as image:
        dynamic = next(off for kind, off, _ in _segments(moved["moved"]) if kind == PT_DYNAMIC)
        sym, strtab = image._table.dynsym()
        gnu_hash = image._table.first(SHT_GNU_HASH)
        assert gnu_hash is not None and strtab.offset > dynamic and gnu_hash.offset > dynamic
        assert image.export_names() == _exports_by_nm(moved["moved"]) >= set(NAMES)
    # The loader agrees: it binds through the moved .gnu.hash and .dynstr.
    lib = ctypes.CDLL(str(moved["moved"]))
    assert lib.moved_0123() == 123
    apart = ctypes.CDLL(str(moved["apart"]))  # and through each in a segment of its own
    assert apart.moved_0124() == 124
    with ElfImage(moved["apart"]) as image:
        assert image.export_names() == _exports_by_nm(moved["apart"]) >= set(NAMES)


def _dynamic_end(path: Path) -> int:
    data = path.read_bytes()
    phoff = struct.unpack_from("<Q", data, 0x20)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for at in (phoff + i * phentsize for i in range(phnum)):
        if struct.unpack_from("<I", data, at)[0] == PT_DYNAMIC:
            return struct.unpack_from("<Q", data, at + 8)[0] + struct.unpack_from("<Q", data, at + 32)[0]
    raise AssertionError("no PT_DYNAMIC")


def _segments(path: Path) -> list[tuple[int, int, int]]:
    data = path.read_bytes()
    phoff = struct.unpack_from("<Q", data, 0x20)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    return [
        struct.unpack_from("<IIQ", data, phoff + i * phentsize)[:1]
        + struct.unpack_from("<QQ", data, phoff + i * phentsize + 8)
        for i in range(phnum)
    ]


@pytest.mark.parametrize("member", ["pkg/libmoved.so", "pkg/libplain.so"])
def test_a_member_with_tables_past_its_head_is_read_forward_without_a_temp_file(
    moved: dict[str, Path], member: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A head smaller than the offset of PT_DYNAMIC, as 32 MiB is for libtorch_cuda.so.
    monkeypatch.setattr(inputs, "STREAM_HEAD", 64 << 10)
    with inputs.Workspace() as ws, inputs.open_wheel(str(moved["wheel"])) as zf:
        info = zf.getinfo(member)
        kind, art = inputs.read_member(zf, info, f"w!{member}", ws, inputs.DEFAULT_MEMBER_LIMIT)
        assert kind == "shared" and art is not None
        assert art.path == f"w!{member}", "copied to a temp file"
        assert ws._count == 0, "a temp file was made"
        # Every byte inflated is charged, and no more: to the moved tables at the file's end,
        # or (tables in the head) to the end of PT_DYNAMIC.
        path = moved["moved"] if "moved" in member else moved["plain"]
        assert zf.inflate_budget - zf.inflate_left == (path.stat().st_size if "moved" in member else _dynamic_end(path))
        with art.open() as image:
            assert image.export_names() == _exports_by_nm(moved["moved"] if "moved" in member else moved["plain"])


def test_check_of_the_wheel_equals_check_of_its_files(moved: dict[str, Path], tmp_path: Path) -> None:
    from aoti_shim.checks import CheckSettings, render, run_check

    of_wheel = run_check(CheckSettings(shims=(str(moved["wheel"]),), against=(str(moved["plain"]),)))
    of_file = run_check(CheckSettings(shims=(str(moved["moved"]),), against=(str(moved["plain"]),)))
    collided = {f.symbol for f in of_wheel.findings if f.rule == "COLLISION" and f.artifact.endswith("libmoved.so")}
    assert collided == {f.symbol for f in of_file.findings if f.rule == "COLLISION"} >= set(NAMES)
    assert "COLLISION" in render(of_wheel, "text")


_WHERE = ["skipped to PT_DYNAMIC", "kept to PT_DYNAMIC", "PT_DYNAMIC in the first read",
          "a head ending where .dynsym's segment ends", "a first read ending inside the moved tables"]


def _stand(moved: dict[str, Path], monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """Leave the stream after PT_DYNAMIC by each path: skipped to it past a smaller head,
    kept up to it, or read with the first bytes; the head ending exactly where a table's
    segment ends (that table is kept, the moved ones are fetched), or one byte into the
    moved tables (they are read on from there)."""
    end = _dynamic_end(moved["plain"])
    if where == "skipped to PT_DYNAMIC":
        monkeypatch.setattr(inputs, "STREAM_HEAD", 64 << 10)
    elif where == "kept to PT_DYNAMIC":
        monkeypatch.setattr(inputs, "STREAM_HEAD", end - 1)
    elif where == "PT_DYNAMIC in the first read":
        monkeypatch.setattr(inputs, "_FIRST_BYTES", end + 1)
    elif where == "a head ending where .dynsym's segment ends":
        first = _load_ends(moved["moved"])[0]
        assert inputs._FIRST_BYTES < first < end
        monkeypatch.setattr(inputs, "STREAM_HEAD", first)
    else:
        monkeypatch.setattr(
            inputs, "_FIRST_BYTES", max(off for kind, off, _ in _segments(moved["moved"]) if kind == PT_LOAD) + 1
        )


def _load_ends(path: Path) -> list[int]:
    """Where each PT_LOAD's file range ends, in program-header order."""
    data = path.read_bytes()
    phoff = struct.unpack_from("<Q", data, 0x20)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    heads = [struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize) for i in range(phnum)]
    return [h[2] + h[5] for h in heads if h[0] == PT_LOAD]


@pytest.mark.parametrize("where", _WHERE)
@pytest.mark.parametrize("member", ["pkg/libmoved.so", "pkg/libapart.so"])
def test_the_tables_are_read_forward_from_where_the_stream_stands(
    moved: dict[str, Path], member: str, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One range ahead of the stream, or two with a page between: each path leaves the
    stream where the reading goes on, and the charge is the member's size."""
    _stand(moved, monkeypatch, where)
    path = moved["moved" if "moved" in member else "apart"]
    with inputs.Workspace() as ws, inputs.open_wheel(str(moved["wheel"])) as zf:
        kind, art = inputs.read_member(zf, zf.getinfo(member), f"w!{member}", ws, inputs.DEFAULT_MEMBER_LIMIT)
        assert kind == "shared" and art is not None and art.image is not None and ws._count == 0
        assert zf.inflate_budget - zf.inflate_left == path.stat().st_size
        assert (art.image.path, art.image.display) == (f"w!{member}",) * 2
        assert art.image.export_names() == _exports_by_nm(path)


@pytest.mark.parametrize("short_of", ["the tables", "the last byte"])
@pytest.mark.parametrize("where", _WHERE[:2])
def test_the_budget_running_out_on_the_way_to_the_tables_names_the_member(
    moved: dict[str, Path], short_of: str, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stand(moved, monkeypatch, where)
    size = moved["moved"].stat().st_size
    tables = max(off for kind, off, _ in _segments(moved["moved"]) if kind == PT_LOAD)
    monkeypatch.setattr(inputs, "WHEEL_INFLATE_RATIO", 0)
    budget = tables - 1 if short_of == "the tables" else size - 1
    for given, fits in ((budget + 1, True), (budget, False)) if short_of == "the last byte" else ((budget, False),):
        monkeypatch.setattr(inputs, "MIN_WHEEL_INFLATE", given)
        with inputs.Workspace() as ws, inputs.open_wheel(str(moved["wheel"])) as zf:
            info = zf.getinfo("pkg/libmoved.so")
            if fits:
                inputs.read_member(zf, info, "w!pkg/libmoved.so", ws, inputs.DEFAULT_MEMBER_LIMIT)
                continue
            with pytest.raises(InputError, match=r"^w!pkg/libmoved.so: the wheel inflates past its budget"):
                inputs.read_member(zf, info, "w!pkg/libmoved.so", ws, inputs.DEFAULT_MEMBER_LIMIT)
