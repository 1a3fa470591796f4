"""The native route, before torch has it: torch's own prefix header and its Inductor option.

PyTorch's open PR adds ``aot_inductor.shim_symbol_prefix`` and a header guarded by
``AOTI_TORCH_SHIM_SYMBOL_PREFIX_H``; no released torch has either, so a stand-in plays torch
(fixtures/native_prefix: a header of that shape; a child whose Inductor config gains the option).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cmake_support import REPO, clean_env
from compile_support import compile_shared

HEADER = REPO / "cmake" / "include" / "aoti_shim_rename.h"
STAND_IN = REPO / "fixtures" / "native_prefix"
TORCH_HEADER = STAND_IN / "torch" / "csrc" / "inductor" / "aoti_torch" / "c" / "shim_symbol_prefix.h"


def _exports(library: Path) -> set[str]:
    done = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in done.stdout.splitlines() if line.strip()}


@pytest.mark.parametrize("order", ["torch-first", "ours-first"])
def test_both_prefix_headers_together_define_no_macro_twice(tmp_path: Path, order: str) -> None:
    headers = [TORCH_HEADER, HEADER] if order == "torch-first" else [HEADER, TORCH_HEADER]
    includes = tuple(arg for h in headers for arg in ("-include", str(h)))
    library = tmp_path / "libboth.so"
    done = compile_shared(
        STAND_IN / "shims.c",
        library,
        ("-Werror", "-Wall", "-DAOTI_SHIM_SYMBOL_PREFIX=myrt_", *includes),
        check=False,
        env=clean_env(),
    )
    assert done.returncode == 0, done.stderr
    # torch's name through whichever header came first, ours through ours: both prefixed.
    assert _exports(library) >= {"myrt_aoti_torch_dtype_float32", "myrt_aoti_torch_dtype_int64"}
    assert not {n for n in _exports(library) if n.startswith("aoti_torch_")}


def test_the_stand_in_redefines_without_the_guards(tmp_path: Path) -> None:
    # The control: a header that defines every name unguarded (the shape before) redefines
    # torch's macros, an error under -Werror.
    unguarded = tmp_path / "unguarded.h"
    unguarded.write_text(
        "#define AOTI_SHIM_P_(a, b) a##b\n#define AOTI_SHIM_P(a, b) AOTI_SHIM_P_(a, b)\n"
        "#define aoti_torch_dtype_float32 AOTI_SHIM_P(AOTI_SHIM_SYMBOL_PREFIX, aoti_torch_dtype_float32)\n"
    )
    done = compile_shared(
        STAND_IN / "shims.c",
        tmp_path / "lib.so",
        ("-Werror", "-DAOTI_SHIM_SYMBOL_PREFIX=myrt_", "-include", str(TORCH_HEADER), "-include", str(unguarded)),
        check=False,
        env=clean_env(),
    )
    assert done.returncode != 0 and "redefined" in done.stderr, done.stderr


# A child whose torch has the option: the config module gains aot_inductor.shim_symbol_prefix
# (a string, default empty, as the PR declares it) before the worker asks for its options.
_CHILD = """
import json, sys
import torch._inductor.config as config
from torch.utils._config_module import _Config, _ConfigEntry
if sys.argv[1] == "native":
    name = "aot_inductor.shim_symbol_prefix"
    config._config[name] = _ConfigEntry(_Config(default=""), name)
from aoti_shim.smoke.compile_worker import inductor_options
print(json.dumps(inductor_options("cpu", sys.argv[2], prefix="myrt_")))
"""


def _options(torch_kind: str, route: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, torch_kind, route], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_source_route_sets_torchs_own_prefix_option_when_torch_has_it(torch_module) -> None:
    assert _options("native", "source")["aot_inductor.shim_symbol_prefix"] == "myrt_"
    # The binary route renames a compiled blob: its compile stays unprefixed (it is the control's too).
    assert "aot_inductor.shim_symbol_prefix" not in _options("native", "binary")
    # Today's torch: no such option, nothing set.
    assert "aot_inductor.shim_symbol_prefix" not in _options("released", "source")


def _natively_prefixed_package(tmp: Path, prefix: str) -> Path:
    """The recorded CPU package as torch's option would record it: the prefix among its definitions."""
    import shutil

    from cmake_support import RECORDED_PACKAGE

    package = tmp / "package"
    shutil.copytree(RECORDED_PACKAGE, package)
    (flags_file,) = package.rglob("*_compile_flags.json")
    flags = json.loads(flags_file.read_text())
    flags["definitions"].append(f"AOTI_SHIM_SYMBOL_PREFIX={prefix}")
    flags_file.write_text(json.dumps(flags))
    return package


@pytest.mark.parametrize(("made_with", "ok"), [("myrt_", True), ("other_", False)])
def test_a_natively_prefixed_package_builds_with_its_own_prefix_only(
    cmake_project, tmp_path: Path, made_with: str, ok: bool
) -> None:
    from cmake_support import PACKAGES, log, one_line

    package = _natively_prefixed_package(tmp_path, made_with)
    project = cmake_project(
        PACKAGES / "cmake_model", {"AOTI_SHIM_SYMBOL_PREFIX": "myrt_", "FIXTURE_PACKAGE": str(package)}
    )
    configured = project.configure()
    if ok:
        assert configured.returncode == 0, log(configured)
        # The definition is given once, by aoti_shim_add_model (twice would redefine the macro).
        flags = (project.build / "build.ninja").read_text()
        assert flags.count("-DAOTI_SHIM_SYMBOL_PREFIX=myrt_") == flags.count("wrapper.cpp.o: CXX_COMPILER")
    else:
        assert configured.returncode != 0
        assert (
            "aoti_shim_add_model: 'mlp_blob': the package was made with aot_inductor.shim_symbol_prefix 'other_', not "
            "PREFIX 'myrt_'"
            in one_line(configured.stderr)
        )


def test_the_smoke_asks_for_the_native_route_only_where_torch_declares_it(tmp_path: Path) -> None:
    from aoti_shim.smoke.compile import CompileRequest, cache_key, torch_has_native_prefix

    fake = tmp_path / "torch"
    (fake / "_inductor").mkdir(parents=True)
    (fake / "_inductor" / "config.py").write_text("class aot_inductor:\n    package_cpp_only = False\n")
    assert not torch_has_native_prefix(fake)
    (fake / "_inductor" / "config.py").write_text('class aot_inductor:\n    shim_symbol_prefix: str = ""\n')
    assert torch_has_native_prefix(fake)
    assert not torch_has_native_prefix()  # the installed torch (2.13) has no such option
    # A natively prefixed package holds its prefix: each prefix its own cache entry, none for today's torch.
    plain = CompileRequest(model="mlp", device="cpu", route="source")
    assert cache_key(plain) != cache_key(CompileRequest(model="mlp", device="cpu", route="source", prefix="myrt_"))
    assert cache_key(CompileRequest(model="mlp", device="cpu", route="source", prefix="a_")) != cache_key(
        CompileRequest(model="mlp", device="cpu", route="source", prefix="b_")
    )
