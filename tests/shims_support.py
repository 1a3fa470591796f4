"""The installed reference shim library and its prefix, found one way by every test; the
names its manifest lists; the shim names a library exports or imports.

The wheel ships the library (test_smoke asserts it), so its absence fails a test, it does
not skip it. Its prefix is what its installed config.h says it was built with, held to
what the library really exports (checks.prefix.built_prefix).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aoti_shim.checks.abi.prefix import built_prefix
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.errors import AotiShimError
from aoti_shim.paths import shim_library

MANIFEST = Path(__file__).resolve().parents[1] / "shims" / "manifest.txt"


def reference_library() -> Path:
    """The installed ``libaoti_shim.so``."""
    try:
        return shim_library()
    except AotiShimError as e:
        pytest.fail(f"the installed package has no reference shim library: {e}")


def reference_prefix() -> str:
    """The prefix the installed reference library was built with."""
    library = reference_library()
    config = library.parent.parent / "include" / "aoti_shim" / "config.h"
    match = re.search(r"#define AOTI_SHIM_BUILT_PREFIX (\w+)", config.read_text(encoding="utf-8"))
    assert match is not None, f"no AOTI_SHIM_BUILT_PREFIX in {config}"
    assert built_prefix(library) == match.group(1), f"{library} exports another prefix than {config} says"
    return match.group(1)


def reference_shims() -> tuple[Path, str]:
    """The installed reference library and its prefix."""
    return reference_library(), reference_prefix()


def manifest_names() -> list[str]:
    """shims/manifest.txt's names in its order, duplicates kept (a test refuses them)."""
    lines = (line.split("#", 1)[0].strip() for line in MANIFEST.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


def exported_shim_names(library: Path) -> set[str]:
    """The names ``library`` exports that hold ``aoti_torch_`` (any prefix)."""
    with ElfImage(library) as image:
        return {name for name in image.exports() if "aoti_torch_" in name}


def imported_shim_names(library: Path) -> set[str]:
    """The names ``library`` imports that hold ``aoti_torch_`` (any prefix)."""
    with ElfImage(library) as image:
        return {name for name in image.imports() if "aoti_torch_" in name}
