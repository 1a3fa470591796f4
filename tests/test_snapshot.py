"""checks/snapshot/record.py and its command: the shipped snapshots are real, reproducible, and gate
like torch itself; the command's words; a snapshot file is read within bounds; a broken
snapshot or a hostile input is one error line, exit 1."""

from __future__ import annotations

import gzip
import json
import re
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

from aoti_shim.checks import CheckSettings, run_check
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.elf.layout import STB_GLOBAL, STT_FUNC
from aoti_shim.checks.snapshot import record as snapshot_mod
from aoti_shim.errors import InputError
from cli_support import CLI, cli, one_line_error
from elf_fixtures import SYNTH_SYMBOLS, compile_fixtures, nm_exports, synth_elf
from test_robustness import UNSAFE_MEMBERS


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return compile_fixtures(tmp_path_factory.mktemp("snapshot-fixtures"))


def shipped(version: str) -> Path:
    found = [p for p in snapshot_mod.shipped() if p.name == f"torch-{version}.json.gz"]
    assert found, f"the torch {version} snapshot is not installed with the package ({snapshot_mod.shipped_dir()})"
    return found[0]


def content(path: Path) -> tuple[object, ...]:
    """Everything a snapshot says, but which aoti-shim version wrote it."""
    snap = snapshot_mod.read(path)
    libs = [
        (lib.name, lib.soname, lib.build_id, lib.size, lib.sha256, lib.count, dict(lib.exports().items()))
        for lib in snap.libraries
    ]
    return snap.torch_version, snap.source, libs


# What torch only dlopens when an op needs it (RTLD_LOCAL: never in the global scope), and its
# test libraries: no shipped snapshot holds them, as `import torch` does not load them.
NOT_LOADED_BY_IMPORT = {"libcaffe2_nvrtc.so", "libtorch_cuda_linalg.so", "libaoti_custom_ops.so",
                        "libbackend_with_compiler.so", "libjitbackend_test.so", "libtorchbind_test.so"}


def by_name(path: Path) -> dict[str, snapshot_mod.SnapshotLibrary]:
    return {lib.name: lib for lib in snapshot_mod.load(path)}


def test_shipped_snapshots_describe_real_torch_builds() -> None:
    cpu = snapshot_mod.read(shipped("2.13.0+cpu"))
    assert cpu.torch_version == "2.13.0+cpu"
    libs = {lib.name: lib for lib in cpu.libraries}
    assert {"libtorch_cpu.so", "libc10.so", "libtorch.so"} <= set(libs)
    assert all(lib.build_id and len(lib.build_id) == 40 for lib in libs.values())
    shims = {n for n in libs["libtorch_cpu.so"].export_names() if n.startswith("aoti_torch_")}
    assert len(shims) == 329
    for name in shims:
        sym = libs["libtorch_cpu.so"].find_export(name)
        assert sym is not None and sym.bind == STB_GLOBAL and sym.type == STT_FUNC and not sym.versioned

    for path in snapshot_mod.shipped():
        names = set(by_name(path))
        assert {"libtorch_python.so", "libtorch_global_deps.so", "libtorch_cpu.so"} <= names, path.name
        assert not names & NOT_LOADED_BY_IMPORT, path.name

    cuda = by_name(shipped("2.14.1+cu130"))
    assert set(cuda) == {"libc10.so", "libc10_cuda.so", "libgomp.so.1", "libshm.so", "libtorch.so", "libtorch_cpu.so",
                         "libtorch_cuda.so", "libtorch_global_deps.so", "libtorch_nvshmem.so", "libtorch_python.so"}
    cpu_shims = {n for n in cuda["libtorch_cpu.so"].export_names() if n.startswith("aoti_torch_")}
    cuda_shims = {n for n in cuda["libtorch_cuda.so"].export_names() if n.startswith("aoti_torch_")}
    # Pinned to that wheel's libraries (the snapshot records their sha256): 329 and 175 were read
    # from torch 2.14.1+cu130's libtorch_cpu.so / libtorch_cuda.so, which no CPU machine has;
    # test_a_shipped_snapshot_of_the_installed_torch_agrees_with_nm checks a snapshot whose torch
    # is installed (2.13.0+cpu here) against binutils' nm.
    assert len(cpu_shims) == 329 and len(cuda_shims) == 175 and not cpu_shims & cuda_shims
    assert cuda["libtorch_cuda.so"].find_export("aoti_torch_create_cuda_stream_guard") is not None
    assert cuda["libtorch_cuda.so"].find_export("myrt_aoti_torch_create_cuda_stream_guard") is None


def test_shipped_cpu_snapshot_is_what_the_command_makes_from_the_installed_torch(
    tmp_path: Path, torch_lib: Path
) -> None:
    lib = torch_lib
    if "'2.13.0+cpu'" not in (lib.parent / "version.py").read_text():
        pytest.skip("the installed torch is not 2.13.0+cpu")
    out = tmp_path / "fresh.json.gz"
    done = subprocess.run([*CLI, "snapshot", str(lib), "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "torch 2.13.0+cpu" in done.stderr
    assert content(out) == content(shipped("2.13.0+cpu"))
    # And every name agrees with the ELF reader on the real files.
    snap = by_name(out)
    with ElfImage(lib / "libtorch_cpu.so") as image:
        assert snap["libtorch_cpu.so"].export_names() == image.export_names()
        assert snap["libtorch_cpu.so"].build_id == image.build_id


def test_a_torch_package_folder_means_its_lib_folder(tmp_path: Path, torch_lib: Path) -> None:
    # As --against does: the package's lib/, never torch/_C*.so beside it.
    made = {}
    for name, source in (("lib", torch_lib), ("package", torch_lib.parent)):
        made[name] = tmp_path / f"{name}.json.gz"
        done = subprocess.run(
            [*CLI, "snapshot", str(source), "-o", str(made[name])], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
    assert content(made["package"]) == content(made["lib"])
    assert not any(name.startswith("_C") for name in by_name(made["package"]))


def _installed_torch_version(torch_lib: Path) -> str:
    found = re.search(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", (torch_lib.parent / "version.py").read_text(), re.M)
    assert found, f"no __version__ in {torch_lib.parent / 'version.py'}"
    return found.group(1)


def test_a_shipped_snapshot_of_the_installed_torch_agrees_with_nm(torch_lib: Path) -> None:
    """binutils, not our reader, says what the installed torch exports; the snapshot must say the same.

    Here that is 2.13.0+cpu; on a machine with a GPU and a CUDA torch (docs/gpu/run_h200.sh), that torch's snapshot.
    """
    version = _installed_torch_version(torch_lib)
    found = [p for p in snapshot_mod.shipped() if p.name == f"torch-{version}.json.gz"]
    if not found:
        pytest.skip(f"no snapshot of the installed torch {version} is shipped")
    compared = 0
    for lib in snapshot_mod.load(found[0]):
        real = torch_lib / lib.name
        assert real.is_file(), f"{lib.name} is in the snapshot of torch {version} but not in {torch_lib}"
        nm = nm_exports(real)
        assert set(lib.export_names()) == set(nm), lib.name
        assert {n for n in nm if n.startswith("aoti_torch_")} == {
            n for n in lib.export_names() if n.startswith("aoti_torch_")
        }
        compared += 1
    assert compared >= 3


def test_check_against_a_snapshot_finds_what_against_torch_finds(libs: dict[str, Path], torch_lib: Path) -> None:
    shim = str(libs["shim"])
    live = run_check(CheckSettings(shims=(shim,), against=("torch",), prefix="myrt_"))
    snap = run_check(CheckSettings(shims=(shim,), against=(str(shipped("2.13.0+cpu")),), prefix="myrt_"))
    collisions = {f.symbol for f in snap.findings if f.rule == "COLLISION"}
    assert collisions == {"aoti_torch_dtype_float32", "aoti_torch_empty_strided"}
    assert collisions == {f.symbol for f in live.findings if f.rule == "COLLISION"}
    assert all(f.artifact == shim for f in snap.findings)
    assert snap.exit_code() == 8
    assert any(r.endswith("!libtorch_cpu.so") for r in snap.references)


def test_cli_gates_against_the_cuda_snapshot_without_torch(libs: dict[str, Path]) -> None:
    done = subprocess.run(
        [*CLI, "check", "--shim", str(libs["shim"]), "--against", str(shipped("2.14.1+cu130")), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 8, done.stderr
    report = json.loads(done.stdout)
    assert "aoti_torch_empty_strided" in json.dumps(report)


def test_snapshot_of_a_wheel_is_streamed_and_matches_the_reader(libs: dict[str, Path], tmp_path: Path) -> None:
    wheel = tmp_path / "torch-9.9.9-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("torch/version.py", "__version__ = '9.9.9+test'\n")
        zf.write(libs["kinds"], "torch/lib/libkinds.so")
        zf.write(libs["many"], "torch/lib/libmany.so")
        zf.writestr("torch/lib/libbig_endian.so", synth_elf(SYNTH_SYMBOLS, big_endian=True))
        zf.write(libs["model"], "torch/_C.cpython-311-x86_64-linux-gnu.so")  # outside lib/: not a reference
        zf.writestr("torch/lib/README.txt", "not a library")
    out = tmp_path / "snap.json.gz"
    done = subprocess.run([*CLI, "snapshot", str(wheel), "-o", str(out)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    snap = snapshot_mod.read(out)
    assert snap.torch_version == "9.9.9+test"
    assert snap.source == {"kind": "wheel", "name": wheel.name}
    got = {lib.name: lib for lib in snap.libraries}
    assert set(got) == {"libkinds.so", "libmany.so", "libbig_endian.so"}
    for name in ("kinds", "many"):
        with ElfImage(libs[name]) as image:
            exports = image.exports()
            ref = got[f"lib{name}.so"]
            assert ref.export_names() == set(exports)
            assert all(ref.find_export(n) == exports[n] for n in exports)
            assert ref.build_id == image.build_id
    assert got["libbig_endian.so"].find_export("synth_versioned").versioned


def test_snapshot_bytes_are_deterministic(libs: dict[str, Path], tmp_path: Path) -> None:
    lib_dir = tmp_path / "lib"
    lib_dir.mkdir()
    # A torch library's name: --torch-version makes no other folder torch.
    (lib_dir / "libtorch_shim.so").write_bytes(libs["shim"].read_bytes())
    first = snapshot_mod.encode(snapshot_mod.capture(lib_dir, torch_version="1.0"))
    second = snapshot_mod.encode(snapshot_mod.capture(lib_dir, torch_version="1.0"))
    assert first == second


def test_is_snapshot_only_for_snapshots(libs: dict[str, Path], tmp_path: Path) -> None:
    assert snapshot_mod.is_snapshot(shipped("2.13.0+cpu"))
    assert not snapshot_mod.is_snapshot(libs["tiny"])
    other = tmp_path / "other.json.gz"
    other.write_bytes(gzip.compress(b'{"format": "something-else"}'))
    assert not snapshot_mod.is_snapshot(other)
    assert not snapshot_mod.is_snapshot(tmp_path / "missing.json.gz")
    with pytest.raises(InputError, match="not an aoti-shim snapshot"):
        snapshot_mod.load(other)


def test_absent_names_are_answered_from_the_index_alone() -> None:
    libs = by_name(shipped("2.14.1+cu130"))
    cpu = libs["libtorch_cpu.so"]
    for name in ("myrt_aoti_torch_empty_strided", "aotishim_aoti_torch_get_dim", "no_such_symbol"):
        assert cpu.find_export(name) is None
    assert cpu._table is None  # the 74k names were never inflated
    assert cpu.find_export("aoti_torch_empty_strided") is not None
    assert cpu._table is not None


# -- the snapshot command --------------------------------------------------------------


def test_snapshot_list_shows_the_shipped_files() -> None:
    from aoti_shim.checks.snapshot.record import shipped, shipped_dir

    result = cli("snapshot", "--list")
    assert result.returncode == 0, result.stderr
    assert str(shipped_dir()) in result.stdout
    listed = [line.split()[0] for line in result.stdout.splitlines()[1:]]
    assert listed == [p.name[: -len(".json.gz")] for p in shipped()]
    wrong = cli("snapshot", "--list", "-o", "x.json.gz")
    assert wrong.returncode == 2 and len(wrong.stderr.strip().splitlines()) == 1


def test_snapshot_without_source_says_what_it_needs() -> None:
    result = cli("snapshot")
    assert result.returncode == 2 and "--list" in result.stderr and "Traceback" not in result.stderr


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
        members.append(
            b"".join(snapshot_mod.name_crc(n).to_bytes(4, "little") for n in sorted(names, key=snapshot_mod.name_crc))
        )
        members.append(("\n".join(sorted(names)) + "\0" + "0" * len(names)).encode())
        libraries.append(
            {
                "name": f"lib{i}.so",
                "count": len(names),
                "kinds": [[1, 2, 0, False]],
                "index_member": 2 * i + 1,
                "names_member": 2 * i + 2,
            }
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
    (lib_dir / "libtorch_odd.so").write_bytes(data.replace(old, b"myrt_aoti_torch_get\ndata_ptr\x00"))
    out = tmp_path / "snap.json.gz"
    line = one_line_error(cli("snapshot", str(lib_dir), "-o", str(out), "--torch-version", "1"), 1)
    assert "cannot be read back" in line and "\\n" in line
    assert not out.exists()


# -- symbol versions (issue 23 §4) --------------------------------------------------------------


def test_a_snapshot_keeps_the_version_facts_the_loader_matches_on(tmp_path: Path) -> None:
    """torch 2.13.0's libtorch_cpu.so and libc10.so have a .gnu.version table and one version
    definition, their base (readelf -V), and export every name at index 1. A stand-in of that
    shape; a blob linked against a stub of it whose aoti_torch_x is in version TORCH_2: the
    loader refuses the blob (the loaded library defines no TORCH_2). The snapshot's verdict is
    the file's; one written before versions were kept still loads (and cannot tell)."""
    from compile_support import compile_shared

    lib = tmp_path / "torch" / "lib"
    lib.mkdir(parents=True)
    (tmp_path / "none.map").write_text("TORCH_NONE { };\n")
    (tmp_path / "v2.map").write_text("TORCH_2 { global: aoti_torch_x; };\n")
    (tmp_path / "x.c").write_text('__attribute__((visibility("default"))) int aoti_torch_x(void) { return 1; }\n')
    ref = lib / "libtorch_cpu.so"
    compile_shared(
        tmp_path / "x.c", ref, ("-Wl,-soname,libtorch_cpu.so", f"-Wl,--version-script={tmp_path / 'none.map'}")
    )
    stub = tmp_path / "stub" / "libtorch_cpu.so"
    compile_shared(
        tmp_path / "x.c", stub, ("-Wl,-soname,libtorch_cpu.so", f"-Wl,--version-script={tmp_path / 'v2.map'}")
    )
    (tmp_path / "b.c").write_text(
        "extern int aoti_torch_x(void);\n"
        '__attribute__((visibility("default"))) int use(void) { return aoti_torch_x(); }\n'
        '__attribute__((visibility("default"))) int AOTInductorModelContainerRun(void) { return 0; }\n'
    )
    blob = tmp_path / "libblob.so"
    compile_shared(tmp_path / "b.c", blob, ("-Wl,--no-as-needed", str(stub)))
    with ElfImage(ref) as image:
        assert image.has_versym and list(image.versions().defined.values()) == ["libtorch_cpu.so", "TORCH_NONE"]
    code = ("import ctypes, os, sys\nctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)\nctypes.CDLL(sys.argv[2], "
        "mode=os.RTLD_NOW)\n")
    loaded = subprocess.run(
        [sys.executable, "-c", code, str(ref), str(blob)], capture_output=True, text=True, check=False
    )
    assert loaded.returncode != 0 and "version `TORCH_2' not found" in loaded.stderr, loaded.stderr
    snap = tmp_path / "ref.json.gz"
    doc = snapshot_mod.capture(lib, "2.13.0+cpu", with_tests=True)
    snapshot_mod.write(doc, snap)
    (kept,) = snapshot_mod.load(snap)
    assert (
        kept.versions is not None
        and kept.versions.versym
        and kept.versions.defined == {1: "libtorch_cpu.so", 2: "TORCH_NONE"}
    )

    def verdict(against: Path) -> set[tuple[str, str]]:
        report = run_check(CheckSettings(models=(str(blob),), against=(str(against),)))
        return {(f.rule, f.symbol) for f in report.findings if f.severity == "blocking"}

    assert ("LOAD_FAILURE", "") in verdict(ref)
    assert verdict(snap) == verdict(ref)
    # Written before: no 'versions' key. It loads; its definitions are a library's without .gnu.version.
    old = tmp_path / "old.json.gz"
    _write_without_versions(snap, old)
    (was,) = snapshot_mod.load(old)
    assert was.versions is None and was.count == kept.count
    assert verdict(old) >= {("UNPREFIXED_IMPORT", "aoti_torch_x")}
    # The shipped snapshots were written before: they still load.
    assert all(snapshot_mod.load(p) for p in snapshot_mod.shipped())


def _write_without_versions(snap: Path, out: Path) -> None:
    """The snapshot as an aoti-shim without versions wrote it: the header member rewritten."""
    data = snap.read_bytes()
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    header = inflater.decompress(data)
    rest = inflater.unused_data
    doc = json.loads(header)
    for lib in doc["libraries"]:
        del lib["versions"]
    text = json.dumps(doc, ensure_ascii=True, separators=(", ", ": "))
    out.write_bytes(gzip.compress(text.encode("ascii"), mtime=0) + rest)


# -- hostile inputs: the command refuses each in one line on standard error, exit 1 -----------


@pytest.fixture(scope="module")
def tiny(libs: dict[str, Path]) -> bytes:
    return libs["shim"].read_bytes()


@pytest.mark.parametrize("member", UNSAFE_MEMBERS[:5])
def test_snapshot_refuses_a_wheel_with_an_unsafe_member_name(tiny: bytes, tmp_path: Path, member: str) -> None:
    wheel = tmp_path / "torch-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("torch/lib/libok.so", tiny)
        zf.writestr(member, tiny)
    out = tmp_path / "s.json.gz"
    line = one_line_error(cli("snapshot", str(wheel), "-o", str(out), "--torch-version", "1"), 1)
    assert line.startswith(f"aoti-shim: error: {wheel}") and "unsafe member name" in line, line
    assert not out.exists() and not (tmp_path.parent / "escape.so").exists()


def test_snapshot_gzip_bomb(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.json.gz"
    head = b'{"format": "aoti-shim-snapshot", "pad": "'
    bomb.write_bytes(gzip.compress(head + b" " * (snapshot_mod.MAX_INFLATED + 1024) + b'"}', 1))
    assert snapshot_mod.is_snapshot(bomb)
    with pytest.raises(InputError, match="bomb") as caught:
        snapshot_mod.load(bomb)
    assert "\n" not in str(caught.value)


def assemble(libs: list[dict[str, object]], parts: list[bytes], **header: object) -> bytes:
    """A snapshot file from parts, the way snapshot.encode lays them out."""
    packed = [gzip.compress(m) for m in parts]
    doc = {"format": "aoti-shim-snapshot", "format_version": 1, "torch_version": "x", "libraries": libs}
    doc["members"] = [len(m) for m in packed]
    doc.update(header)
    return gzip.compress(json.dumps(doc).encode()) + b"".join(packed)


def crcs(*names: str) -> bytes:
    return struct.pack(f"<{len(names)}I", *sorted(zlib.crc32(n.encode()) for n in names))


def lib_entry(count: int, kinds: object = ([1, 2, 0, False],)) -> dict[str, object]:
    return {"name": "libx.so", "count": count, "kinds": list(kinds), "index_member": 1, "names_member": 2}


BROKEN_SNAPSHOTS = {
    "header_not_json": (gzip.compress(b'{"format": "aoti-shim-snapshot", '), "JSON"),
    "future_version": (assemble([], [], format_version=99), "version"),
    "libraries_not_a_list": (assemble([], [], libraries={}), "libraries"),
    "members_do_not_add_up": (assemble([], [], members=[99]), "add up"),
    "member_missing": (assemble([lib_entry(1)], [crcs("a")]), "names no member"),
    "count_mismatch": (assemble([lib_entry(2)], [crcs("a", "aoti_torch_empty_strided"), b"a\0000"]), "count"),
    "index_unsorted": (
        assemble([lib_entry(2)], [crcs("a", "aoti_torch_empty_strided")[::-1], b"a\naoti_torch_empty_strided\x0000"]),
        "sorted",
    ),
    "kind_undefined": (
        assemble([lib_entry(1)], [crcs("aoti_torch_empty_strided"), b"aoti_torch_empty_strided\x007"]),
        "kind",
    ),
    "kind_malformed": (
        assemble([lib_entry(1, kinds=(["GLOBAL", 2, 0, False],))], [crcs("a"), b"a\x000"]),
        "kind",
    ),
    "member_not_gzip": (assemble([lib_entry(1)], [crcs("aoti_torch_empty_strided"), b""])[:-8] + b"garbage!", "gzip"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_SNAPSHOTS))
def test_broken_snapshot_is_one_line(tmp_path: Path, tiny: bytes, case: str) -> None:
    data, fragment = BROKEN_SNAPSHOTS[case]
    snap = tmp_path / "broken.json.gz"
    snap.write_bytes(data)
    assert snapshot_mod.is_snapshot(snap)
    shim = tmp_path / "libshim.so"
    shim.write_bytes(tiny)
    # The fixture shim exports aoti_torch_empty_strided, so every lookup path is taken.
    line = one_line_error(cli("check", "--shim", str(shim), "--against", str(snap)), 1)
    assert line.startswith(f"aoti-shim: error: {snap}") and fragment in line, line


def test_snapshot_command_errors(tmp_path: Path) -> None:
    out = tmp_path / "s.json.gz"

    def says(*args: str) -> str:
        line = one_line_error(cli("snapshot", *args), 1)
        assert line.startswith("aoti-shim: error: "), line
        return line

    assert "missing" in says(str(tmp_path / "missing"), "-o", str(out))
    (tmp_path / "empty").mkdir()
    assert "not torch's lib/ folder" in says(str(tmp_path / "empty"), "-o", str(out), "--torch-version", "1")
    assert not out.exists()
    notzip = tmp_path / "torch.whl"
    notzip.write_text("nope")
    assert "not a folder or a wheel" in says(str(notzip), "-o", str(out))
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libc10.so").write_bytes(synth_elf(SYNTH_SYMBOLS))
    deep = tmp_path / "no" / "such" / "dir" / "s.json.gz"
    assert "cannot write" in says(str(tmp_path / "lib"), "-o", str(deep), "--torch-version", "1")
