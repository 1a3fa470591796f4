"""checks/loader/bindings.py as functions, on libraries described by hand (no file read):
what refuses a dlopen before it maps anything, the version a loaded library lacks, glibc's
version matching, and how a process of such libraries reports them. The model against
ld.so itself, on compiled libraries, is tests/test_check_bindings.py's and
tests/test_bindings_differential.py's."""

from __future__ import annotations

from typing import Any

import pytest

from aoti_shim.checks.elf.layout import STB_GLOBAL, STT_FUNC, STV_DEFAULT
from aoti_shim.checks.elf.symbols import Symbol
from aoti_shim.checks.elf.versions import DynamicEntry, Versions
from aoti_shim.checks.loader import bindings
from aoti_shim.checks.loader.bindings import (
    DEPENDENCY,
    MODEL,
    PROGRAM,
    REFERENCE,
    SHIM,
    SYSTEM,
    Linked,
    describe_header,
    pick,
    refusals,
    unmet_version,
)

X86_64 = (64, False, 62)
AARCH64 = (64, False, 183)


def lib(name: str, role: str = SHIM, **kw: Any) -> Linked:
    return Linked(display=name, role=role, names=frozenset({name}), **kw)


def entry(
    name: str, *, defined: bool, versym: int = 1, version: str | None = None, file: str | None = None
) -> DynamicEntry:
    symbol = Symbol(name, STB_GLOBAL, STT_FUNC, STV_DEFAULT, defined, version is not None)
    return DynamicEntry(symbol, 1, versym, version, file)


def test_headers_are_said_in_words() -> None:
    assert describe_header(X86_64) == "ELF64 little-endian x86-64"
    assert describe_header((32, True, 999)) == "ELF32 big-endian machine 999"


def test_a_closure_that_maps_is_refused_nothing() -> None:
    root, dep = lib("libroot.so", header=X86_64), lib("libdep.so", header=X86_64)
    assert refusals(root, [root, dep], [root, dep], X86_64) == []
    # A snapshot's libraries have no header: nothing to compare.
    assert refusals(root, [root, lib("libsnap.so")], [root], X86_64) == []
    assert refusals(lib("libarm.so", header=AARCH64), [], [], None) == []


def test_a_dependency_of_another_machine_refuses_its_needer_too() -> None:
    root, dep = lib("libroot.so", header=X86_64), lib("libdep.so", header=AARCH64)
    said = [(f.library.display, f.reason) for f in refusals(root, [root, dep], [root, dep], X86_64)]
    assert said == [
        ("libdep.so", "it is ELF64 little-endian AArch64, the process ELF64 little-endian x86-64: it cannot load"),
        ("libroot.so", "needs libdep.so, which cannot load"),
    ]
    # The root itself of another machine: its own line only.
    arm = lib("libarm.so", header=AARCH64)
    assert [f.library for f in refusals(arm, [arm], [arm], X86_64)] == [arm]


def test_a_library_found_nowhere_is_named_with_whoever_needs_it() -> None:
    dep = lib("libdep.so", missing=(("libz.so.9", "which the loader finds nowhere"),))
    root = lib("libroot.so")
    (failure,) = refusals(root, [root, dep], [root, dep], None)
    assert failure.library is root
    assert failure.reason == "needs libz.so.9 (a dependency of libdep.so), which the loader finds nowhere"
    own = lib("libown.so", missing=(("liba.so", "x"), ("libb.so", "y")))
    assert [f.reason for f in refusals(own, [own], [own], None)] == ["needs liba.so, x"]  # the first only


def test_another_machine_is_said_before_a_missing_library() -> None:
    root = lib("libroot.so", header=AARCH64, missing=(("libz.so", "which the loader finds nowhere"),))
    assert [f.reason for f in refusals(root, [root], [root], X86_64)] == [
        "it is ELF64 little-endian AArch64, the process ELF64 little-endian x86-64: it cannot load"
    ]


def test_nodlopen_refuses_a_new_library_but_not_a_programs_closure() -> None:
    root, dep = lib("libroot.so"), lib("libdep.so", noopen=True)
    said = [(f.library.display, f.reason) for f in refusals(root, [root, dep], [root, dep], None)]
    assert said == [
        ("libdep.so", "it is linked -z nodlopen (DF_1_NOOPEN): dlopen refuses it"),
        ("libroot.so", "needs libdep.so, which dlopen refuses (-z nodlopen)"),
    ]
    # Loaded already (not new), the machine's own, or a program's start-up closure: no dlopen.
    assert refusals(root, [root, dep], [root], None) == []
    assert refusals(root, [root, lib("libsys.so", SYSTEM, noopen=True)], [root], None) == []
    program = lib("prog", PROGRAM)
    assert refusals(program, [program, dep], [program, dep], None) == []
    # The root itself linked -z nodlopen: its line only.
    shut = lib("libshut.so", noopen=True)
    assert [f.reason for f in refusals(shut, [shut], [shut], None)] == [
        "it is linked -z nodlopen (DF_1_NOOPEN): dlopen refuses it"
    ]


LIBC = lib("libc.so.6", SYSTEM, versions=Versions({2: "GLIBC_2.2.5", 3: "GLIBC_2.34"}, frozenset({1}), {}))


def _needing(version: str, file: str = "libc.so.6", role: str = SHIM) -> Linked:
    return lib("libneeds.so", role, versions=Versions({}, frozenset(), {2: (version, file)}))


def test_a_version_the_loaded_library_lacks_is_the_failure() -> None:
    needs = _needing("GLIBC_9.99")
    failure = unmet_version(needs, [needs], {"libc.so.6": LIBC})
    assert failure is not None and failure.library is needs
    assert failure.reason == "needs version 'GLIBC_9.99' of libc.so.6, which defines no such version"
    assert unmet_version(needs, [needs], {"libc.so.6": LIBC, "libneeds.so": needs}) is not None


@pytest.mark.parametrize(
    "case", ["defined", "unknown file", "file without versions", "system library", "reference root"]
)
def test_a_version_need_is_not_judged_where_glibc_does_not(case: str) -> None:
    version = "GLIBC_2.34" if case == "defined" else "GLIBC_9.99"
    needs = _needing(version, role=SYSTEM if case == "system library" else SHIM)
    loaded = {"libc.so.6": LIBC}
    if case == "unknown file":
        loaded = {}
    elif case == "file without versions":
        loaded = {"libc.so.6": lib("libc.so.6", SYSTEM)}
    root = lib("libtorch.so", REFERENCE) if case == "reference root" else needs
    assert unmet_version(root, [needs], loaded) is None


def test_the_first_definition_with_the_imports_version_serves_it() -> None:
    definer = lib("libdef.so", has_versym=True, versions=Versions({2: "V1", 3: "V2"}, frozenset({1}), {}))
    v1 = entry("f", defined=True, versym=2, version="V1")
    v2 = entry("f", defined=True, versym=3, version="V2")
    want_v2 = entry("f", defined=False, versym=4, version="V2", file="libdef.so")
    assert pick(definer, [v1, v2], want_v2) is v2
    # An unversioned import takes the one visible versioned definition.
    assert pick(definer, [v2], entry("f", defined=False)) is v2
    # Two visible versions and none the oldest: no unversioned import binds.
    assert pick(definer, [entry("f", defined=True, versym=4, version="V3"), v2], entry("f", defined=False)) is None
    # A library without .gnu.version serves every import by the name.
    plain = lib("libplain.so")
    assert pick(plain, [v1], want_v2) is v1


def test_a_versioned_import_asserts_on_its_file_without_versions() -> None:
    want = entry("f", defined=False, versym=2, version="V1", file="libdef.so")
    assert bindings.versions_asserted(lib("libdef.so"), want)
    assert not bindings.versions_asserted(lib("libdef.so", has_versym=True), want)
    assert not bindings.versions_asserted(lib("libother.so"), want)
    assert not bindings.versions_asserted(lib("libdef.so"), entry("f", defined=False))


def test_a_process_reports_the_refusals_of_its_libraries() -> None:
    shim = lib("libshim.so", header=X86_64, needed=("libdep.so",))
    dep = lib("libdep.so", DEPENDENCY, header=AARCH64)
    blob = lib("blob.so", MODEL, header=X86_64, missing=(("libgone.so", "which the loader finds nowhere"),))
    ref = lib("libtorch.so", REFERENCE, header=X86_64)
    process = bindings.Process(references=[ref], shims=[shim], models=[blob], dependencies=[dep])
    assert [(f.library.display, f.reason) for f in process.load_failures()] == [
        ("libdep.so", "it is ELF64 little-endian AArch64, the process ELF64 little-endian x86-64: it cannot load"),
        ("libshim.so", "needs libdep.so, which cannot load"),
        ("blob.so", "needs libgone.so, which the loader finds nowhere"),
    ]
    assert process.scope_of(shim) is None and process.scope_of(blob) is None
    assert process.global_scope == [ref]


def _counted(definitions: dict[str, DynamicEntry], asked: list[str]) -> Any:
    def lookup(name: str) -> list[DynamicEntry]:
        asked.append(name)
        return [definitions[name]] if name in definitions else []

    return lookup


def test_each_library_is_asked_a_name_once_and_each_import_bound_once() -> None:
    # Blobs of one process ask the same libraries the same names (issue 38 §3): a library's
    # answer is kept, the global scope's first definer kept per name, a binding kept per import.
    libc_asked: list[str] = []
    libc = lib("libc.so.6", SYSTEM, lookup=_counted({"malloc": entry("malloc", defined=True)}, libc_asked))
    ref_asked: list[str] = []
    shim_x = entry("aoti_torch_x", defined=True)
    ref = lib("libtorch.so", REFERENCE, lookup=_counted({"aoti_torch_x": shim_x}, ref_asked))
    imports = (entry("malloc", defined=False), entry("aoti_torch_x", defined=False))
    blobs = [lib(f"blob{i}.so", MODEL, needed=("libc.so.6",), imports=imports) for i in range(3)]
    process = bindings.Process(references=[ref], models=blobs, machine=[libc])
    first = list(process.resolve(bindings.every_import))
    assert [(b.name, b.definer.display if b.definer else None, b.scope) for b in first] == [
        ("malloc", "libc.so.6", "global"), ("aoti_torch_x", "libtorch.so", "global")
    ] * 3
    # Loading bound the blobs' imports, judging them asked again: no library was asked twice.
    assert sorted(libc_asked) == ["aoti_torch_x", "malloc"] and ref_asked == ["aoti_torch_x"]
    again = list(process.resolve(bindings.every_import))
    assert all(b is a for a, b in zip(first, again)) and len(again) == 6


def test_bindings_written_out_init_is_the_dataclass_one() -> None:
    import dataclasses
    import inspect

    fields = [f.name for f in dataclasses.fields(bindings.Binding)]
    assert list(inspect.signature(bindings.Binding.__init__).parameters)[1:] == fields
    importer, definer = lib("libblob.so", MODEL), lib("libshims.so")
    want, found = entry("myrt_f", defined=False), entry("myrt_f", defined=True)
    b = bindings.Binding(importer, want, definer, found, "global")
    assert [getattr(b, name) for name in fields] == [importer, want, definer, found, "global"]
    assert (b.name, b == dataclasses.replace(b)) == ("myrt_f", True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.scope = "none"  # type: ignore[misc]  # the point: it is frozen
