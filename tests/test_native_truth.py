"""Ground truth from torch 2.13.0's macOS arm64 and Windows amd64 wheels, recorded once by
tests/native_record.py into fixtures/native/ (each file's ``made_by`` and ``downloaded_by``
say how; nothing here downloads).

The recorder is held to the independent readers here, on a miniature torch built from C
(tests/torch_native_fixtures.py), and must refuse a reader that drops a name; the recorded
facts must say that every reader agreed; and the shim ABI the wheels export is held to the
shipped ELF snapshot of the same torch, the differences named. A few seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import native_record
from aoti_shim.checks.abi.prefix import is_unprefixed
from aoti_shim.checks.pe import facts as pe_facts
from aoti_shim.checks.snapshot import record as snapshot
from torch_native_fixtures import MACOS_LOADED

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "native"
MACOS_FACTS = json.loads((FIXTURES / "torch-2.13.0-macos-arm64-facts.json").read_text())
WINDOWS_FACTS = json.loads((FIXTURES / "torch-2.13.0-win-amd64-facts.json").read_text())
# What torch 2.13.0's macOS arm64 libtorch_cpu lacks of the Linux CPU build's shims: the
# CPU fallbacks of oneDNN (mkldnn) and MKL ops, which that build does not compile.
MACOS_LACKS = {
    "aoti_torch_cpu__linear_pointwise", "aoti_torch_cpu__linear_pointwise_binary", "aoti_torch_cpu__mkl_linear",
    "aoti_torch_cpu__qconv2d_pointwise_binary_tensor", "aoti_torch_cpu__qconv_pointwise_tensor",
    "aoti_torch_cpu__qlinear_pointwise_binary_tensor", "aoti_torch_cpu__qlinear_pointwise_tensor",
    "aoti_torch_cpu_mkldnn__convolution_pointwise", "aoti_torch_cpu_mkldnn__convolution_pointwise_binary",
    "aoti_torch_cpu_mkldnn__convolution_pointwise_binary_", "aoti_torch_cpu_mkldnn__convolution_transpose_pointwise",
    "aoti_torch_cpu_mkldnn_rnn_layer",
}


def test_the_recorder_agrees_with_the_independent_readers_on_a_rebuilt_torch(
    native_torches: dict[str, tuple[Path, Path]],
) -> None:
    mac, problems = native_record.record(native_torches["macos"][1], "mac.json")
    assert problems == []
    cpu = mac["libraries"]["torch/lib/libtorch_cpu.dylib"]
    assert cpu["shim_exports"] == ["aoti_torch_dtype_float32", "aoti_torch_empty_strided"]
    assert len(set(cpu["exports"].values())) == 1 and set(cpu["exports"]) >= {"ours", "LIEF", "llvm-nm-14"}
    extension = mac["libraries"][mac["extension"]]
    assert ["_THP_init", "two_level", "@loader_path/lib/libtorch_python.dylib"] in extension["imports_of"]
    assert set(mac["snapshot"]["libraries"]) == MACOS_LOADED

    win, problems = native_record.record(native_torches["windows"][1], "win.json")
    assert problems == []
    assert win["libraries"]["torch/lib/torch_cpu.dll"]["shim_exports"] == ["aoti_torch_empty_strided"]
    assert ["THP_init", "normal", "torch_python.dll"] in win["libraries"][win["extension"]]["imports_of"]
    assert win["libraries"]["torch/lib/c10.dll"]["exports_by_ordinal_only"] == 1


def test_the_recorder_refuses_a_reader_that_drops_a_name(
    native_torches: dict[str, tuple[Path, Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = pe_facts.read

    def dropping(path: Any) -> pe_facts.PEFacts:
        found = real(path)
        return pe_facts.PEFacts(**{**found.__dict__, "exports": found.exports[1:]})

    monkeypatch.setattr(native_record, "read_pe", dropping)
    _, problems = native_record.record(native_torches["windows"][1], "win.json")
    assert problems and all("exports differ" in p for p in problems)


@pytest.mark.parametrize("doc", [MACOS_FACTS, WINDOWS_FACTS], ids=["macos", "windows"])
def test_the_recorded_facts_say_every_reader_agreed(doc: dict[str, Any]) -> None:
    assert doc["made_by"].startswith(f"python tests/native_record.py {doc['wheel']} ")
    assert doc["downloaded_by"].startswith("pip download torch==2.13.0 --no-deps --only-binary=:all: --platform ")
    assert doc["torch_version"].startswith("2.13.0") and len(doc["wheel_sha256"]) == 64
    for name, lib in doc["libraries"].items():
        assert len(set(lib["exports"].values())) == 1, (name, lib["exports"])  # ours and each judge
        assert lib["shim_exports"] == sorted(lib["shim_exports"]) and all(map(is_unprefixed, lib["shim_exports"]))
    # The snapshot of the wheel holds the same names: every C name of each library it loads.
    recorded = doc["snapshot"]["libraries"]
    assert doc["snapshot"]["object_format"] == doc["format"]
    assert set(recorded) == {n[len("torch/lib/") :] for n in doc["libraries"] if n.startswith("torch/lib/")}
    for name, counts in recorded.items():
        lib = doc["libraries"][f"torch/lib/{name}"]
        assert counts["count"] == lib["exports"]["ours"] - lib.get("exports_without_underscore", 0), name
        assert counts["shim_exports"] == len(lib["shim_exports"]), name


def _elf_shim_names() -> dict[str, set[str]]:
    path = snapshot.shipped_dir() / "torch-2.13.0+cpu.json.gz"
    return {lib.name: {n for n in lib.export_names() if is_unprefixed(n)} for lib in snapshot.load(path)}


def test_macos_and_windows_torch_export_the_shim_abi_of_the_elf_snapshot() -> None:
    elf = _elf_shim_names()
    assert len(elf.pop("libtorch_cpu.so")) == 381 and not any(elf.values())  # only libtorch_cpu has them
    linux = _elf_shim_names()["libtorch_cpu.so"]
    windows = {n: set(lib["shim_exports"]) for n, lib in WINDOWS_FACTS["libraries"].items()}
    assert windows.pop("torch/lib/torch_cpu.dll") == linux and not any(windows.values())
    macos = {n: set(lib["shim_exports"]) for n, lib in MACOS_FACTS["libraries"].items()}
    mac_cpu = macos.pop("torch/lib/libtorch_cpu.dylib")
    assert not any(macos.values())
    assert linux - mac_cpu == MACOS_LACKS
    assert len(mac_cpu - linux) == 148 and all(n.startswith("aoti_torch_mps_") for n in mac_cpu - linux)


def test_torch_c_and_libtorch_bind_as_the_lookup_model_expects() -> None:
    libs = MACOS_FACTS["libraries"]
    assert libs[MACOS_FACTS["extension"]]["imports_of"] == [
        ["_initModule", "two_level", "@rpath/libtorch_python.dylib"],
        ["dyld_stub_binder", "two_level", "/usr/lib/libSystem.B.dylib"],
    ]
    # -undefined dynamic_lookup leaves libtorch_python's Python C API flat, and nothing else.
    python = libs["torch/lib/libtorch_python.dylib"]
    assert python["import_kinds"]["flat"] == 328 and python["flat_imports_outside_python_api"] == []
    assert all("flat" not in lib["import_kinds"] for n, lib in libs.items() if "libtorch_python" not in n)
    pyd = WINDOWS_FACTS["libraries"][WINDOWS_FACTS["extension"]]
    assert ["initModule", "normal", "torch_python.dll"] in pyd["imports_of"]
    assert all(kind == "normal" for lib in WINDOWS_FACTS["libraries"].values() for _, kind in lib["dependencies"])
