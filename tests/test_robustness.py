"""Hostile and broken inputs: one error line, exit 1, bounded time, never a traceback."""

from __future__ import annotations

import os
import struct
import subprocess
import time
import zipfile
from pathlib import Path

import pytest

from aoti_shim.checks import CheckSettings, run_check
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.errors import InputError
from cli_support import cli, one_line_error
from elf_fixtures import SYNTH_SYMBOLS, SynthSymbol, compile_fixtures, regions, synth_elf

SHT_DYNSYM, SHT_GNU_HASH = 11, 0x6FFFFFF6


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    libs = compile_fixtures(tmp_path_factory.mktemp("robust-fixtures"))
    return libs["shim"].read_bytes()


def assert_tool_error(done: subprocess.CompletedProcess[str], fragment: str = "") -> None:
    """The command's one error line (cli_support.one_line_error, exit 1), holding ``fragment``."""
    line = one_line_error(done, 1)
    assert line.startswith("aoti-shim: error:") and fragment in line, line


def assert_input_error(path: Path, fragment: str = "") -> None:
    """Every question the checker asks either answers or raises one InputError line."""
    with pytest.raises(InputError) as caught:
        with ElfImage(path) as image:
            # Lookups first: once the full scan ran, find_export answers from it.
            image.find_export("aoti_torch_empty_strided")
            image.find_export("myrt_aoti_torch_get_dim")
            image.exports()
            image.imports()
            _ = (image.needed, image.soname, image.build_id)
    message = str(caught.value)
    assert "\n" not in message and fragment in message, message


# -- ELF headers and tables -------------------------------------------------------------


def patched(data: bytes, at: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into("<" + fmt, out, at, value)
    return bytes(out)


def section_header(data: bytes, path: Path, sh_type: int) -> int:
    path.write_bytes(data)
    reg = regions(path)
    index = next(i for i, s in enumerate(reg.sections) if s[0] == sh_type)
    return reg.shoff + index * reg.shentsize


def malformed(tiny: bytes, tmp: Path) -> dict[str, tuple[bytes, str]]:
    size = len(tiny)
    dynsym = section_header(tiny, tmp / "probe.so", SHT_DYNSYM)
    gnu = section_header(tiny, tmp / "probe.so", SHT_GNU_HASH)
    gnu_off = struct.unpack_from("<Q", tiny, gnu + 24)[0]
    sym_off = struct.unpack_from("<Q", tiny, dynsym + 24)[0]
    strtab_index = struct.unpack_from("<I", tiny, dynsym + 40)[0]
    shoff = struct.unpack_from("<Q", tiny, 0x28)[0]
    strtab = shoff + strtab_index * 64
    str_off, str_size = struct.unpack_from("<QQ", tiny, strtab + 24)
    no_nul = bytearray(tiny)
    no_nul[str_off + str_size - 1] = 0x41
    return {
        "empty": (b"", "too short"),
        "truncated_ident": (tiny[:10], "too short"),
        "truncated_header": (tiny[:40], "outside the file"),
        "truncated_tables": (tiny[: shoff + 100], "outside the file"),
        "bad_class": (tiny[:4] + b"\x07" + tiny[5:], "unknown ELF class"),
        "bad_data_encoding": (tiny[:5] + b"\x09" + tiny[6:], "data encoding"),
        "shoff_past_end": (patched(tiny, 0x28, "Q", size + 4096), "outside the file"),
        "shoff_huge": (patched(tiny, 0x28, "Q", (1 << 64) - 1), "outside the file"),
        "bad_shentsize": (patched(tiny, 0x3A, "H", 7), "section header size"),
        "shnum_too_many": (patched(tiny, 0x3C, "H", 0xFFFF), "outside the file"),
        "dynsym_offset_past_end": (patched(tiny, dynsym + 24, "Q", size), ".dynsym"),
        "dynsym_size_huge": (patched(tiny, dynsym + 32, "Q", 24 * (1 << 40)), ".dynsym"),
        "dynsym_size_ragged": (patched(tiny, dynsym + 32, "Q", 25), "multiple"),
        "dynsym_entsize_zero": (patched(tiny, dynsym + 56, "Q", 0), "entry size"),
        "dynsym_link_missing": (patched(tiny, dynsym + 40, "I", 999), "missing section"),
        "dynsym_link_self": (patched(tiny, dynsym + 40, "I", (dynsym - shoff) // 64), "string table"),
        "dynsym_link_not_strtab": (patched(tiny, dynsym + 40, "I", 0), "not a string table"),
        "name_offset_past_strtab": (patched(tiny, sym_off + 24, "I", 0xFFFFFF), "past"),
        "strtab_unterminated": (bytes(no_nul), "unterminated"),
        "strtab_past_end": (patched(tiny, strtab + 24, "Q", size - 2), "outside the file"),
        "gnu_hash_buckets_huge": (patched(tiny, gnu_off, "I", 0x7FFFFFFF), ".gnu.hash"),
        "gnu_hash_symoffset_huge": (patched(tiny, gnu_off + 4, "I", 0x7FFFFFFF), ".gnu.hash"),
    }


CASES = [
    "empty", "truncated_ident", "truncated_header", "truncated_tables", "bad_class", "bad_data_encoding",
    "shoff_past_end", "shoff_huge", "bad_shentsize", "shnum_too_many",
    "dynsym_offset_past_end", "dynsym_size_huge", "dynsym_size_ragged", "dynsym_entsize_zero",
    "dynsym_link_missing", "dynsym_link_self", "dynsym_link_not_strtab", "name_offset_past_strtab",
    "strtab_unterminated", "strtab_past_end", "gnu_hash_buckets_huge", "gnu_hash_symoffset_huge",
]


@pytest.mark.parametrize("case", CASES)
def test_malformed_elf_is_one_input_error(tiny: bytes, tmp_path: Path, case: str) -> None:
    data, fragment = malformed(tiny, tmp_path)[case]
    path = tmp_path / f"lib{case}.so"
    path.write_bytes(data)
    if case == "empty":
        with pytest.raises(InputError):
            ElfImage(path)
        return
    assert_input_error(path, fragment)


def test_malformed_elf_through_the_cli(tiny: bytes, tmp_path: Path) -> None:
    # One process for a handful of cases keeps the suite quick; each must fail alone.
    cases = malformed(tiny, tmp_path)
    for case in ("truncated_tables", "shoff_past_end", "dynsym_link_missing", "strtab_unterminated", "bad_class"):
        path = tmp_path / f"lib{case}.so"
        path.write_bytes(cases[case][0])
        assert_tool_error(cli("check", "--shim", str(path)), str(path))


def test_malformed_reference_is_a_tool_error_not_a_pass(tiny: bytes, tmp_path: Path) -> None:
    good = tmp_path / "libgood.so"
    good.write_bytes(tiny)
    bad = tmp_path / "libref.so"
    bad.write_bytes(malformed(tiny, tmp_path)["gnu_hash_symoffset_huge"][0])
    assert_tool_error(cli("check", "--shim", str(good), "--against", str(bad)), "gnu.hash")


def test_not_elf_file_named_so(tmp_path: Path) -> None:
    path = tmp_path / "libfake.so"
    path.write_text("#!/bin/sh\necho not a library\n")
    assert_tool_error(cli("check", "--shim", str(path)), "not an ELF")


def test_32_bit_and_big_endian_libraries_are_checked(tmp_path: Path) -> None:
    for elf64 in (False, True):
        for big in (False, True):
            path = tmp_path / f"lib{elf64}{big}.so"
            path.write_bytes(synth_elf(SYNTH_SYMBOLS, elf64=elf64, big_endian=big))
            report = run_check(CheckSettings(shims=(str(path),), prefix="myrt_"))
            # Every export unprefixed under a given prefix: one finding for the missed rename
            # header, counting both names read from this layout.
            (missed,) = [f for f in report.findings if f.rule == "UNPREFIXED_EXPORT"]
            assert missed.symbol in {"aoti_torch_empty_strided", "aoti_torch_get_dim"}
            assert "all 2 of its shim names" in missed.message, missed.message


# -- files that are not files ---------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    assert_tool_error(cli("check", "--shim", str(tmp_path / "nope.so")), "nope.so")


def test_symlink_loop(tmp_path: Path) -> None:
    # The command line's answer is in tests/test_hostile_paths.py's matrix (check --shim-loop).
    loop = tmp_path / "loop.so"
    loop.symlink_to(loop)
    with pytest.raises(InputError):
        ElfImage(loop)


def test_folder_with_symlink_cycles_terminates(tiny: bytes, tmp_path: Path) -> None:
    root = tmp_path / "tree"
    (root / "a").mkdir(parents=True)
    (root / "a" / "up").symlink_to(root, target_is_directory=True)
    (root / "a" / "libshim.so").write_bytes(tiny)
    report = run_check(CheckSettings(shims=(str(root),), prefix="myrt_"))
    assert [a.display for a in report.artifacts] == [str(root / "a" / "libshim.so")]
    # A looping file link is a file that cannot be read: an error, not a silent skip (issue 12.4).
    (root / "a" / "self.so").symlink_to(root / "a" / "self.so")
    with pytest.raises(InputError, match="self.so: cannot read"):
        run_check(CheckSettings(shims=(str(root),), prefix="myrt_"))


def test_fifo_and_device_are_refused_without_hanging(tmp_path: Path) -> None:
    # The command line's answers are in tests/test_hostile_paths.py's matrix (FIFO, device).
    fifo = tmp_path / "pipe.so"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        ElfImage(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        ElfImage("/dev/null")


def test_directory_as_elf_image(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a regular file"):
        ElfImage(tmp_path)


# -- wheels ------------------------------------------------------------------------------


def test_wheel_that_is_not_a_zip(tmp_path: Path) -> None:
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    wheel.write_bytes(b"PK\x03\x04 this is no zip at all")
    assert_tool_error(cli("check", "--shim", str(wheel)), "pkg-1.0-py3-none-any.whl")
    wheel.write_text("plain text")
    assert_tool_error(cli("check", "--shim", str(wheel)))


@pytest.mark.parametrize(
    "member", ["../escape.so", "/tmp/aoti-shim-absolute-escape.so", "pkg/../../escape.so", "C:/escape.so"]
)
def test_wheel_member_names_cannot_escape(tiny: bytes, tmp_path: Path, member: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    wheel = work / "evil-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(member, tiny)
    assert_tool_error(cli("check", "--shim", str(wheel), cwd=work), "unsafe member name")
    assert not (tmp_path / "escape.so").exists() and not (work / "escape.so").exists()
    assert not Path("/tmp/aoti-shim-absolute-escape.so").exists()


UNSAFE_MEMBERS = [
    "../escape.so",
    "/tmp/aoti-shim-absolute-escape.so",
    "pkg/../../escape.so",
    "C:/escape.so",
    "pkg\\..\\..\\escape.so",
    "",
]


@pytest.mark.parametrize("name", UNSAFE_MEMBERS)
def test_one_rule_refuses_unsafe_member_names(name: str) -> None:
    from aoti_shim.checks.inputs.collect import safe_member_name

    assert not safe_member_name(name)


@pytest.mark.parametrize("name", ["torch/lib/libc10.so", "pkg/sub/a..b.so", "pkg/odd:name.so", "./pkg/x.so"])
def test_one_rule_accepts_ordinary_member_names(name: str) -> None:
    from aoti_shim.checks.inputs.collect import safe_member_name

    assert safe_member_name(name)


def test_decompression_bomb_is_capped(tmp_path: Path) -> None:
    wheel = tmp_path / "bomb-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bomb/libbomb.so", b"\x7fELF" + bytes(32 << 20))
    assert wheel.stat().st_size < 200_000
    with pytest.raises(InputError, match="limit|bomb") as caught:
        run_check(CheckSettings(shims=(str(wheel),), member_limit=1 << 20))
    assert "\n" not in str(caught.value)


def test_member_that_inflates_past_its_declared_size(tiny: bytes, tmp_path: Path) -> None:
    wheel = tmp_path / "liar-1.0-py3-none-any.whl"
    payload = tiny + bytes(1 << 20)
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("liar/libliar.so", payload)
    data = bytearray(wheel.read_bytes())
    # Declare 4 KiB in both the local header and the central directory.
    struct.pack_into("<I", data, 22, 4096)
    central = data.rfind(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, 4096)
    wheel.write_bytes(bytes(data))
    assert_tool_error(cli("check", "--shim", str(wheel)), "liar")


def test_corrupt_member_data(tiny: bytes, tmp_path: Path) -> None:
    wheel = tmp_path / "rot-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("rot/librot.so", tiny)
    data = bytearray(wheel.read_bytes())
    for i in range(200, 260):
        data[i] ^= 0x5A
    wheel.write_bytes(bytes(data))
    assert_tool_error(cli("check", "--shim", str(wheel)), "rot")


@pytest.mark.parametrize("name_len, fragment", [(1 << 20, "longer than"), (60_000, "add up")])
def test_many_symbols_sharing_one_huge_name_are_refused_quickly(tmp_path: Path, name_len: int, fragment: str) -> None:
    # Every .dynsym entry points at one long name: without caps, gigabytes of names.
    symbols = [SynthSymbol("A" * name_len)] + [SynthSymbol(f"s{i}") for i in range(3000)]
    data = bytearray(synth_elf(symbols))
    path = tmp_path / "libnamebomb.so"
    path.write_bytes(bytes(data))
    dynsym = next(s for s in regions(path).sections if s[0] == SHT_DYNSYM)
    at = data.find(b"\0" + b"A" * 64) + 1
    for i in range(1, dynsym[2] // 24):
        struct.pack_into("<I", data, dynsym[1] + i * 24, at)
    path.write_bytes(bytes(data))
    started = time.perf_counter()
    for scan in (lambda im: im.exports(), lambda im: list(im.symbols())):
        with pytest.raises(InputError, match=fragment):
            with ElfImage(path) as image:
                scan(image)
    assert time.perf_counter() - started < 10


# -- section headers that lie about what the dynamic linker loads ------------------------


def hiding_variants(tiny: bytes, tmp: Path) -> dict[str, bytes]:
    dynsym = section_header(tiny, tmp / "probe.so", SHT_DYNSYM)
    size = struct.unpack_from("<Q", tiny, dynsym + 32)[0]
    shoff = struct.unpack_from("<Q", tiny, 0x28)[0]
    no_sections = bytearray(patched(tiny, 0x3C, "H", 0))
    struct.pack_into("<Q", no_sections, shoff + 32, 0)  # extended numbering says: no sections
    return {
        # .gnu.hash still reaches the last symbols, which the loader binds to.
        "dynsym_shrunk": patched(tiny, dynsym + 32, "Q", size - 2 * 24),
        "dynsym_retyped": patched(tiny, dynsym + 4, "I", 1),
        "sections_counted_away": bytes(no_sections),
    }


@pytest.mark.parametrize("case", ["dynsym_shrunk", "dynsym_retyped", "sections_counted_away"])
def test_exports_hidden_from_the_section_view_fail_closed(tiny: bytes, tmp_path: Path, case: str) -> None:
    path = tmp_path / f"lib{case}.so"
    path.write_bytes(hiding_variants(tiny, tmp_path)[case])
    with pytest.raises(InputError, match="dynamic segment|hash tables reach") as caught:
        ElfImage(path)
    assert "\n" not in str(caught.value)
    done = cli("check", "--shim", str(path), "--prefix", "myrt_")
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)


def test_wheel_with_too_many_members_is_refused_before_listing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aoti_shim.checks.inputs import collect as inputs
    wheel = tmp_path / "many-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for i in range(66_000):  # past 65535: the count lives in the zip64 record
            zf.writestr(f"many/{i}", b"")
    assert inputs._declared_member_count(str(wheel)) == 66_000
    monkeypatch.setattr(inputs, "MAX_WHEEL_MEMBERS", 65_999)
    with pytest.raises(InputError, match="66000 members"):
        run_check(CheckSettings(shims=(str(wheel),)))
