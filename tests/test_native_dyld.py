"""dyld's lookups as the model takes them: two-level by install name, flat in load order."""

from __future__ import annotations

from aoti_shim.checks.native import dyld
from aoti_shim.checks.native.binding import NOTHING, REFERENCE, SHIM, TORCH, UNKNOWN, Loaded
from aoti_shim.checks.native.image import NativeImage, NativeImport

NAME = "myrt_aoti_torch_a"


def _blob(*imports: NativeImport, deps: tuple[tuple[str, str], ...] = ()) -> NativeImage:
    return NativeImage("blob", "macho", "model", "arm64", "@rpath/blob.dylib", frozenset(), frozenset(), imports, deps)


def _process(*exports: tuple[str, str, set[str]]) -> list[Loaded]:
    return [Loaded(display, display, kind, frozenset(names)) for display, kind, names in exports]


def _where(imp: NativeImport, images: list[Loaded]) -> tuple[str | None, str]:
    (b,) = dyld.bind(_blob(imp), images)
    return b.definer, b.kind


def test_a_flat_lookup_takes_the_first_definer_in_load_order() -> None:
    images = _process(("libtorch_cpu.dylib", REFERENCE, {"aoti_torch_a", NAME}), ("libs.dylib", SHIM, {NAME}))
    assert _where(NativeImport(NAME, "flat", None), images) == ("libtorch_cpu.dylib", REFERENCE)
    assert _where(NativeImport(NAME, "weak", None), images[1:]) == ("libs.dylib", SHIM)
    assert _where(NativeImport("myrt_aoti_torch_z", "flat", None), images) == (None, NOTHING)


def test_a_two_level_import_binds_in_its_install_names_image_alone() -> None:
    images = _process(("libtorch_cpu.dylib", REFERENCE, {"aoti_torch_a"}), ("libs.dylib", SHIM, {NAME}))
    assert _where(NativeImport(NAME, "two_level", "@rpath/libs.dylib"), images) == ("libs.dylib", SHIM)
    # Named in libtorch: bound there even though only the shims define it.
    assert _where(NativeImport(NAME, "two_level", "@rpath/libtorch_cpu.dylib"), images) == (
        "libtorch_cpu.dylib", REFERENCE)
    # No reference given: torch's install names are still torch's.
    assert _where(NativeImport(NAME, "two_level", "@loader_path/libc10.dylib"), images[1:])[1] == TORCH
    assert _where(NativeImport(NAME, "two_level", "@rpath/libelse.dylib"), images)[1] == UNKNOWN
    assert _where(NativeImport("myrt_aoti_torch_b", "two_level", "@rpath/libs.dylib"), images) == (None, NOTHING)


def test_self_and_program_lookups_and_other_names_are_not_judged() -> None:
    imports = (NativeImport(NAME, "self", None), NativeImport(NAME, "main_executable", None),
               NativeImport("_memcpy", "flat", None))
    assert list(dyld.bind(_blob(*imports), [])) == []


def test_absolute_loads_outside_the_system_folders_with_their_use() -> None:
    deps = (("/opt/lib/libomp.dylib", "load"), ("/usr/lib/libc++.1.dylib", "load"), ("@rpath/libs.dylib", "load"))
    blob = _blob(NativeImport("omp_x", "two_level", "/opt/lib/libomp.dylib"), deps=deps)
    assert list(dyld.absolute_loads(blob)) == [("/opt/lib/libomp.dylib", 1)]
