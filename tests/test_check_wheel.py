"""``aoti-shim check --wheel``: a wheel's members checked by role, as the build backend checks them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cli_support import cli, one_line_error
from compile_support import compile_shared
from wheel_support import make_wheel

# A blob that calls libtorch's unprefixed name and exports none: a model, not a shim.
UNPREFIXED_BLOB = """
extern int aoti_torch_get_data_ptr(void);
__attribute__((visibility("default"))) int AOTInductorModelContainerRun(void) { return aoti_torch_get_data_ptr(); }
"""


@pytest.fixture
def wheel(tmp_path: Path, checker_libs: dict[str, Path]) -> Path:
    source = tmp_path / "blob.c"
    source.write_text(UNPREFIXED_BLOB)
    blob = tmp_path / "libblob.so"
    compile_shared(source, blob, ())
    return make_wheel(tmp_path / "dist" / "myrt-0.1.0-py3-none-linux_x86_64.whl", {
        "myrt/libmyrt_shims.so": checker_libs["clean_shim"], "myrt/models/libblob.so": blob, "myrt/__init__.py": ""})


def test_a_blob_in_the_wheel_is_checked_as_a_model(wheel: Path) -> None:
    # At f562a93 the README's gate (check --shim WHEEL) took the blob for a shim: NOT_A_SHIM, a
    # warning, exit 0. The build gate calls it a model, whose unprefixed import is blocking.
    proc = cli("check", "--wheel", str(wheel))
    assert proc.returncode == 8, proc.stdout + proc.stderr
    assert "UNPREFIXED_IMPORT" in proc.stdout and "NOT_A_SHIM" not in proc.stdout
    # Findings name the wheel and the member, never the temp folder they were read from.
    assert "myrt-0.1.0-py3-none-linux_x86_64.whl/myrt/models/libblob.so" in proc.stdout
    assert "aoti-shim-wheel-" not in proc.stdout


def test_a_clean_wheel_passes_with_its_roles_listed(tmp_path: Path, checker_libs: dict[str, Path]) -> None:
    path = make_wheel(
        tmp_path / "pkg-1.0-py3-none-any.whl",
        {"pkg/libshim.so": checker_libs["clean_shim"], "pkg/model.so": checker_libs["good_model"]},
    )
    proc = cli("check", "--wheel", str(path), "-v")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pkg-1.0-py3-none-any.whl/pkg/libshim.so" in proc.stdout
    assert "pkg-1.0-py3-none-any.whl/pkg/model.so" in proc.stdout


def test_a_wheel_with_nothing_to_check_is_a_usage_error(tmp_path: Path) -> None:
    path = make_wheel(tmp_path / "empty-1.0-py3-none-any.whl", {"empty/__init__.py": ""})
    line = one_line_error(cli("check", "--wheel", str(path)), 2)
    assert line == f"aoti-shim: error: --wheel {path}: no ELF member exports or imports shim names: nothing to check"


def test_a_fifo_given_as_a_wheel_is_one_line_not_a_hang(tmp_path: Path) -> None:
    """check --wheel opened a FIFO for reading and waited for a writer forever."""
    path = tmp_path / "pkg-1.0-py3-none-any.whl"
    os.mkfifo(path)
    line = one_line_error(cli("check", "--wheel", str(path), timeout=60), 1)
    assert line == f"aoti-shim: error: {path}: not a regular file"


def test_a_given_prefix_holds_a_blob_checked_without_shims(checker_libs: dict[str, Path]) -> None:
    # The README's CMake quickstart checks its blob with the shims' prefix: a blob built with
    # another prefix fails (at f562a93 a given prefix held no blob when no --shim was given).
    model = str(checker_libs["good_model"])
    same = cli("check", "--model", model, "--prefix", "myrt_")
    assert same.returncode == 0, same.stdout
    other = cli("check", "--model", model, "--prefix", "other_")
    assert other.returncode == 8, other.stdout
    assert "PREFIX_MISMATCH" in other.stdout and "but the given prefix is 'other_'" in other.stdout
