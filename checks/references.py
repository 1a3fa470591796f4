"""Reference libraries the shims must not collide with: ``torch``, paths, snapshots."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Iterable, Protocol

from aoti_shim.checks.elf import ElfImage, Symbol
from aoti_shim.checks.inputs import Workspace, collect
from aoti_shim.errors import InputError


# Names the torch to check against when it is not importable here (isolated builds).
TORCH_ENV_VAR = "AOTI_SHIM_TORCH"


class Reference(Protocol):
    """Anything that can answer 'do you export this name?'."""

    display: str

    def find_export(self, name: str) -> Symbol | None: ...

    def export_names(self) -> set[str]: ...


def explicit_torch_site(value: str) -> Path:
    """The absolute folder holding ``torch/lib`` that an ``AOTI_SHIM_TORCH`` value names.

    A site-packages folder, a torch package folder or its ``lib/`` folder all name one.
    Resolved here, once: the plugin's gate runs the checker from a temp folder, where a
    relative value would name nothing (or another torch).
    """
    try:
        path = Path(value).expanduser().resolve()
    except (OSError, RuntimeError) as e:  # RuntimeError: a symlink loop
        raise InputError(f"${TORCH_ENV_VAR}={value}: cannot resolve: {e}") from None
    if (path / "torch" / "lib").is_dir():
        return path
    if path.name == "torch" and (path / "lib").is_dir():
        return path.parent
    if path.name == "lib" and path.parent.name == "torch" and path.is_dir():
        return path.parent.parent
    raise InputError(
        f"${TORCH_ENV_VAR}={value}: no torch/lib there; "
        "give a site-packages folder, a torch package folder or its lib/ folder"
    )


def torch_lib_dir(search_paths: Iterable[str] = ()) -> Path:
    """The installed torch's ``lib/`` folder, found without importing torch.

    ``search_paths`` are extra site-packages folders to try first (the plugin
    passes the target environment's, as its isolated build env lacks torch).
    """
    explicit = os.environ.get(TORCH_ENV_VAR)
    if explicit:
        # Set by the pip plugin for the length of an isolated build, or by the user.
        return explicit_torch_site(explicit) / "torch" / "lib"
    for site in search_paths:
        candidate = Path(site) / "torch" / "lib"
        if candidate.is_dir():
            return candidate
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise InputError(
            f"--against torch: torch is not installed for {sys.executable}; "
            "install torch, or pass --against with a torch lib/ folder, wheel or snapshot"
        )
    lib = Path(next(iter(spec.submodule_search_locations))) / "lib"
    if not lib.is_dir():
        raise InputError(f"--against torch: {lib} does not exist")
    return lib


def _is_snapshot(path: str) -> bool:
    if not os.path.isfile(path):
        return False
    try:
        from aoti_shim.checks import snapshot
    except ImportError:
        return False
    return bool(snapshot.is_snapshot(path))


def open_references(
    against: Iterable[str],
    workspace: Workspace,
    *,
    torch_search_paths: Iterable[str] = (),
    exclude: frozenset[str] = frozenset(),
) -> list[Reference]:
    """Open every reference named by ``against``; the caller closes them.

    ``exclude`` holds real paths of the checked libraries: a library found inside a
    reference folder (torch's own test libraries) is not its own reference.
    """
    refs: list[Reference] = []
    try:
        for item in against:
            if item == "torch":
                paths = [str(torch_lib_dir(torch_search_paths))]
            elif _is_snapshot(item):
                from aoti_shim.checks import snapshot

                refs.extend(snapshot.load(item))
                continue
            else:
                paths = [item]
            for art in collect(paths, workspace):
                if os.path.realpath(art.path) in exclude:
                    continue
                image = ElfImage(art.path, display=art.display)
                if image.has_dynsym:
                    refs.append(image)
                else:
                    image.close()
    except BaseException:
        close_all(refs)
        raise
    return refs


def close_all(refs: Iterable[object]) -> None:
    for ref in refs:
        close = getattr(ref, "close", None)
        if close is not None:
            close()
