"""A dylib or DLL as a reference: its exports by C name, its load name, the reference protocol."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoti_shim.checks.native.reference import NativeReference
from native_fixtures import TORCH_DLL, TORCH_DYLIB, Triple, build


@pytest.fixture(scope="module", params=["macho", "pe"])
def torch(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    t = Triple(request.param, "arm64", (), None, (), False, False, None, ("aoti_torch_r", "aoti_torch_s"))
    return build(t, tmp_path_factory.mktemp(request.param))["torch"]


def test_exports_are_c_names_and_the_load_name_is_the_install_name(torch: Path) -> None:
    fmt = "macho" if torch.suffix == ".dylib" else "pe"
    ref = NativeReference(str(torch), "torch", fmt)
    assert ref.install_name == (TORCH_DYLIB if fmt == "macho" else TORCH_DLL)
    assert ref.export_names() >= {"aoti_torch_r", "aoti_torch_s"}
    symbol = ref.find_export("aoti_torch_r")
    assert symbol is not None and symbol.name == "aoti_torch_r" and ref.find_export("_aoti_torch_r") is None
    assert [n for chunk in ref.export_name_chunks() for n in chunk] == sorted(ref.export_names())
    assert ref.size_hint() == len(ref.export_names())
    ref.close()
