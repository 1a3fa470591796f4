"""The blob loader: every load is a private copy, nothing is left behind."""

from __future__ import annotations

import ctypes
import os
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from aoti_shim.errors import InputError
from aoti_shim.smoke.loader import LoadSettings, load_private_copy, memfd_available
from compile_support import compile_shared
from shims_support import reference_library
from smoke_support import compiled_mlp

MODES = [pytest.param(False, id="private-file")]
if memfd_available():
    MODES.insert(0, pytest.param(True, id="memfd"))


def _bump(blob) -> int:
    fn = blob.library.smoke_bump
    fn.restype = ctypes.c_int
    return fn()


@pytest.mark.parametrize("use_memfd", MODES)
def test_two_loads_of_one_blob_are_separate_copies(fake, tmp_path: Path, use_memfd: bool) -> None:
    settings = LoadSettings(use_memfd=use_memfd, scratch_dir=tmp_path)
    with load_private_copy(fake.counter, settings) as a, load_private_copy(fake.counter, settings) as b:
        assert a.path != b.path
        # Separate state: a shared load would count 1 then 2.
        assert (_bump(a), _bump(a), _bump(b)) == (1, 2, 1)
        assert a.uses_memfd is use_memfd
    assert list(tmp_path.iterdir()) == []


def test_private_file_copy_is_owner_only_and_removed_on_close(fake, tmp_path: Path) -> None:
    blob = load_private_copy(fake.counter, LoadSettings(use_memfd=False, scratch_dir=tmp_path))
    copy = Path(blob.path)
    assert copy.parent.parent == tmp_path
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert stat.S_IMODE(copy.parent.stat().st_mode) == 0o700
    blob.close()
    assert blob.closed
    assert not copy.exists() and list(tmp_path.iterdir()) == []
    blob.close()  # closing twice is harmless


def test_forgotten_handle_is_cleaned_up_when_collected(fake, tmp_path: Path) -> None:
    blob = load_private_copy(fake.counter, LoadSettings(use_memfd=False, scratch_dir=tmp_path))
    assert any(tmp_path.iterdir())
    del blob
    import gc

    gc.collect()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("use_memfd", MODES)
def test_failed_load_leaves_nothing(tmp_path: Path, use_memfd: bool) -> None:
    not_elf = tmp_path / "model.so"
    not_elf.write_text("not a shared library")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    fds_before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(InputError, match="cannot load"):
        load_private_copy(not_elf, LoadSettings(use_memfd=use_memfd, scratch_dir=scratch))
    assert list(scratch.iterdir()) == []
    assert set(os.listdir("/proc/self/fd")) <= fds_before | {str(n) for n in range(3)}


def test_missing_blob_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read blob"):
        load_private_copy(tmp_path / "absent.so", LoadSettings(use_memfd=False, scratch_dir=tmp_path))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("use_memfd", MODES)
def test_short_writes_still_copy_the_whole_blob(
    fake, tmp_path: Path, use_memfd: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = os.write

    def short_write(fd: int, data) -> int:  # as a write interrupted by a signal
        return real_write(fd, bytes(data[:1000]))

    monkeypatch.setattr(os, "write", short_write)
    with load_private_copy(fake.counter, LoadSettings(use_memfd=use_memfd, scratch_dir=tmp_path)) as blob:
        assert os.path.getsize(blob.path) == fake.counter.stat().st_size
        assert _bump(blob) == 1


_LOAD_UNDER_A_SIZE_LIMIT = """
import resource, signal, sys
from pathlib import Path
from aoti_shim.errors import InputError
from aoti_shim.smoke.loader import LoadSettings, load_private_copy
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # a write past it fails, as on a full disk
try:
    load_private_copy(Path(sys.argv[1]), LoadSettings(use_memfd=sys.argv[2] == "1", scratch_dir=Path(sys.argv[3])))
except InputError as e:
    print(e)
"""


@pytest.mark.parametrize("use_memfd", MODES)
def test_write_error_is_reported_as_a_write(fake, tmp_path: Path, use_memfd: bool) -> None:
    assert fake.counter.stat().st_size > 4096
    proc = subprocess.run(
        [
            sys.executable,
            "-P",
            "-c",
            _LOAD_UNDER_A_SIZE_LIMIT,
            str(fake.counter),
            "1" if use_memfd else "0",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.startswith(f"cannot write the private copy of blob {fake.counter}: File too large")
    assert list(tmp_path.iterdir()) == []


def test_missing_scratch_folder_is_an_input_error(fake, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot copy blob .* into .*missing: No such file or directory"):
        load_private_copy(fake.counter, LoadSettings(use_memfd=False, scratch_dir=tmp_path / "missing"))


@pytest.mark.parametrize("use_memfd", MODES)
def test_concurrent_loads_get_their_own_copies(fake, tmp_path: Path, use_memfd: bool) -> None:
    settings = LoadSettings(use_memfd=use_memfd, scratch_dir=tmp_path)
    threads, barrier = 8, threading.Barrier(8)
    results: list[tuple[str, int]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def worker() -> None:
        try:
            barrier.wait()
            with load_private_copy(fake.counter, settings) as blob:
                first = _bump(blob)
                barrier.wait()  # all copies loaded at once before any is closed
                with lock:
                    results.append((blob.path, first))
        except BaseException as e:  # noqa: BLE001 - re-raised in the main thread
            errors.append(e)

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(60)
    assert not errors, errors
    assert len({path for path, _ in results}) == threads
    assert all(first == 1 for _, first in results)
    assert list(tmp_path.iterdir()) == []


_REAL_BLOB_SCRIPT = textwrap.dedent(
    """
    import ctypes, json, os, sys, threading
    from pathlib import Path
    import torch
    from aoti_shim.smoke.compare import compare
    from aoti_shim.smoke.loader import LoadSettings, load_private_copy
    from aoti_shim.smoke.run_child import promote_libtorch
    from aoti_shim.smoke.runner import Container, RunSettings, ShimApi, run_container

    blob, io_file, shim_lib, prefix, use_memfd, scratch = sys.argv[1:]
    libtorch = promote_libtorch("cpu")
    if shim_lib:
        api = ShimApi(ctypes.CDLL(shim_lib, mode=os.RTLD_GLOBAL | os.RTLD_NOW), prefix)
    else:
        api = ShimApi(libtorch, "")
    io = torch.load(io_file)
    settings = LoadSettings(use_memfd=use_memfd == "1", scratch_dir=Path(scratch))
    barrier = threading.Barrier(4)
    answers = []

    def worker():
        try:
            barrier.wait()
            with load_private_copy(Path(blob), settings) as loaded:
                container = Container(loaded.library, "cpu", None)
                barrier.wait()
                outcome = run_container(api, container, list(io["inputs"]), RunSettings(warmup=0, iterations=3))
                container.close()
                c = compare(outcome.outputs, io["expected"])
                answers.append([loaded.path, c.within_tolerance, c.max_abs])
        except BaseException as e:
            answers.append(["error", repr(e), 0])

    pool = [threading.Thread(target=worker) for _ in range(4)]
    with torch.no_grad():
        for t in pool: t.start()
        for t in pool: t.join(120)
    print(json.dumps(answers))
    """
)


@pytest.mark.compiles(("mlp", "binary"))
@pytest.mark.parametrize("use_memfd", MODES)
@pytest.mark.parametrize("binding", ["shims", "libtorch"])
def test_threads_run_one_real_blob_concurrently(
    smoke_cache: Path, tmp_path: Path, use_memfd: bool, binding: str
) -> None:
    """Four threads load the same compiled model at once; each runs its own copy and
    gets eager's answer; no copy is left on disk."""
    import json

    artefact = compiled_mlp(smoke_cache)
    if binding == "shims":
        from aoti_shim.smoke.rewrite import RewriteSettings, rewrite_imports

        blob = tmp_path / "mlp.prefixed.so"
        rewrite_imports(RewriteSettings(blob=artefact.blob, prefix="aotishim_", output=blob))
        shim_lib, prefix = str(reference_library()), "aotishim_"
    else:
        blob, shim_lib, prefix = artefact.blob, "", ""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", _REAL_BLOB_SCRIPT, str(blob), str(artefact.io_file), shim_lib, prefix,
         "1" if use_memfd else "0", str(scratch)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    answers = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(answers) == 4
    assert all(ok is True for _, ok, _ in answers), answers
    assert len({path for path, _, _ in answers}) == 4
    assert all(err < 1e-4 for _, _, err in answers)
    assert list(scratch.iterdir()) == []


def test_a_copy_that_stays_mapped_never_shadows_the_next_blob(tmp_path: Path) -> None:
    # A library the dynamic linker cannot unload (as blobs with unique symbols or
    # libgomp are) keeps its /proc/self/fd/N name; a reused N must not hand the
    # next, different blob the old library.
    libs = {}
    for name, value in (("sticky", 1), ("other", 100)):
        src = tmp_path / f"{name}.c"
        src.write_text(f"int smoke_bump(void) {{ return {value}; }}\n")
        libs[name] = tmp_path / f"lib{name}.so"
        compile_shared(src, libs[name], ("-Wl,-z,nodelete",))
    for _ in range(3):
        with load_private_copy(libs["sticky"]) as first:
            assert _bump(first) == 1
        with load_private_copy(libs["other"]) as second:
            assert _bump(second) == 100
