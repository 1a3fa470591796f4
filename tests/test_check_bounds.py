"""Bounded, unambiguous reads of every input the gate takes: wheels (check, snapshot, the
build gate) and snapshots (suppressions files: test_suppressions.py)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
from cli_support import cli, one_line_error

from aoti_shim.checks import CheckSettings, inputs, run_check
from aoti_shim.checks import snapshot as snapshot_mod
from aoti_shim.errors import InputError


def _gate_extract(wheel: Path, dest: Path) -> list[str]:
    from aoti_shim.plugin import gate

    return gate.extract_elf_members(wheel, dest)


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


# -- 12.11: snapshots -------------------------------------------------------------------


def _snapshot_bytes(libraries: list[dict], members: list[bytes]) -> bytes:
    packed = [gzip.compress(m, mtime=0) for m in members]
    header = {
        "format": "aoti-shim-snapshot",
        "format_version": 1,
        "torch_version": "0",
        "source": {},
        "created_by": "test",
        "libraries": libraries,
        "members": [len(p) for p in packed],
    }
    return gzip.compress(json.dumps(header).encode(), mtime=0) + b"".join(packed)


def _hostile_snapshot(n_libraries: int, names: int) -> bytes:
    """Many libraries sharing one index (every CRC the probe's) and one large names member."""
    probe = "myrt_aoti_torch_empty_strided"
    crc = snapshot_mod.name_crc(probe)
    index = crc.to_bytes(4, "little") * names
    listed = sorted([probe] + [f"n{i:x}" for i in range(names - 1)])
    blob = ("\n".join(listed) + "\0" + "0" * names).encode()
    lib = {"count": names, "kinds": [[1, 2, 0, False]], "index_member": 1, "names_member": 2}
    libraries = [{"name": f"lib{i}.so", **lib} for i in range(n_libraries)]
    return _snapshot_bytes(libraries, [index, blob])


def test_a_snapshot_whose_libraries_share_members_is_refused(tmp_path):
    path = tmp_path / "shared.json.gz"
    path.write_bytes(_hostile_snapshot(2, 10))
    with pytest.raises(InputError, match="member 1 is used twice"):
        snapshot_mod.read(path)


def test_a_small_hostile_snapshot_costs_little_memory(checker_libs, tmp_path):
    path = tmp_path / "hostile.json.gz"
    path.write_bytes(_hostile_snapshot(60, 200_000))
    assert path.stat().st_size < 5 << 20
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # a runaway fails here, not the machine\n"
        "from aoti_shim.cli import main\n"
        "rc = main(sys.argv[1:])\n"
        # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the forking pytest process.
        "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
        "print('maxrss', hwm, file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-P", "-c", code, "check", "--shim", str(checker_libs["clean_shim"]), "--against", str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 1, done.stderr
    maxrss_kib = int(done.stderr.split("maxrss")[-1])
    assert maxrss_kib < 250 << 10, f"{maxrss_kib >> 10} MiB"


def test_a_snapshot_inflating_past_its_total_is_refused(tmp_path, monkeypatch):
    names = [f"n{i:06d}" for i in range(1000)]
    members, libraries = [], []
    for i in range(4):
        members.append(b"".join(snapshot_mod.name_crc(n).to_bytes(4, "little") for n in sorted(names, key=snapshot_mod.name_crc)))
        members.append(("\n".join(sorted(names)) + "\0" + "0" * len(names)).encode())
        libraries.append(
            {"name": f"lib{i}.so", "count": len(names), "kinds": [[1, 2, 0, False]], "index_member": 2 * i + 1, "names_member": 2 * i + 2}
        )
    path = tmp_path / "big.json.gz"
    path.write_bytes(_snapshot_bytes(libraries, members))
    monkeypatch.setattr(snapshot_mod, "MAX_TOTAL_INFLATED", 20_000)
    libs = snapshot_mod.load(path)
    with pytest.raises(InputError, match="inflates past"):
        for lib in libs:
            lib.export_names()


# -- 12.12: a snapshot refuses names it could not read back --------------------------------


def test_snapshot_refuses_a_name_it_could_not_read_back(checker_libs, tmp_path):
    data = checker_libs["clean_shim"].read_bytes()
    old = b"myrt_aoti_torch_get_data_ptr\x00"
    assert old in data
    lib_dir = tmp_path / "torch" / "lib"
    lib_dir.mkdir(parents=True)
    (lib_dir / "libodd.so").write_bytes(data.replace(old, b"myrt_aoti_torch_get\ndata_ptr\x00"))
    out = tmp_path / "snap.json.gz"
    line = one_line_error(cli("snapshot", str(lib_dir), "-o", str(out), "--torch-version", "1"), 1)
    assert "cannot be read back" in line and "\\n" in line
    assert not out.exists()
