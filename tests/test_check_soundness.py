"""No wrong OK: a check that passes means the pair loads, whatever prefixes were used.

The dynamic linker is the ground truth: each case dlopens the shim (RTLD_GLOBAL) and
then the blob (RTLD_NOW) in a child process, and the checker must block exactly the
pairs the linker refuses.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aoti_shim.checks import CheckSettings, render, run_check
from aoti_shim.checks.abi.prefix import validate
from aoti_shim.errors import UsageError
from cli_support import CLI
from compile_support import compile_shared

NAMES = ("dtype_float32", "device_type_cpu")


def _shim(tmp: Path, prefix: str) -> Path:
    src = tmp / f"shim_{prefix or 'none'}.c"
    src.write_text(
        "#include <stdint.h>\n"
        + "".join(
            f'__attribute__((visibility("default"))) int32_t {prefix}aoti_torch_{n}(void) {{ return 6; }}\n'
            for n in NAMES
        )
    )
    out = tmp / f"libshim_{prefix or 'none'}.so"
    compile_shared(src, out)
    return out


def _blob(tmp: Path, prefix: str) -> Path:
    src = tmp / f"blob_{prefix or 'none'}.c"
    src.write_text(
        "#include <stdint.h>\n"
        + "".join(f"extern int32_t {prefix}aoti_torch_{n}(void);\n" for n in NAMES)
        + '__attribute__((visibility("default"))) int32_t AOTInductorModelContainerRun(void) { return '
        + " + ".join(f"{prefix}aoti_torch_{n}()" for n in NAMES)
        + "; }\n"
    )
    out = tmp / f"libblob_{prefix or 'none'}.so"
    compile_shared(src, out)
    return out


def _loads(shim: Path, blob: Path) -> subprocess.CompletedProcess[str]:
    code = (
        "import ctypes, sys\n"
        "ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)\n"
        "ctypes.CDLL(sys.argv[2])\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(shim), str(blob)], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("soundness")
    return {
        "shim_aotishim_": _shim(tmp, "aotishim_"),
        "shim_myrt_": _shim(tmp, "myrt_"),
        "blob_aotishim_": _blob(tmp, "aotishim_"),
        "blob_myrt_": _blob(tmp, "myrt_"),
        "blob_myrt": _blob(tmp, "myrt"),
    }


@pytest.mark.parametrize(
    ("shim", "blob", "prefix"),
    [
        ("shim_aotishim_", "blob_aotishim_", None),
        ("shim_aotishim_", "blob_aotishim_", "aotishim_"),
        ("shim_aotishim_", "blob_myrt_", None),
        ("shim_aotishim_", "blob_myrt_", "aotishim_"),
        ("shim_myrt_", "blob_myrt", None),
        ("shim_myrt_", "blob_myrt", "myrt"),
        ("shim_myrt_", "blob_myrt", "myrt_"),
    ],
)
def test_check_passes_only_pairs_the_dynamic_linker_loads(built, shim, blob, prefix):
    loaded = _loads(built[shim], built[blob])
    report = run_check(CheckSettings(shims=(str(built[shim]),), models=(str(built[blob]),), prefix=prefix))
    if loaded.returncode == 0:
        assert report.exit_code() == 0, render(report)
    else:
        assert "undefined symbol" in loaded.stderr
        assert report.exit_code() == 8, render(report)


def test_a_blob_rewritten_to_another_prefix_is_blocking_and_names_both(built):
    report = run_check(
        CheckSettings(shims=(str(built["shim_aotishim_"]),), models=(str(built["blob_myrt_"]),), against=("torch",))
    )
    mismatch = [f for f in report.findings if f.rule == "PREFIX_MISMATCH"]
    assert len(mismatch) == 1, render(report)
    assert "'myrt_'" in mismatch[0].message and "'aotishim_'" in mismatch[0].message
    assert mismatch[0].symbol == "myrt_aoti_torch_device_type_cpu"
    assert "undefined symbol: myrt_aoti_torch_" in _loads(built["shim_aotishim_"], built["blob_myrt_"]).stderr


def test_a_prefix_without_its_underscore_is_blocking(built):
    """--prefix myrt against shims carrying myrt_: the blob's myrtaoti_torch_* bind to nothing."""
    done = subprocess.run(
        [*CLI, "check", "--shim", str(built["shim_myrt_"]), "--model", str(built["blob_myrt"]), "--prefix", "myrt"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 8, done.stdout + done.stderr
    assert "PREFIX_MISMATCH" in done.stdout
    assert "the given prefix 'myrt' is exported by no shim library; the shims carry 'myrt_'" in done.stdout


def test_a_given_prefix_no_shim_exports_is_blocking(built):
    report = run_check(CheckSettings(shims=(str(built["shim_myrt_"]),), prefix="other_"))
    assert [(f.rule, f.symbol) for f in report.findings] == [("PREFIX_MISMATCH", "other_aoti_torch_*")]
    assert "'other_'" in report.findings[0].message and "'myrt_'" in report.findings[0].message


def test_built_prefix_reads_what_was_built(built):
    from aoti_shim.checks.abi.prefix import built_prefix

    assert built_prefix(built["shim_aotishim_"]) == "aotishim_"
    assert built_prefix(built["blob_myrt_"]) is None  # imports carry no export prefix


@pytest.mark.parametrize("bad", ["myrt_\n", "myrt_\r\n", "my rt_", "", "9_", "aoti_torch_x_", "myrt_\x00"])
def test_a_prefix_is_a_c_identifier_matched_in_full(bad):
    with pytest.raises(UsageError):
        validate(bad)


def test_the_cli_refuses_a_prefix_with_a_trailing_newline(built):
    for command in (["check", "--shim", str(built["shim_myrt_"])], ["rewrite-imports", str(built["blob_myrt_"])]):
        done = subprocess.run([*CLI, *command, "--prefix", "myrt_\n"], capture_output=True, text=True, check=False)
        assert done.returncode == 2, done.stderr
        assert "is not a C identifier prefix" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_the_plugin_refuses_a_prefix_with_a_trailing_newline():
    from aoti_shim.plugin.prefix import requested_prefix

    with pytest.raises(UsageError, match="not a C identifier prefix"):
        requested_prefix({}, {"aoti-shim.prefix": "myrt_\n"}, {})
    with pytest.raises(UsageError, match="not a C identifier prefix"):
        requested_prefix({}, {}, {"AOTI_SHIM_PREFIX": "myrt_\n"})


def test_one_file_as_shim_and_model_is_not_its_own_duplicate(built):
    shim = str(built["shim_myrt_"])
    report = run_check(CheckSettings(shims=(shim,), models=(shim,)))
    assert not [f for f in report.findings if f.rule == "DUPLICATE_DEFINER"], render(report)
