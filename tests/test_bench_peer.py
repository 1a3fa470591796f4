"""The latency bench's peer, (p): another runtime's prefixed shim library, driven with the
same blob renamed to its prefix (issue 38's anchor, ExecuTorch's shims on the GPU). Here the
peer is the reference shims built again by CMake, CPU only, with a prefix of their own, as
a runtime builds its shims; a peer that cannot take the blob, and bad peer options, too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cmake_support import clean_env, tool
from compile_support import compile_shared

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench" / "shim_latency.py"
PEER_PREFIX = "peer_"
# The quickest run that still has rounds to pair: the ratios, not their values, are tested.
QUICK = ("--device", "cpu", "--model", "mlp", "--rounds", "2", "--iterations", "2", "--warmup", "1", "--no-twin",
         "--no-profile", "--sample-seconds", "0", "--alloc-seconds", "0.01")


@pytest.fixture(scope="module")
def peer_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """shims/ built by CMake with AOTI_SHIM_SYMBOL_PREFIX=peer_, no CUDA (about 10 s)."""
    from aoti_shim.paths import cmake_dir

    build = tmp_path_factory.mktemp("peer-shims")
    env = clean_env()
    configure = subprocess.run(
        [tool("cmake"), "-S", str(REPO / "shims"), "-B", str(build), "-G", "Ninja",
         f"-DCMAKE_MAKE_PROGRAM={tool('ninja')}", "-DCMAKE_BUILD_TYPE=Release", "-DAOTI_SHIM_WITH_CUDA=OFF",
         "-DAOTI_SHIM_PROFILING=OFF", f"-DAOTI_SHIM_SYMBOL_PREFIX={PEER_PREFIX}", f"-DAotiShim_DIR={cmake_dir()}"],
        capture_output=True, text=True, env=env, check=False,
    )
    assert configure.returncode == 0, configure.stdout + configure.stderr
    built = subprocess.run([tool("cmake"), "--build", str(build), "-j2", "--target", "aoti_shim"],
                           capture_output=True, text=True, env=env, check=False)
    assert built.returncode == 0, built.stdout + built.stderr
    (build / "build.log").write_text(built.stdout + built.stderr)
    return build / "libaoti_shim.so"


def test_the_shims_build_without_cuda_and_without_a_warning(peer_library: Path) -> None:
    # AOTI_SHIM_WITH_CUDA=OFF is a documented option: helpers only the CUDA paths call are kept
    # for them ([[maybe_unused]]), not warned about.
    log = (peer_library.parent / "build.log").read_text()
    assert "warning:" not in log, log


def _bench(*args: str, cache: Path, tmp: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **({"TMPDIR": str(tmp)} if tmp else {})}
    return subprocess.run([sys.executable, str(BENCH), *args, "--cache-dir", str(cache)], capture_output=True,
                          text=True, timeout=600, check=False, env=env)


@pytest.mark.compiles(("mlp", "binary"))
def test_the_peer_runs_the_same_blob_renamed_to_its_prefix(
    peer_library: Path, smoke_cache: Path, tmp_path: Path
) -> None:
    out = tmp_path / "bench.json"
    done = _bench(*QUICK, "--peer-shims", str(peer_library), "--peer-name", "demo runtime", "--json", str(out),
                  cache=smoke_cache)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["header"]["peer (p)"] == f"demo runtime: {peer_library}, prefix {PEER_PREFIX}"
    (mlp,) = report["models"]
    assert mlp["notes"] == {} and mlp["error"] == ""
    # Timed in every round beside (a) and (b), and as right as they are.
    assert mlp["latency"]["p"]["median_us"] > 0
    assert mlp["ratios"]["a/p"]["rounds"] == 2 and mlp["ratios"]["p/b"]["rounds"] == 2
    assert mlp["max_abs"]["p"] == pytest.approx(mlp["max_abs"]["a"], abs=1e-6)
    table = done.stdout.splitlines()
    columns = ["model", "(a)", "(b)", "(b')", "(c)", "(g)", "(g')", "(p)", "p90"]
    assert any(line.split()[:9] == columns for line in table), done.stdout
    assert "(p) a peer's shims, same blob" in done.stdout and "(a)/(p)" in done.stdout


@pytest.mark.compiles(("mlp", "binary"))
def test_a_peer_that_cannot_take_the_blob_is_a_note_not_a_failed_row(smoke_cache: Path, tmp_path: Path) -> None:
    stub = tmp_path / "libstub_peer.so"
    compile_shared(REPO / "fixtures" / "bench" / "stub_peer.c", stub)
    out = tmp_path / "bench.json"
    done = _bench(*QUICK, "--peer-shims", str(stub), "--json", str(out), cache=smoke_cache)
    assert done.returncode == 0, done.stderr[-3000:]
    (mlp,) = json.loads(out.read_text())["models"]
    # Renamed to stub_, the blob imports what the stub lacks: it was not bound to ours instead.
    note = mlp["notes"]["p"]
    assert note.startswith("its blob did not load: cannot load ") and "stub_aoti_torch_" in note, note
    assert "p" not in mlp["latency"] and "a" in mlp["latency"] and "b" in mlp["latency"]
    assert "(p) a peer's shims, same blob not measured: its blob did not load" in done.stdout
    assert "(a)/(p)" not in done.stdout


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--peer-shims", "/no/such/libpeer.so"), "--peer-shims /no/such/libpeer.so: no such file"),
        (("--peer-shims", "/"), "--peer-shims /: not a file"),
        (("--peer-name", "x"), "--peer-prefix and --peer-name need --peer-shims"),
        (("--peer-shims", "{ours}"), "is ours too"),
        (("--peer-shims", "{ours}", "--peer-prefix", "aotishim_"), "is ours too"),
    ],
)
def test_bad_peer_options_are_one_line_and_exit_2(options: tuple[str, ...], message: str, tmp_path: Path) -> None:
    from aoti_shim.paths import shim_library

    args = [a.replace("{ours}", str(shim_library())) for a in options]
    done = _bench("--device", "cpu", "--model", "mlp", *args, cache=tmp_path / "cache", tmp=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("shim_latency: error: "), done.stderr
    assert message in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # refused before any folder was made
