"""A file's native format and kind from its first bytes, on files built here and on look-alikes."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest

from aoti_shim.checks.inputs.magic import has_native_magic, native_kind, path_kind
from macho_fixtures import write_fat
from native_fixtures import PREFIX, Triple, build


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("magic")
    names = (f"{PREFIX}aoti_torch_m",)
    macho = build(Triple("macho", "arm64", names, None, (("aoti_torch_m", "ok"),), False, False, None), out / "m")
    pe = build(Triple("pe", "x86_64", names, None, (("aoti_torch_m", "ok"),), False, False, None), out / "p")
    return {"dylib": macho["shim"], "dll": pe["shim"], "fat": write_fat([macho["shim"], macho["blob"]], out / "fat",
                                                                         wide=False)}


def test_the_magics_are_the_readers_constants() -> None:
    # magic.py spells them out so that telling a file's kind imports neither reader.
    from aoti_shim.checks.inputs import magic
    from aoti_shim.checks.macho import constants
    from aoti_shim.checks.pe import headers

    assert (magic.MH_MAGIC, magic.MH_MAGIC_64, magic.FAT_MAGIC, magic.FAT_MAGIC_64) == (
        constants.MH_MAGIC, constants.MH_MAGIC_64, constants.FAT_MAGIC, constants.FAT_MAGIC_64,
    )
    assert magic.IMAGE_FILE_DLL == headers.IMAGE_FILE_DLL


def test_dylibs_dlls_and_universal_files_are_shared(built: dict[str, Path]) -> None:
    assert path_kind(str(built["dylib"])) == ("macho", "shared")
    assert path_kind(str(built["fat"])) == ("macho", "shared")
    assert path_kind(str(built["dll"])) == ("pe", "shared")
    assert all(has_native_magic(p.read_bytes()[:4]) for p in built.values())


def test_programs_are_said_as_programs(built: dict[str, Path]) -> None:
    dylib = bytearray(built["dylib"].read_bytes())
    dylib[12:16] = struct.pack("<I", 2)  # MH_EXECUTE
    assert native_kind(io.BytesIO(bytes(dylib))) == ("macho", "executable")
    dll = bytearray(built["dll"].read_bytes())
    at = struct.unpack_from("<I", dll, 0x3C)[0] + 22
    dll[at : at + 2] = struct.pack("<H", struct.unpack_from("<H", dll, at)[0] & ~0x2000)
    assert native_kind(io.BytesIO(bytes(dll))) == ("pe", "executable")


def test_look_alikes_are_no_native_file() -> None:
    java = struct.pack(">IHH", 0xCAFEBABE, 0, 61) + bytes(60)  # a class file of Java 17: "61 slices"
    assert native_kind(io.BytesIO(java)) is None
    assert native_kind(io.BytesIO(b"MZ" + bytes(62))) is None  # a DOS program: no PE header
    assert native_kind(io.BytesIO(b"\x7fELF" + bytes(60))) is None
    assert not has_native_magic(b"\x7fELF")
