"""Reference libraries the shims must not collide with: ``torch``, paths, snapshots."""

from __future__ import annotations

import os
import sys
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.elf.symbols import Symbol
from aoti_shim.checks.inputs.collect import (
    DEFAULT_MEMBER_LIMIT,
    NATIVE_SUFFIXES,
    Artifact,
    Workspace,
    collect,
    is_elf_strict,
    native_member,
    open_wheel,
    read_member,
)
from aoti_shim.checks.report.model import AgainstSource
from aoti_shim.checks.snapshot.torch_libraries import TORCH_TEST_LIBRARIES, import_closure, is_torch_lib_dir
from aoti_shim.errors import InputError
from aoti_shim.torch_location import TorchLocation, locate, package_lib, version_in

# Appended to a torch reference ("torch+tests", "WHEEL+tests"): every library of torch/lib/.
WITH_TESTS = "+tests"


class Reference(Protocol):
    """Anything that can answer 'do you export this name?'."""

    display: str

    def find_export(self, name: str) -> Symbol | None: ...

    def export_names(self) -> set[str]: ...

    def export_name_chunks(self) -> Iterator[list[str]]: ...

    def size_hint(self) -> int: ...


def torch_version_at(lib_dir: str | os.PathLike[str]) -> str | None:
    """The version in ``torch/version.py`` beside a torch ``lib/`` folder, if readable."""
    return version_in(os.path.dirname(os.path.abspath(lib_dir)))


def _wheel_torch_version(path: str) -> str | None:
    """torch-2.13.0+cpu-cp311-...whl -> 2.13.0+cpu (the wheel name says it)."""
    parts = os.path.basename(path).split("-")
    return parts[1] if len(parts) >= 5 and parts[0] == "torch" and path.endswith(".whl") else None


def find_torch(search_paths: Iterable[str] = ()) -> TorchLocation:
    """The torch that ``--against torch`` means (its ``lib``), and how it was found.

    ``search_paths`` (``CheckSettings.torch_search_paths``) are site-packages folders to
    try after ``$AOTI_SHIM_TORCH`` and before the torch this interpreter would import.
    """
    found = locate(search_paths)
    if found is None:
        raise InputError(
            f"--against torch: torch is not installed for {sys.executable}; "
            "install torch, or pass --against with a torch lib/ folder, wheel or snapshot"
        )
    if not found.lib.is_dir():
        raise InputError(f"--against torch: {found.lib} does not exist")
    return found


def resolve_snapshot_name(item: str) -> Path | None:
    """The shipped snapshot that ``item`` names, or None when it names none.

    The one resolver of snapshot names, for ``check --against`` and the plugin's
    ``against``: ``torch-2.14.1+cu130`` and ``torch-2.14.1+cu130.json.gz`` both name the
    shipped file. A bare name only: anything with a folder part is a path.
    """
    if not item or os.sep in item or (os.altsep and os.altsep in item):
        return None
    # Lazy, as every snapshot use here: a check against a folder or a wheel reads none.
    from aoti_shim.checks.snapshot.record import SNAPSHOT_SUFFIX, shipped_snapshots

    name = item[: -len(SNAPSHOT_SUFFIX)] if item.endswith(SNAPSHOT_SUFFIX) else item
    return shipped_snapshots().get(name)


def snapshot_hint(item: str) -> str:
    """``"; did you mean 'torch-2.14.1+cu130'?"`` for a name a shipped snapshot's name extends
    (a version without its local part) or resembles; empty when none does."""
    import difflib

    from aoti_shim.checks.snapshot.record import SNAPSHOT_SUFFIX, shipped_snapshots

    names = list(shipped_snapshots())
    name = item[: -len(SNAPSHOT_SUFFIX)] if item.endswith(SNAPSHOT_SUFFIX) else item
    extended = [n for n in names if n.startswith(name + "+")]
    close = extended or difflib.get_close_matches(name, names, n=1, cutoff=0.8)
    return f"; did you mean {' or '.join(repr(n) for n in close)}?" if close else ""


def _named_snapshot(item: str) -> Path | None:
    """The shipped snapshot that a missing bare name names (a one-line error if none);
    None for a missing path with a folder part, which the input reader reports."""
    found = resolve_snapshot_name(item)
    if found is None and os.sep not in item:
        from aoti_shim.checks.snapshot.record import shipped_snapshots

        names = ", ".join(shipped_snapshots()) or "none"
        raise InputError(
            f"--against {item}: no such file, nor a shipped snapshot{snapshot_hint(item)} (shipped: {names})"
        )
    return found


def _is_snapshot(path: str) -> bool:
    if not os.path.isfile(path):
        return False
    from aoti_shim.checks.snapshot.record import is_snapshot

    return is_snapshot(path)


def _torch_dir_paths(lib_dir: str, with_tests: bool) -> list[str]:
    """The files of a torch ``lib/`` folder that make the reference."""
    names = sorted(e.name for e in os.scandir(lib_dir) if e.is_file() and is_elf_strict(e.path))
    if not with_tests:

        def needed_of(name: str) -> list[str]:
            with ElfImage(os.path.join(lib_dir, name)) as image:
                return image.needed

        loaded = import_closure(names, needed_of)
        names = loaded if loaded is not None else [n for n in names if n not in TORCH_TEST_LIBRARIES]
    return [os.path.join(lib_dir, name) for name in names]


def _torch_wheel_artifacts(
    wheel: str, workspace: Workspace, with_tests: bool
) -> list[Artifact] | None:
    """The torch/lib/ members of a torch wheel that make the reference (never torch/_C*.so
    or other packages' members: a torch wheel means what a snapshot of it holds), or None
    when the wheel has no torch/lib/."""
    lib = "torch/lib/"
    with open_wheel(wheel) as zf:
        members = {
            info.filename[len(lib) :]: info
            for info in zf.infolist()
            if info.filename.startswith(lib) and "/" not in info.filename[len(lib) :] and not info.is_dir()
        }
        if not members:
            return None
        arts: dict[str, Artifact | None] = {}

        def art_of(name: str) -> Artifact | None:
            # Streamed, as --shim reads wheels: no member is unpacked to disk.
            if name not in arts:
                display = f"{wheel}!{lib}{name}"
                kind, arts[name] = read_member(zf, members[name], display, workspace, DEFAULT_MEMBER_LIMIT)
                if kind == "not-elf" and name.lower().endswith(NATIVE_SUFFIXES):
                    # A macOS or Windows torch wheel: its dylibs or DLLs, copied whole.
                    arts[name] = native_member(zf, members[name], display, workspace, DEFAULT_MEMBER_LIMIT)
            return arts[name]

        def needed_of(name: str) -> list[str]:
            art = art_of(name)
            if art is None or art.format != "elf":
                return []
            if art.image is not None:
                return art.image.needed  # kept open: it becomes the reference
            with ElfImage(art.path, display=art.display) as image:
                return image.needed

        names = None if with_tests else import_closure(sorted(members), needed_of)
        if names is None:
            names = [n for n in sorted(members) if with_tests or n not in TORCH_TEST_LIBRARIES]
        return [a for a in (art_of(n) for n in names) if a is not None]


def _split_tests(item: str) -> tuple[str, bool]:
    """("torch", True) for "torch+tests"; a path keeps a "+tests" that is part of its name."""
    if item.endswith(WITH_TESTS) and not os.path.exists(item):
        return item[: -len(WITH_TESTS)], True
    return item, False


def open_references(
    against: Iterable[str],
    workspace: Workspace,
    *,
    torch_search_paths: Iterable[str] = (),
    exclude: frozenset[str] = frozenset(),
    sources: list[AgainstSource] | None = None,
) -> list[Reference]:
    """Open every reference named by ``against``; the caller closes them.

    ``torch``, a torch ``lib/`` or package folder, a torch wheel and a snapshot mean the
    libraries ``import torch`` loads; with ``+tests`` appended, all of torch's ``lib/``.
    ``exclude`` holds real paths of the checked libraries: a library found inside a
    reference folder is not its own reference. Each item must give at least one
    library (an empty reference set would make COLLISION pass vacuously); ``sources``,
    when given, gets what each item was.
    """
    refs: list[Reference] = []
    try:
        for raw in against:
            before = len(refs)
            item, with_tests = _split_tests(raw)
            found_by = "argument"
            if item == "torch":
                found = find_torch(torch_search_paths)
                item, found_by = str(found.lib), found.how
            elif with_tests and not os.path.exists(item):
                raise InputError(f"--against {raw}: {item} does not exist")
            elif not os.path.exists(item) and (named := _named_snapshot(item)) is not None:
                item = str(named)
            if _is_snapshot(item):
                from aoti_shim.checks.snapshot.record import load

                libs = load(item)
                refs.extend(lib for lib in libs if with_tests or lib.name not in TORCH_TEST_LIBRARIES)
                _account(raw, item, found_by, libs[0].torch_version if libs else None, refs, before, sources)
                continue
            arts: list[Artifact] | None = None
            if os.path.isdir(item):
                lib = package_lib(item)
                if lib is not None and is_torch_lib_dir(lib):
                    item = str(lib)
                if is_torch_lib_dir(item):
                    arts = [Artifact(path=p, display=p) for p in _torch_dir_paths(item, with_tests)]
            elif os.path.isfile(item) and zipfile.is_zipfile(item):
                arts = _torch_wheel_artifacts(item, workspace, with_tests)
            if arts is None:
                if with_tests:
                    raise InputError(f"--against {raw}: {item} is no torch lib/ folder or torch wheel")
                arts = collect([item], workspace)
            checked_too = 0
            for art in arts:
                if os.path.realpath(art.path) in exclude:
                    checked_too += 1
                    continue
                if art.format != "elf":
                    # A dylib or DLL (a macOS or Windows torch's lib/): its exports by C name.
                    from aoti_shim.checks.native.reference import NativeReference

                    refs.append(NativeReference(art.path, art.display, art.format))
                    continue
                image = art.open()
                if image.has_dynsym:
                    refs.append(image)
                else:
                    image.close()
            version = torch_version_at(item) if os.path.isdir(item) else _wheel_torch_version(item)
            _account(raw, item, found_by, version, refs, before, sources, checked_too)
    except BaseException:
        close_all(refs)
        raise
    return refs


def _account(
    raw: str,
    path: str,
    found_by: str,
    version: str | None,
    refs: list[Reference],
    before: int,
    sources: list[AgainstSource] | None,
    checked_too: int = 0,
) -> None:
    count = len(refs) - before
    if count == 0 and checked_too:
        # Not "no readable library": the libraries are there, but each is also a checked one.
        raise InputError(
            f"--against {raw}: every library in {path} is also given as --shim or --model "
            "(a library is never its own reference); an empty reference set would pass every collision check"
        )
    if count == 0:
        raise InputError(
            f"--against {raw}: no readable library with a dynamic symbol table in {path}"
            + (f" (found by {found_by})" if found_by != "argument" else "")
            + "; an empty reference set would pass every collision check"
        )
    if sources is not None:
        sources.append(AgainstSource(item=raw, path=path, found_by=found_by, torch_version=version, libraries=count))


def close_all(refs: Iterable[object]) -> None:
    for ref in refs:
        close = getattr(ref, "close", None)
        if close is not None:
            close()
