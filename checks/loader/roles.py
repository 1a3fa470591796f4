"""What each ELF, Mach-O or PE member of a wheel is to the check, read from its symbols.

A *shim* exports shim-ABI names (prefixed or not); a *model* (any consumer of the shim
ABI: a blob, a backend, an extension of the runtime) imports them without exporting
any; a *stable-ABI extension* imports only libtorch's unprefixed names and has no
AOTInductor entry point (torchaudio, xformers: it binds to libtorch by design). The
build backend and ``aoti-shim check --wheel`` classify with this one function, so the
CI gate checks what the build gate checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aoti_shim.checks.abi.prefix import MODEL_ENTRY_PREFIX, is_shim_name, is_unprefixed
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.inputs.magic import path_kind
from aoti_shim.checks.native.image import read_images


@dataclass(frozen=True)
class Roles:
    shims: tuple[str, ...]
    models: tuple[str, ...]
    # No dynamic symbol table, or no shim-ABI name: nothing of the shim ABI to check.
    unchecked: tuple[str, ...]
    # Import libtorch's unprefixed aoti_torch_* on purpose and are no AOTInductor model.
    extensions: tuple[str, ...] = ()


def classify_by_symbols(members: list[str], root: Path) -> Roles:
    """The role of each member (a path under ``root``), from its dynamic symbols."""
    shims: list[str] = []
    models: list[str] = []
    rest: list[str] = []
    extensions: list[str] = []
    for member in members:
        names = symbol_names(root / member, member)
        if names is None:
            rest.append(member)
            continue
        exports, imports = names
        if any(is_shim_name(name) for name in exports):
            shims.append(member)
            continue
        used = [name for name in imports if is_shim_name(name)]
        if not used:
            rest.append(member)
        elif any(n.startswith(MODEL_ENTRY_PREFIX) for n in exports) or any(not is_unprefixed(n) for n in used):
            # An AOTInductor blob, or a consumer of the prefixed (private) shim ABI.
            models.append(member)
        else:
            extensions.append(member)
    return Roles(tuple(shims), tuple(models), tuple(rest), tuple(extensions))


def symbol_names(path: Path, member: str) -> tuple[list[str], list[str]] | None:
    """(exports, imports) of a member, C names; None without a dynamic symbol table."""
    native = path_kind(str(path))
    if native is not None:
        images = read_images(str(path), member, "member", native[0])
        return [n for i in images for n in i.exports], [m.name for i in images for m in i.imports]
    with ElfImage(path, display=member) as image:
        if not image.has_dynsym:
            return None
        return list(image.exports()), list(image.imports())
