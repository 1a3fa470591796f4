"""Mach-O and PE facts as the native model's images: C names, load names, slices."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoti_shim.checks.native.image import DLL, base_name, c_name, of_macho, read_images
from macho_fixtures import write_fat
from native_fixtures import PREFIX, SHIM_DLL, SHIM_DYLIB, Triple, build


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    out = tmp_path_factory.mktemp("image")
    uses = (("aoti_torch_i", "ok"), ("aoti_torch_j", "unprefixed"))
    names = (f"{PREFIX}aoti_torch_i",)
    return {f"{fmt}{arch}": build(Triple(fmt, arch, names, None, uses, False, False, None, ("aoti_torch_j",)),
                                  out / f"{fmt}{arch}")
            for fmt, arch in (("macho", "x86_64"), ("pe", "x86_64"), ("macho", "arm64"))}


def test_names_are_c_names_and_load_names_are_matched_by_their_last_part() -> None:
    assert c_name("_myrt_aoti_torch_x") == "myrt_aoti_torch_x" and c_name("__Z1fv") == "_Z1fv"
    assert base_name("@rpath/libtorch_cpu.dylib") == "libtorch_cpu.dylib"
    assert base_name("C:\\torch\\lib\\Torch_CPU.DLL") == "torch_cpu.dll"


def test_a_dylib_reads_as_one_image_of_c_names(built: dict[str, dict[str, Path]]) -> None:
    files = built["machox86_64"]
    (shim,) = read_images(str(files["shim"]), "shim.dylib", "shim", "macho")
    assert shim.name == SHIM_DYLIB and f"{PREFIX}aoti_torch_i" in shim.exports and shim.architecture == "x86_64"
    (blob,) = read_images(str(files["blob"]), "blob.dylib", "model", "macho")
    assert {(i.name, i.lookup) for i in blob.imports if "aoti" in i.name} == {
        (f"{PREFIX}aoti_torch_i", "flat"), ("aoti_torch_j", "flat")}


def test_a_dll_reads_with_each_import_naming_its_dll(built: dict[str, dict[str, Path]]) -> None:
    files = built["pex86_64"]
    (shim,) = read_images(str(files["shim"]), "s", "shim", "pe")
    assert shim.name == SHIM_DLL and shim.exports >= {f"{PREFIX}aoti_torch_i"}
    (blob,) = read_images(str(files["blob"]), "b", "model", "pe")
    assert {(i.name, i.lookup, i.library) for i in blob.imports} == {
        (f"{PREFIX}aoti_torch_i", DLL, SHIM_DLL), ("aoti_torch_j", DLL, "torch_cpu.dll")}


def test_each_slice_of_a_universal_file_is_an_image_named_by_its_architecture(built, tmp_path: Path) -> None:
    fat = write_fat([built["machox86_64"]["shim"], built["machoarm64"]["shim"]], tmp_path / "fat", wide=True)
    images = read_images(str(fat), "fat", "shim", "macho")
    assert [i.display for i in images] == ["fat (x86_64)", "fat (arm64)"]
    assert images[0].exports == images[1].exports


def test_a_re_exported_symbol_is_the_images_name_and_a_lookup_in_its_library() -> None:
    """A trie entry with EXPORT_SYMBOL_FLAGS_REEXPORT names a library ordinal and a name there
    (<mach-o/loader.h>): dyld binds an import of it in that library. No linker here writes one
    (ld64.lld 16 has no -reexported_symbols_list), so the facts are written out."""
    from aoti_shim.checks import macho
    from aoti_shim.checks.macho.exports import Export
    from aoti_shim.checks.native.binding import TORCH
    from aoti_shim.checks.native.judge import binds_outside_shims, duplicate_definer
    from aoti_shim.checks.native.process import NativeProcess

    facts = macho.MachOFacts(
        path="libmyrt_shims.dylib", format="macho", architecture="arm64", filetype="dylib", flags=0x85,
        install_name="@rpath/libmyrt_shims.dylib",
        dependencies=(macho.Dependency("/usr/lib/libSystem.B.dylib", "load"),
                      macho.Dependency("@rpath/libtorch_cpu.dylib", "load")),
        rpaths=(), imports=(), fixups="chained",
        exports=(Export("_myrt_aoti_torch_b", "regular", False),
                 Export("_myrt_aoti_torch_c", "regular", False, reexport_ordinal=2, reexport_name="_aoti_torch_c"),
                 Export("_myrt_aoti_torch_d", "regular", False, reexport_ordinal=2, reexport_name="")),
    )
    image = of_macho(facts, "libmyrt_shims.dylib", "shim")
    assert image.exports == {"myrt_aoti_torch_b", "myrt_aoti_torch_c", "myrt_aoti_torch_d"}
    assert image.forwarded == {"myrt_aoti_torch_c", "myrt_aoti_torch_d"}
    assert {(i.name, i.library) for i in image.imports} == {
        ("aoti_torch_c", "@rpath/libtorch_cpu.dylib"), ("myrt_aoti_torch_d", "@rpath/libtorch_cpu.dylib")}
    process = NativeProcess("macho", [image], [])
    found = {(f[1], f[2].split(",")[0]) for f in binds_outside_shims(process)}
    assert found == {("aoti_torch_c", "imports 'aoti_torch_c' through its forwarded export 'myrt_aoti_torch_c' from "
                                      "@rpath/libtorch_cpu.dylib"),
                     ("myrt_aoti_torch_d", "imports 'myrt_aoti_torch_d' through its forwarded export "
                                           "'myrt_aoti_torch_d' from @rpath/libtorch_cpu.dylib")}
    assert {b.kind for b in process.bindings} == {TORCH} and not list(duplicate_definer(process))
