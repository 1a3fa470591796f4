"""The Windows loader's lookups as the model takes them: each import in the DLL it names."""

from __future__ import annotations

from aoti_shim.checks.native import winload
from aoti_shim.checks.native.binding import NOTHING, REFERENCE, SHIM, TORCH, UNKNOWN, Loaded
from aoti_shim.checks.native.image import DLL, NativeImage, NativeImport

NAME = "myrt_aoti_torch_a"


def _where(library: str, images: list[Loaded], name: str = NAME) -> tuple[str | None, str]:
    blob = NativeImage("blob.dll", "pe", "model", "x86_64", "blob.dll", frozenset(), frozenset(),
                       (NativeImport(name, DLL, library), NativeImport("memcpy", DLL, library)), ())
    (b,) = winload.bind(blob, images)
    return b.definer, b.kind


def test_an_import_binds_in_the_dll_it_names_matched_without_case() -> None:
    images = [Loaded("torch_cpu.dll", "torch_cpu.dll", REFERENCE, frozenset({"aoti_torch_a"})),
              Loaded("shims", "myrt_shims.dll", SHIM, frozenset({NAME}))]
    assert _where("MYRT_Shims.DLL", images) == ("shims", SHIM)
    assert _where("torch_cpu.dll", images) == ("torch_cpu.dll", REFERENCE)
    assert _where("myrt_shims.dll", images, "myrt_aoti_torch_b") == (None, NOTHING)
    assert _where("c10.dll", images[1:])[1] == TORCH
    assert _where("other.dll", images)[1] == UNKNOWN
