"""Bounded, unambiguous reads of every wheel the gate takes: check, snapshot, the build gate
(snapshot files: test_snapshot.py; suppressions files: test_report_suppressions.py)."""

from __future__ import annotations

import shutil
import struct
import warnings
import zipfile
from pathlib import Path

import pytest

from aoti_shim.checks import CheckSettings, run_check
from aoti_shim.checks.inputs import collect as inputs
from aoti_shim.checks.snapshot import record as snapshot_mod
from aoti_shim.errors import InputError
from cli_support import cli, one_line_error


def _gate_extract(wheel: Path, dest: Path) -> list[str]:
    from aoti_shim.plugin import gate

    return gate.extract_members(wheel, dest)


# -- 12.5: a wheel with two members of one name -------------------------------------


@pytest.fixture
def duplicate_wheel(checker_libs, tmp_path) -> Path:
    """The clean shim first (what a reader that takes the first sees), the unprefixed one
    second (what pip installs)."""
    wheel = tmp_path / "torch-1.0-cp311-cp311-linux_x86_64.whl"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate it writes
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.write(checker_libs["clean_shim"], "torch/lib/libshim.so")
            zf.write(checker_libs["unprefixed_shim"], "torch/lib/libshim.so")
            zf.writestr("torch/version.py", "__version__ = '1.0'\n")
    return wheel


def test_check_refuses_a_wheel_with_two_members_of_one_name(duplicate_wheel):
    line = one_line_error(cli("check", "--shim", str(duplicate_wheel)), 1)
    assert "two members named 'torch/lib/libshim.so'" in line


def test_check_against_refuses_a_wheel_with_two_members_of_one_name(checker_libs, duplicate_wheel):
    line = one_line_error(cli("check", "--shim", str(checker_libs["clean_shim"]), "--against", str(duplicate_wheel)), 1)
    assert "two members named" in line


def test_snapshot_refuses_a_wheel_with_two_members_of_one_name(duplicate_wheel, tmp_path):
    out = tmp_path / "snap.json.gz"
    line = one_line_error(cli("snapshot", str(duplicate_wheel), "-o", str(out)), 1)
    assert "two members named" in line and not out.exists()


def test_the_build_gate_refuses_a_wheel_with_two_members_of_one_name(duplicate_wheel, tmp_path):
    with pytest.raises(InputError, match="two members named 'torch/lib/libshim.so'"):
        _gate_extract(duplicate_wheel, tmp_path / "x")


# -- 12.11: wheels: inflated bytes and member count, in every reader ---------------------


def _far_dynamic(library: Path, gap: int) -> bytes:
    """``library`` with ``gap`` zero bytes before a copy of its PT_DYNAMIC, which now points
    there: every reader must inflate the gap to reach it (the loader reads it the same way)."""
    data = bytearray(library.read_bytes())
    assert data[4] == 2  # ELFCLASS64
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        at = phoff + i * phentsize
        p_type, = struct.unpack_from("<I", data, at)
        if p_type == 2:  # PT_DYNAMIC
            offset, = struct.unpack_from("<Q", data, at + 8)
            filesz, = struct.unpack_from("<Q", data, at + 32)
            dynamic = bytes(data[offset : offset + filesz])
            struct.pack_into("<Q", data, at + 8, len(data) + gap)
            return bytes(data) + bytes(gap) + dynamic
    raise AssertionError("no PT_DYNAMIC")


def _bomb(tmp_path: Path, library: Path, size: int) -> Path:
    wheel = tmp_path / "torch-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("torch/lib/libtorch_cpu.so", _far_dynamic(library, size))
        zf.writestr("torch/version.py", "__version__ = '1.0'\n")
    return wheel


READERS = {
    "check": lambda wheel, tmp: run_check(CheckSettings(shims=(str(wheel),))),
    "against": lambda wheel, tmp: run_check(CheckSettings(models=(str(tmp / "m.so"),), against=(str(wheel),))),
    "snapshot": lambda wheel, tmp: snapshot_mod.capture(wheel),
    "gate": lambda wheel, tmp: _gate_extract(wheel, tmp / "gate"),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_wheel_reader_caps_the_bytes_it_inflates(checker_libs, tmp_path, monkeypatch, reader):
    shutil.copy(checker_libs["good_model"], tmp_path / "m.so")
    wheel = _bomb(tmp_path, checker_libs["clean_shim"], size=6 << 20)  # 6 MiB of zeros in a few KiB
    monkeypatch.setattr(inputs, "MIN_WHEEL_INFLATE", 2 << 20)
    with pytest.raises(InputError, match="inflates past its budget of 2 MiB"):
        READERS[reader](wheel, tmp_path)
    # The ratio: a real library deflates about 3:1, far inside 16:1.
    assert wheel.stat().st_size * inputs.WHEEL_INFLATE_RATIO < 2 << 20


def test_a_real_sized_zip_bomb_is_refused_by_the_cli(checker_libs, tmp_path):
    wheel = _bomb(tmp_path, checker_libs["clean_shim"], size=360 << 20)  # 360 MiB from well under 1 MiB
    assert wheel.stat().st_size < 1 << 20
    line = one_line_error(cli("check", "--shim", str(wheel), timeout=120), 1)
    assert "inflates past its budget of 256 MiB" in line


@pytest.mark.parametrize("reader", ["snapshot", "gate"])
def test_every_wheel_reader_caps_the_member_count(tmp_path, monkeypatch, reader):
    wheel = tmp_path / "torch-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for i in range(12):
            zf.writestr(f"torch/lib/f{i}.txt", b"x")
    monkeypatch.setattr(inputs, "MAX_WHEEL_MEMBERS", 10)
    with pytest.raises(InputError, match="12 members, more than 10"):
        READERS[reader](wheel, tmp_path)
