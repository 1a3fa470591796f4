"""``aoti-shim rewrite-imports``: the binary route, on real ELF files."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_support import cli, one_line_error
from smoke_support import PREFIX, build_fake_libs, compiled_mlp

from aoti_shim.checks.elf import ElfImage


@pytest.fixture(scope="module")
def fake(tmp_path_factory: pytest.TempPathFactory):
    return build_fake_libs(tmp_path_factory.mktemp("rewrite-libs"))


def _shim_imports(path: Path) -> set[str]:
    with ElfImage(path) as image:
        return {n for n in image.imports() if "aoti_torch_" in n}


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


def _load_and_call(blob: Path, *globals_: Path) -> int:
    """Load ``globals_`` RTLD_GLOBAL and then ``blob``, in a child; the blob's answer."""
    script = textwrap.dedent(
        """
        import ctypes, os, sys
        for lib in sys.argv[2:]:
            ctypes.CDLL(lib, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
        blob = ctypes.CDLL(sys.argv[1], mode=os.RTLD_LOCAL | os.RTLD_NOW)
        blob.smoke_model_run.restype = ctypes.c_int64
        print(blob.smoke_model_run())
        """
    )
    proc = subprocess.run([sys.executable, "-c", script, str(blob), *map(str, globals_)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.strip())


# Exports a model entry point, imports one shim and one libc function, and holds a shim's
# name as data: only the shim import may change.
_ONLY_IMPORTS_BLOB = """
#include <stdio.h>
extern int aoti_torch_get_dim(void*, long*);
const char aoti_shim_test_note[] = "calls aoti_torch_get_dim";
__attribute__((visibility("default"))) int AOTInductorModelContainerRun(void) {
  long d; puts(aoti_shim_test_note); return aoti_torch_get_dim(0, &d);
}
"""


def test_rewrite_renames_only_the_shim_imports(tmp_path: Path) -> None:
    from compile_support import compile_shared

    source = tmp_path / "blob.c"
    source.write_text(_ONLY_IMPORTS_BLOB)
    blob, out = tmp_path / "libblob.so", tmp_path / "out.so"
    compile_shared(source, blob)
    done = cli("rewrite-imports", str(blob), "--prefix", PREFIX, "-o", str(out))
    assert done.returncode == 0, done.stderr
    with ElfImage(blob) as before, ElfImage(out) as after:
        assert dict(after.exports().items()) == dict(before.exports().items())
        renamed = {(f"{PREFIX}{n}" if n.startswith("aoti_torch_") else n): s for n, s in before.imports().items()}
        assert set(after.imports()) == set(renamed) and any(n.startswith("puts") for n in after.imports())
        assert f"{PREFIX}aoti_torch_get_dim" in after.imports() and "aoti_torch_get_dim" not in after.imports()
    # The name as data (a string the blob prints) is left as it was.
    assert out.read_bytes().count(b"calls aoti_torch_get_dim\0") == blob.read_bytes().count(b"calls aoti_torch_get_dim\0") == 1


@pytest.mark.parametrize("mode", [0o755, 0o640])
def test_rewrite_renames_imports_and_keeps_the_mode(fake, tmp_path: Path, mode: int) -> None:
    blob = tmp_path / "model.so"
    blob.write_bytes(fake.blob.read_bytes())
    blob.chmod(mode)
    out = tmp_path / "model.prefixed.so"
    proc = cli("rewrite-imports", str(blob), "--prefix", PREFIX, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "renamed 2 imports" in proc.stdout
    assert _shim_imports(out) == {f"{PREFIX}aoti_torch_get_dim", f"{PREFIX}aoti_torch_dtype_float32"}
    assert _shim_imports(blob) == {"aoti_torch_get_dim", "aoti_torch_dtype_float32"}  # input untouched
    assert stat.S_IMODE(out.stat().st_mode) == mode
    assert _leftovers(tmp_path) == []


def test_rewritten_blob_binds_to_the_shims_not_to_a_global_libtorch(fake, tmp_path: Path) -> None:
    out = tmp_path / "model.prefixed.so"
    assert cli("rewrite-imports", str(fake.blob), "--prefix", PREFIX, "-o", str(out)).returncode == 0
    # libtorch stand-in (answers 2) global first, then the shims (answer 1): the collision set-up.
    assert _load_and_call(fake.blob, fake.torch, fake.shims) == 2 * 100 + 6  # unprefixed: libtorch wins
    assert _load_and_call(out, fake.torch, fake.shims) == 1 * 100 + 6  # prefixed: the shims


def test_rewrite_in_place_replaces_the_file(fake, tmp_path: Path) -> None:
    blob = tmp_path / "model.so"
    blob.write_bytes(fake.blob.read_bytes())
    blob.chmod(0o700)
    inode = blob.stat().st_ino
    proc = cli("rewrite-imports", str(blob), "--prefix", "myrt_")
    assert proc.returncode == 0, proc.stderr
    assert _shim_imports(blob) == {"myrt_aoti_torch_get_dim", "myrt_aoti_torch_dtype_float32"}
    assert blob.stat().st_ino != inode  # renamed into place, never rewritten in place
    assert stat.S_IMODE(blob.stat().st_mode) == 0o700
    assert _leftovers(tmp_path) == []


def test_already_prefixed_blob_is_refused_and_nothing_is_written(fake, tmp_path: Path) -> None:
    once = tmp_path / "once.so"
    assert cli("rewrite-imports", str(fake.blob), "--prefix", PREFIX, "-o", str(once)).returncode == 0
    twice = tmp_path / "twice.so"
    line = one_line_error(cli("rewrite-imports", str(once), "--prefix", PREFIX, "-o", str(twice)), 1)
    assert "nothing to rename" in line
    assert not twice.exists() and _leftovers(tmp_path) == []


@pytest.mark.parametrize(
    ("case", "exit_code", "needle"),
    [
        ("missing", 1, "no such file"),
        ("not-elf", 1, "not an ELF file"),
        ("truncated-elf", 1, ""),
        ("bad-prefix", 2, "not a C identifier prefix"),
        ("torch-prefix", 2, "aoti_torch_"),
        ("no-prefix", 2, "--prefix"),
        ("out-dir-missing", 1, "cannot write: No such file or directory"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(fake, tmp_path: Path, case: str, exit_code: int, needle: str) -> None:
    blob = tmp_path / "model.so"
    blob.write_bytes(fake.blob.read_bytes())
    out = tmp_path / "out.so"
    args = ["rewrite-imports", str(blob), "--prefix", PREFIX, "-o", str(out)]
    if case == "missing":
        args[1] = str(tmp_path / "absent.so")
    elif case == "not-elf":
        blob.write_text("hello")
    elif case == "truncated-elf":
        blob.write_bytes(fake.blob.read_bytes()[:200])
    elif case == "bad-prefix":
        args[3] = "1bad-"
    elif case == "torch-prefix":
        args[3] = "aoti_torch_x"
    elif case == "no-prefix":
        args = ["rewrite-imports", str(blob)]
    elif case == "out-dir-missing":
        out = tmp_path / "nowhere" / "out.so"
        args[-1] = str(out)
    line = one_line_error(cli(*args), exit_code)
    assert needle in line
    assert not out.exists()
    assert _leftovers(tmp_path) == []


def test_unwritable_output_folder_is_one_line(fake, tmp_path: Path) -> None:
    # /proc takes no new files, even from root: mkstemp fails there.
    line = one_line_error(cli("rewrite-imports", str(fake.blob), "--prefix", PREFIX, "-o", "/proc/aoti-shim-out.so"), 1)
    assert "-o /proc/aoti-shim-out.so: cannot write: " in line and "(in /proc)" in line


def test_worker_that_answers_nothing_is_one_line(fake, tmp_path: Path) -> None:
    # A worker that dies without a word (here: exits 0 at startup) must not become a TypeError.
    hook = tmp_path / "hook"
    hook.mkdir()
    # A LIEF that ends the worker at import: on PYTHONPATH, the worker gets the caller's own path.
    (hook / "lief.py").write_text("import os\nos._exit(0)\n")
    blob = tmp_path / "model.so"
    blob.write_bytes(fake.blob.read_bytes())
    out = tmp_path / "out.so"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))}
    line = one_line_error(cli("rewrite-imports", str(blob), "--prefix", PREFIX, "-o", str(out), env=env), 1)
    assert "the LIEF worker reported no result (exit status 0)" in line
    assert not out.exists() and _leftovers(tmp_path) == []


def test_rewritten_compiled_model_passes_the_checker(smoke_cache: Path, tmp_path: Path) -> None:
    """The real thing: torch's compiled MLP, every aoti_torch_* import renamed."""
    artefact = compiled_mlp(smoke_cache)
    before = _shim_imports(artefact.blob)
    assert len(before) >= 15 and all(n.startswith("aoti_torch_") for n in before)
    out = tmp_path / "mlp.so"
    proc = cli("rewrite-imports", str(artefact.blob), "--prefix", PREFIX, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert _shim_imports(out) == {PREFIX + n for n in before}
    check = cli("check", "--model", str(out), "--against", "torch", "--prefix", PREFIX)
    assert "UNPREFIXED_IMPORT" not in check.stdout
    assert check.returncode & 8 == 0, check.stdout
    unchecked = cli("check", "--model", str(artefact.blob), "--against", "torch", "--prefix", PREFIX)
    assert "UNPREFIXED_IMPORT" in unchecked.stdout and unchecked.returncode & 8
    # Still the model: its entry points are exported as before.
    with ElfImage(out) as image:
        assert image.find_export("AOTInductorModelContainerCreateWithDevice") is not None
