"""Issue 33 point 5: the stable C ABI's ``torch_*`` functions are shim ABI too.

libtorch exports the C functions ``torch/csrc/stable/c/shim.h`` declares (``torch_from_blob``,
``torch_call_dispatcher``...) and stable-ABI extensions import them: a runtime defining one
collides as with an ``aoti_torch_*`` name. The shipped list, the rename header, ``check``,
``scan`` and ``rewrite-imports`` all treat them so; each on real compiled libraries here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from aoti_shim.checks.abi import prefix as prefixes
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.torch_names import shipped_names
from cli_support import cli
from cmake_support import REPO, clean_env
from compile_support import compile_object, compile_shared

HEADER = REPO / "cmake" / "include" / "aoti_shim_rename.h"
PREFIX = "myrt_"


def _library(tmp_path: Path, name: str, source: str) -> Path:
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    out = tmp_path / f"lib{name}.so"
    compile_shared(src, out)
    return out


def _imports(library: Path) -> set[str]:
    with ElfImage(library) as image:
        return set(image.imports())


def _torch_exports(torch_lib: Path) -> set[str]:
    nm = shutil.which("nm")
    assert nm, "nm (binutils) is needed"
    done = subprocess.run(
        [nm, "-D", "--defined-only", str(torch_lib / "libtorch_cpu.so")], capture_output=True, text=True, check=True
    )
    return {
        line.split()[-1] for line in done.stdout.splitlines() if line.split() and line.split()[-1].startswith("torch_")
    }


def test_the_list_holds_the_installed_torchs_stable_abi_and_nothing_else(torch_lib: Path) -> None:
    from aoti_shim.stable_abi import stable_names_in_include
    from aoti_shim.torch_location import locate

    shipped = shipped_names().names
    found = locate()
    assert found is not None
    declared = stable_names_in_include(found.include)
    # torch 2.13's header declares 56 (6 behind USE_CUDA); its libtorch_cpu.so exports 50 of them.
    assert {"torch_from_blob", "torch_call_dispatcher"} <= declared <= shipped
    assert _torch_exports(torch_lib) <= declared
    # A torch_* C export no stable/c header declares is no ABI: not listed, not a shim name.
    assert "torch_c_dynamo_eval_frame_init" not in shipped
    assert not prefixes.is_shim_name("torch_c_dynamo_eval_frame_init")
    assert prefixes.is_unprefixed("torch_from_blob") and prefixes.prefix_of(f"{PREFIX}torch_from_blob") == PREFIX


def test_the_rename_header_renames_a_torch_definition_and_call(tmp_path: Path) -> None:
    nm = shutil.which("nm")
    assert nm, "nm (binutils) is needed"
    source = tmp_path / "t.c"
    source.write_text(
        "#include <stdint.h>\n"
        "int32_t torch_call_dispatcher(const char* op, const char* overload, void* stack, uint64_t v);\n"
        "int32_t torch_from_blob(void* data) { return torch_call_dispatcher(\"aten::x\", \"\", data, 0); }\n"
    )
    obj = tmp_path / "t.o"
    compile_object(source, obj, ("-DAOTI_SHIM_SYMBOL_PREFIX=zz_", "-include", str(HEADER)), env=clean_env())
    symbols = subprocess.run([nm, str(obj)], capture_output=True, text=True, check=True).stdout
    assert "T zz_torch_from_blob" in symbols and "U zz_torch_call_dispatcher" in symbols, symbols
    assert " torch_" not in symbols


def test_check_flags_an_unprefixed_torch_export_as_an_aoti_torch_one(tmp_path: Path, torch_lib: Path) -> None:
    shim = _library(
        tmp_path,
        "shim",
        "int myrt_aoti_torch_get_dim(void* t, long* d) { return 0; }\nint torch_from_blob(void* p) { return 0; }\n",
    )
    done = cli("check", "--shim", str(shim), "--against", "torch", "--format", "json")
    assert done.returncode == 8, done.stderr
    found = {(f["rule"], f["symbol"]) for f in json.loads(done.stdout)["findings"]}
    assert ("COLLISION", "torch_from_blob") in found, found
    assert ("UNPREFIXED_EXPORT", "torch_from_blob") in found, found
    assert not any(symbol == "myrt_aoti_torch_get_dim" for _rule, symbol in found)


def test_scan_counts_an_importer_of_torch_call_dispatcher_as_a_consumer(tmp_path: Path) -> None:
    lib = _library(
        tmp_path,
        "ext",
        "int torch_call_dispatcher(const char*, const char*, void*, unsigned long);\n"
        "int run(void* s) { return torch_call_dispatcher(\"aten::add\", \"Tensor\", s, 0); }\n",
    )
    site = tmp_path / "site-packages"
    info = site / "ext_pkg-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "ext_pkg").mkdir()
    shutil.copy(lib, site / "ext_pkg" / "_ops.so")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ext-pkg\nVersion: 1.0\n")
    (info / "RECORD").write_text(
        "ext_pkg/_ops.so,,\next_pkg-1.0.dist-info/METADATA,,\next_pkg-1.0.dist-info/RECORD,,\n"
    )
    done = cli("scan", "-v", str(site), timeout=120)  # -v: the per-library listing
    assert done.returncode == 0, done.stderr
    assert "ext-pkg 1.0 (" in done.stdout and "\n  ext_pkg/_ops.so: stable-ABI consumer\n" in done.stdout, done.stdout


def test_rewrite_imports_renames_a_torch_import(tmp_path: Path) -> None:
    blob = _library(
        tmp_path,
        "blob",
        "int aoti_torch_get_dim(void*, long*);\nint torch_from_blob(void*);\n"
        "int run(void* t, long* d) { return aoti_torch_get_dim(t, d) + torch_from_blob(t); }\n",
    )
    out = tmp_path / "prefixed.so"
    done = cli("rewrite-imports", str(blob), "--prefix", PREFIX, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "renamed 2 imports" in done.stdout
    assert {f"{PREFIX}aoti_torch_get_dim", f"{PREFIX}torch_from_blob"} <= _imports(out)
    assert not {"aoti_torch_get_dim", "torch_from_blob"} & _imports(out)


@pytest.mark.parametrize("name", ["torch_from_blob", "myrt_torch_from_blob", "aoti_torch_x", "myrt_aoti_torch_x"])
def test_the_cheap_filter_keeps_every_shim_name(name: str) -> None:
    # Callers test may_be_shim_name first (C-fast): a shim name it dropped would go unjudged.
    assert prefixes.may_be_shim_name(name) and prefixes.is_shim_name(name)
