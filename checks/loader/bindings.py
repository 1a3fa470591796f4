"""The binding model: what the dynamic linker binds in the coalesced process.

The process the checker answers for is the one a slim runtime shares with libtorch:

0. the machine's libc and its dynamic linker (every program has them), and the references'
   own dependencies (libstdc++, libm...): read for their exports only;
1. the program itself when it exports dynamic symbols (a runner linked ``-rdynamic``);
2. the references (libtorch and what ``import torch`` loads), ``RTLD_GLOBAL``, in order;
3. the shim libraries, ``RTLD_GLOBAL``, in order, each with its ``DT_NEEDED`` closure;
4. each blob ``RTLD_LOCAL | RTLD_NOW``, its local scope itself and its ``DT_NEEDED``
   closure breadth first.

A library's import is looked up the way glibc's ``_dl_lookup_symbol_x`` does: the
library itself first when it was linked ``-Bsymbolic`` (DT_SYMBOLIC / DF_SYMBOLIC),
then the global scope in load order, then the library's local scope. The first library
with a matching definition wins, WEAK or not; a GNU_UNIQUE definition resolves to the
process's one instance (the first loaded definer's). A definition matches a versioned
import when it carries that version, or when its library has no ``.gnu.version`` at
all, or when it is unversioned and not hidden (glibc's ``check_match``); an unversioned
import takes an unversioned definition, or version index 2 (the oldest), or the single
non-hidden versioned one. A definition the loader's lookup passes over (out of reach of
``.gnu.hash``, of value 0 outside SHN_ABS and TLS, of a type that is no code or data)
serves nothing. An undefined symbol that is STB_LOCAL or hidden or internal is never
looked up, and a protected one that some library defines is bound to the reference
itself: either way to address 0 of its own library. A library whose ELF class, data
encoding or machine differs from the process's cannot load; neither can one needing a
version that a loaded dependency lacks, nor one dlopen opens (itself or in its closure)
that was linked ``-z nodlopen``, nor one with a DT_NEEDED library the loader finds
nowhere (where it looks is :mod:`aoti_shim.checks.loader.search`'s; ``Linked.missing`` holds
what it did not find). TLS and IFUNC symbols bind by these same rules. An import of
any name that binds to nothing fails the load (a global library's function import: its first
call, :meth:`Process.call_failures`), unless it is weak, or no relocation refers to it, or it
is no shim ABI and a library this machine lacks (``Linked.unseen``) is in its lookup scope.

Only names are asked of references (through their hash tables), so the model costs a
lookup per resolved import, not a scan of libtorch. Use it as::

    from aoti_shim.checks.loader import bindings
    process = bindings.Process.of(references=refs, shims=shims, models=blobs)
    for b in process.resolve(bindings.shim_abi_imports):
        print(b.importer.display, b.name, b.definer.display if b.definer else "unresolved")
    process.load_failures()
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from aoti_shim.checks.abi import prefix as shim_abi
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.elf.layout import STB_GNU_UNIQUE, STB_LOCAL, STB_WEAK, STV_DEFAULT, STV_PROTECTED
from aoti_shim.checks.elf.symbols import Symbol, SymbolTable
from aoti_shim.checks.elf.versions import NO_VERSIONS, DynamicEntry, Versions
from aoti_shim.checks.loader import lineage

# Where a library sits in the process (load order follows this order).
PROGRAM, REFERENCE, SHIM, MODEL, DEPENDENCY = "program", "reference", "shim", "model", "dependency"
# The machine's own libraries (libc, libstdc++...) and the references' dependencies: they
# define names for the others, and their own imports are not asked about.
SYSTEM = "system"

# ELF machine numbers named in messages (the rest print as numbers).
MACHINES = {3: "i386", 40: "ARM", 62: "x86-64", 183: "AArch64", 243: "RISC-V", 21: "PowerPC64", 22: "S390"}


def describe_header(header: tuple[int, bool, int]) -> str:
    """'ELF64 little-endian x86-64' for messages."""
    elf_class, big, machine = header
    return f"ELF{elf_class} {'big' if big else 'little'}-endian {MACHINES.get(machine, f'machine {machine}')}"


class Definer(Protocol):
    """What the model asks of a library that may define a name."""

    def definitions(self, name: str) -> list[DynamicEntry]: ...


@dataclass(frozen=True, eq=False)
class Linked:
    """One library as the loader sees it: its names, needs, flags and symbol tables.

    ``definitions(name)`` answers every exported definition of a name (one per version);
    ``imports`` are its undefined dynamic symbols with their version needs.
    """

    display: str
    role: str
    # The names a DT_NEEDED entry can use for it: its DT_SONAME and its file name.
    names: frozenset[str]
    needed: tuple[str, ...] = ()
    # DT_FILTER / DT_AUXILIARY names: each filtee is searched just before the library.
    filtees: tuple[str, ...] = ()
    symbolic: bool = False
    # Linked -z nodlopen: dlopen refuses it (loaded only as a program's dependency).
    noopen: bool = False
    # (ELF class 32/64, big-endian, e_machine); None when unknown (a snapshot).
    header: tuple[int, bool, int] | None = None
    # True when the file has a .gnu.version table (version matching applies to it).
    has_versym: bool = False
    versions: Versions = NO_VERSIONS
    imports: tuple[DynamicEntry, ...] = ()
    # The .dynsym indexes only PLT relocations refer to: bound at first call, not at load.
    lazy: frozenset[int] = frozenset()
    lookup: Callable[[str], list[DynamicEntry]] = field(default=lambda name: [], repr=False)
    # DT_NEEDED entries the loader finds nowhere or cannot load, each with a clause saying
    # so ("which the loader finds nowhere (searched ...)"): a library needing one cannot load,
    # nor can whatever needs it.
    missing: tuple[tuple[str, str], ...] = ()
    # DT_NEEDED names this machine lacks and a deployment has (a GPU driver library):
    # whatever it would define is unknown, so no import of another name is judged beside it.
    unseen: tuple[str, ...] = ()
    # The relocation tables were not read (too large): which imports bind lazily is unknown,
    # and a global library's imports of names other than shim ABI are taken as lazy.
    lazy_unknown: bool = False
    # The .dynsym indexes some relocation refers to (ld.so looks up no other); None when the
    # relocation tables were not read (every import counts then).
    referenced: frozenset[int] | None = None
    # Each name's answer, asked once: every blob asks the same libraries (libc, libtorch) the
    # same names (the answers are shared lists: read, never changed).
    _answers: dict[str, list[DynamicEntry]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def definitions(self, name: str) -> list[DynamicEntry]:
        found = self._answers.get(name)
        if found is None:
            found = self._answers[name] = self.lookup(name)
        return found

    @cached_property
    def defined_versions(self) -> frozenset[str]:
        return frozenset(self.versions.defined.values())

    @cached_property
    def python_extension(self) -> bool:
        """A CPython extension module: it defines ``PyInit_<name>`` (``<name>`` its file name up
        to the first dot), the symbol the interpreter looks up when it imports the module."""
        return any(self.definitions("PyInit_" + name.split(".", 1)[0]) for name in self.names)

    @staticmethod
    def of_image(image: ElfImage, role: str, display: str | None = None, *, imports: bool = True) -> Linked:
        """A library read from an open image (which must stay open while the model is asked)."""
        if not image.has_dynsym:
            return Linked(display or image.display, role, frozenset({os.path.basename(image.path)}))
        return Linked(
            display=display or image.display,
            role=role,
            names=_names(image.path, image.soname),
            needed=tuple(image.needed),
            filtees=tuple(image.filtees),
            symbolic=image.symbolic,
            noopen=image.noopen,
            header=(image.elf_class, image.big_endian, image.machine),
            has_versym=image.has_versym,
            versions=image.versions(),
            imports=tuple(e for e in image.dynamic_entries() if e.symbol.is_import or _binds_itself(e))
            if imports
            else (),
            lazy=image.lazy_symbol_indexes() if imports else frozenset(),
            lookup=image.find_definitions,
        )

    @staticmethod
    def of_tables(
        display: str,
        role: str,
        exports: SymbolTable,
        imports: SymbolTable,
        *,
        file_name: str,
        soname: str | None = None,
        needed: Sequence[str] = (),
        filtees: Sequence[str] = (),
        symbolic: bool = False,
        noopen: bool = False,
        header: tuple[int, bool, int] | None = None,
        versions: Versions = NO_VERSIONS,
        lazy: frozenset[int] = frozenset(),
        referenced: frozenset[int] | None = None,
        local_references: Sequence[DynamicEntry] = (),
        unseen: frozenset[int] = frozenset(),
    ) -> Linked:
        """A library from the checker's packed tables. ``lazy`` and ``referenced`` are
        ElfImage.relocated_symbol_indexes' answer (``referenced`` None: the relocation tables
        were not read, and which imports bind lazily is unknown); ``local_references`` are its
        undefined symbols the loader binds to itself (ElfImage.local_references), ``unseen`` the
        .dynsym indexes of definitions its lookup never returns (ElfImage.unseen_definitions)."""
        entries = tuple(imports.entries_of(sorted(imports), versions))
        entries += tuple(e for e in local_references if e.symbol.name not in imports)
        return Linked(
            display=display,
            role=role,
            names=_names(file_name, soname),
            needed=tuple(needed),
            filtees=tuple(filtees),
            symbolic=symbolic,
            noopen=noopen,
            header=header,
            has_versym=exports.has_versym or imports.has_versym,
            versions=versions,
            imports=entries,
            lazy=lazy,
            lookup=lambda name: [e for e in exports.entries(name, versions) if e.index not in unseen],
            lazy_unknown=referenced is None,
            referenced=referenced,
        )

    @staticmethod
    def of_reference(ref: object, display: str | None = None) -> Linked:
        """A reference: an open ElfImage, or anything with ``find_export`` (a snapshot's
        library). A snapshot keeps whether the library has ``.gnu.version`` and its version
        definitions, and per name whether it is versioned (index 2 or more); its unversioned
        names are at index 1, the global version, as the loader reads them. One written
        before versions were kept is taken as a library without ``.gnu.version``."""
        if isinstance(ref, ElfImage):
            return Linked.of_image(ref, REFERENCE, display, imports=False)
        find = ref.find_export  # type: ignore[attr-defined]  # a snapshot's library, duck-typed: snapshot/ sits above loader/
        shown = display or str(getattr(ref, "display", ref))
        file_name = str(getattr(ref, "name", os.path.basename(shown.split("!")[-1])))
        kept = getattr(ref, "versions", None)
        versions = NO_VERSIONS if kept is None else Versions(kept.defined, kept.base, {})
        # A base version at index 1 names the global definitions (what readelf shows as BASE).
        global_version = versions.defined.get(1) if 1 in versions.base else None

        def lookup(name: str) -> list[DynamicEntry]:
            sym: Symbol | None = find(name)
            if sym is None:
                return []
            # A versioned name's index is not kept: 2, the oldest version, stands for it.
            return [DynamicEntry(sym, 0, 2, None) if sym.versioned else DynamicEntry(sym, 0, 1, global_version)]

        return Linked(
            shown, REFERENCE, _names(file_name, getattr(ref, "soname", None)), has_versym=bool(kept and kept.versym),
            versions=versions, lookup=lookup,
        )


def _binds_itself(entry: DynamicEntry) -> bool:
    """An undefined symbol the loader binds to the importing library itself, at address 0:
    STB_LOCAL or hidden or internal (RESOLVE_MAP never looks it up), or protected (looked
    up, and when some library defines it, bound to the reference itself instead)."""
    sym = entry.symbol
    return not sym.defined and bool(sym.name) and (sym.bind == STB_LOCAL or sym.visibility != STV_DEFAULT)


def _names(path: str, soname: str | None) -> frozenset[str]:
    base = os.path.basename(path.split("!")[-1])
    return frozenset(n for n in (base, soname) if n)


@dataclass(frozen=True)
class Binding:
    """Where one import of one library binds in the process."""

    importer: Linked
    entry: DynamicEntry
    # None: no library of the process defines it (as far as the checked libraries tell).
    definer: Linked | None
    definition: DynamicEntry | None
    # "self" (-Bsymbolic), "global", "local", "unique" (the process's GNU_UNIQUE instance),
    # "itself" (an undefined local or non-default-visibility reference, bound to its own
    # library: definer None, or the library itself for a protected one) or "none".
    scope: str

    def __init__(
        self, importer: Linked, entry: DynamicEntry, definer: Linked | None, definition: DynamicEntry | None,
        scope: str,
    ) -> None:
        # Written out, as Symbol's (checks/elf/symbols.py): one per import of every library.
        fields = self.__dict__
        fields["importer"], fields["entry"], fields["definer"] = importer, entry, definer
        fields["definition"], fields["scope"] = definition, scope

    @property
    def name(self) -> str:
        return self.entry.symbol.name

    @property
    def version(self) -> str | None:
        return self.entry.version

    @property
    def weak(self) -> bool:
        return self.entry.symbol.bind == STB_WEAK


@dataclass(frozen=True)
class LoadFailure:
    """A library dlopen refuses, and why (one line)."""

    library: Linked
    reason: str
    # An import bound to nothing (the import rules say which); else the library itself
    # cannot load (its class or machine, a missing version).
    undefined: bool = False
    # For an import bound to nothing: the library that imports it (``library`` or one of
    # its closure), the import, and the search list its lookup went through after the
    # global scope (where a definer was expected).
    importer: Linked | None = None
    entry: DynamicEntry | None = None
    searched: tuple[Linked, ...] = ()
    # A global library's lazy (PLT) import: it loaded, and its first call fails (a host
    # that opens it RTLD_NOW, as Python's ctypes does, is refused the load).
    at_call: bool = False

    @property
    def symbol(self) -> str:
        return self.entry.symbol.name if self.entry is not None else ""

    @property
    def judged_here(self) -> bool:
        """An import bound to nothing whose name is no shim ABI: LOAD_FAILURE's to say (the
        import rules say the shim-ABI ones)."""
        return self.undefined and self.entry is not None and not shim_abi.is_shim_name(self.symbol)


def shim_abi_imports(entry: DynamicEntry) -> bool:
    """The imports the checker's verdict rests on: shim-ABI names, prefixed or not."""
    return shim_abi.is_shim_name(entry.symbol.name)


def every_import(entry: DynamicEntry) -> bool:
    return True


def matches(definer: Linked, d: DynamicEntry, want: DynamicEntry) -> bool:
    """glibc's check_match for a definition ``d`` of ``definer`` and an import ``want``,
    on versions alone (the name already matched)."""
    if not definer.has_versym:
        return True  # no version information: every definition of the name serves
    if want.version is not None:
        if d.version == want.version:
            return True
        # Another version: only an unversioned (unknown index) definition that is not hidden.
        return not (want.hidden or definer.versions.known(d.version_index) or d.hidden)
    return d.version_index < 3


def versions_asserted(definer: Linked, want: DynamicEntry) -> bool:
    """Whether glibc's check_match asserts on ``definer`` for ``want`` (ld.so then ends the
    process): a versioned import reaching the file its version is needed from, which has no
    symbol versions at all. The lookup walks the scope before a protected reference's answer
    (itself), so this holds for those too."""
    return want.version is not None and not definer.has_versym and want.version_file in definer.names


def pick(definer: Linked, defs: list[DynamicEntry], want: DynamicEntry) -> DynamicEntry | None:
    """The definition of ``definer`` an import binds to, or None."""
    for d in defs:
        if matches(definer, d, want):
            return d
    if want.version is None and definer.has_versym:
        # An unversioned import still takes the one versioned definition, if only one is visible.
        visible = [d for d in defs if not d.hidden]
        if len(visible) == 1:
            return visible[0]
    return None


def _mismatch(lib: Linked, header: tuple[int, bool, int] | None) -> str | None:
    if header is None or lib.header is None or lib.header == header:
        return None
    return f"it is {describe_header(lib.header)}, the process {describe_header(header)}: it cannot load"


def refusals(
    root: Linked, closure: list[Linked], new: list[Linked], header: tuple[int, bool, int] | None
) -> list[LoadFailure]:
    """Why dlopen refuses ``root`` before it maps anything, empty when it maps: a library of
    its closure of another ELF class, data encoding or machine than the process's
    (``header``), a DT_NEEDED library found nowhere, a ``new`` library linked -z nodlopen."""
    mismatched = [lib for lib in closure if _mismatch(lib, header)]
    if mismatched:
        failures: list[LoadFailure] = []
        for lib in closure:
            why = _mismatch(lib, header)
            if why is not None:
                failures.append(LoadFailure(lib, why))
        if root not in mismatched:
            failures.append(LoadFailure(root, f"needs {mismatched[0].display}, which cannot load"))
        return failures
    absent = [(lib, name, searched) for lib in closure for name, searched in lib.missing]
    if absent:
        lib, name, searched = absent[0]
        through = "" if lib is root else f" (a dependency of {lib.display})"
        return [LoadFailure(root, f"needs {name}{through}, {searched}")]
    refused = [lib for lib in new if lib.noopen and lib.role != SYSTEM] if root.role != PROGRAM else []
    # A program's closure loads at start-up; everything else here is dlopen's.
    failures = [LoadFailure(lib, "it is linked -z nodlopen (DF_1_NOOPEN): dlopen refuses it") for lib in refused]
    if refused and root not in refused:
        failures.append(LoadFailure(root, f"needs {refused[0].display}, which dlopen refuses (-z nodlopen)"))
    return failures


def unmet_version(root: Linked, new: list[Linked], by_name: Mapping[str, Linked]) -> LoadFailure | None:
    """The first version a ``new`` library needs from a loaded library that defines none by
    that name. The machine's own libraries' needs are the machine's, and a reference's are
    its own: the check judges the libraries it is given, not libtorch's build against this libc."""
    for lib in new:
        if lib.role == SYSTEM or root.role == REFERENCE:
            continue
        for _, (version, file) in sorted(lib.versions.needed.items()):
            dep = by_name.get(file)
            if dep is None or not dep.versions.defined:
                continue  # a file without version definitions (or an old snapshot's): glibc only warns
            if version not in dep.defined_versions:
                return LoadFailure(lib, f"needs version '{version}' of {file}, which defines no such version")
    return None


class _Kept:
    """Answers that hold while the global scope stands (each change of it is a generation):
    the first definer of a name in the global scope's first n libraries, and each import's
    binding (a blob's imports are bound when it loads and again when they are judged)."""

    def __init__(self) -> None:
        self.generation = 0
        self.first: dict[tuple[int, int, str, str | None, bool], tuple[Linked, DynamicEntry] | None] = {}
        self.bound: dict[tuple[int, int, int, int, int], Binding] = {}

    def first_definer(
        self, scope: list[Linked], n: int, name: str, want: DynamicEntry
    ) -> tuple[Linked, DynamicEntry] | None:
        """The first of ``scope``'s first ``n`` libraries with a definition of ``name`` that
        ``want`` binds to, and that definition: searched once per scope, name and the version
        wanted (what :func:`pick` reads of the import), however many libraries import it."""
        key = (self.generation, n, name, want.version, want.hidden)
        if key in self.first:
            return self.first[key]
        found = None
        for definer in scope[:n]:
            d = pick(definer, definer.definitions(name), want)
            if d is not None:
                found = (definer, d)
                break
        self.first[key] = found
        return found


class Process:
    """The coalesced process: its libraries in load order and their scopes."""

    def __init__(
        self,
        *,
        programs: Sequence[Linked] = (),
        references: Sequence[Linked] = (),
        shims: Sequence[Linked] = (),
        models: Sequence[Linked] = (),
        dependencies: Sequence[Linked] = (),
        machine: Sequence[Linked] = (),
    ) -> None:
        self.programs = list(programs)
        # The machine's libraries every process has (libc and its closure, the program's)
        # and the references' dependencies: global, loaded first.
        self.machine = list(machine)
        self.references = list(references)
        self.shims = list(shims)
        self.models = list(models)
        # Libraries known only as someone's DT_NEEDED (loaded with whoever needs them).
        self.dependencies = list(dependencies)
        self._by_name: dict[str, Linked] = {}
        for lib in (*self.programs, *self.references, *self.shims, *self.dependencies, *self.models, *self.machine):
            for n in lib.names:
                self._by_name.setdefault(n, lib)
        self.header = next((lib.header for lib in (*self.references, *self.models, *self.programs) if lib.header), None)

    @staticmethod
    def of(
        *,
        references: Iterable[object] = (),
        shims: Sequence[Linked] = (),
        models: Sequence[Linked] = (),
        programs: Sequence[Linked] = (),
        dependencies: Sequence[Linked] = (),
        machine: Sequence[Linked] = (),
    ) -> Process:
        """A process from references (open images or snapshot libraries) and checked libraries."""
        refs = [r if isinstance(r, Linked) else Linked.of_reference(r) for r in references]
        return Process(
            programs=programs, references=refs, shims=shims, models=models, dependencies=dependencies, machine=machine
        )

    # -- loading ------------------------------------------------------------------------

    def _closure(self, root: Linked) -> list[Linked]:
        """``root`` and the known libraries its DT_NEEDED entries reach, breadth first
        (the loader's search list for it); a filter's known filtees just before it (glibc
        looks a name up in the filtee first, in its own definitions only after)."""
        order = [root]
        seen = {id(root)}
        at = 0
        while at < len(order):
            for name in order[at].filtees:
                dep = self._by_name.get(name)
                if dep is not None and id(dep) not in seen:
                    seen.add(id(dep))
                    order.insert(at, dep)
                    at += 1
            for name in order[at].needed:
                dep = self._by_name.get(name)
                if dep is not None and id(dep) not in seen:
                    seen.add(id(dep))
                    order.append(dep)
            at += 1
        return order

    @cached_property
    def _loaded(self) -> tuple[list[Linked], dict[int, list[Linked]], list[LoadFailure]]:
        """The global scope in order, each library's local scope, and what failed to load.

        dlopen relocates a new library before it joins the global scope: its lookups see
        the global libraries loaded before it, then its own search list (itself and its
        DT_NEEDED closure, which its dependencies share). A blob's imports (RTLD_NOW) and a
        global library's data and TLS imports bind when it loads: a non-weak one that binds
        to nothing fails the whole dlopen, which loads nothing then. A global library's
        function imports bind lazily, at their first call, when every global library is
        loaded: one bound to nothing fails that call, not the load."""
        self._global: list[Linked] = []
        self._before: dict[int, int] = {}
        self._local: dict[int, list[Linked]] = {}
        self._failures: list[LoadFailure] = []
        # Libraries of a dlopen that was rolled back for an undefined symbol: the scopes it
        # saw, so their bindings can still be told (the import rules report them).
        self._tried: dict[int, tuple[list[Linked], int | None]] = {}
        # The imports that failed a dlopen, as bound then (a later load of the same library,
        # as someone's dependency, may bind them: the failure still stands).
        self._failed_bindings: list[Binding] = []
        # Imports of the global libraries bound to nothing at their first call.
        self._call_failures: list[LoadFailure] = []
        self._kept = _Kept()
        self._opening = True
        for root in (*self.machine, *self.programs, *self.references, *self.shims):
            self._open(root, glob=True)
        for blob in self.models:
            if id(blob) not in self._local:  # not a shim's dependency, loaded global with it
                self._open(blob, glob=False)
        self._opening = False
        self._bind_calls()
        return self._global, self._local, self._failures

    def _open(self, root: Linked, *, glob: bool) -> None:
        """dlopen ``root``: map its closure, check it, bind it, keep it or roll it back."""
        closure = self._closure(root)
        if root.role == SYSTEM:
            # The process's own (libc, the references' dependencies): there already, not judged.
            self._join([lib for lib in closure if id(lib) not in self._local], closure, glob)
            return
        new = [lib for lib in closure if id(lib) not in self._local]
        refused = refusals(root, closure, new, self.header)
        if refused:
            self._failures.extend(refused)
            return
        self._join(new, closure, glob)
        unmet = unmet_version(root, new, self._by_name)
        if unmet is not None:
            self._failures.append(unmet)
            self._roll_back(new, glob)
            return
        if root.role in (REFERENCE, SYSTEM):
            return  # libtorch's and the machine's own imports are not asked about
        self._relocate(root, new, glob)

    def _relocate(self, root: Linked, new: list[Linked], glob: bool) -> None:
        """Bind the new libraries' imports that bind at load; the first bound to nothing (or
        one glibc asserts on) rolls the whole dlopen back."""
        for lib in reversed(new):  # ld.so relocates the dependencies first
            # .rela.dyn (data, TLS) before .rela.plt (functions): the first failure is the one said.
            for entry in sorted(lib.imports, key=lambda e: (e.index in lib.lazy, e.index)):
                if glob and self._is_lazy(lib, entry):
                    continue  # bound lazily, at its first call (see bind)
                b = self._binding(lib, entry)
                if self._unbound(b):
                    self._failures.append(self._undefined(root, lib, entry))
                    self._failed_bindings.append(b)
                    # ld.so names the first; the check names every other name bound to nothing.
                    self._failures.extend(self._more_undefined(root, new, glob, (lib, entry)))
                    self._roll_back(new, glob)
                    return
                if (
                    b.definer is not None
                    and shim_abi.is_shim_name(entry.symbol.name)  # (the others: only whether they bind)
                    and versions_asserted(b.definer, entry)
                ):
                    # glibc asserts that the file a version is needed from has versions:
                    # ld.so ends the whole process ("Inconsistency detected by ld.so").
                    self._failures.append(
                        LoadFailure(
                            lib,
                            f"needs '{entry.symbol.name}@{entry.version}' from {entry.version_file}, which has no "
                            "symbol versions: ld.so stops the process",
                        )
                    )
                    self._roll_back(new, glob)
                    return

    def _join(self, new: list[Linked], closure: list[Linked], glob: bool) -> None:
        seen = len(self._global)
        for lib in new:
            self._local[id(lib)] = closure
            if glob:
                self._before[id(lib)] = seen
        if glob:
            self._global.extend(new)
            self._kept.generation += 1

    @staticmethod
    def _is_lazy(lib: Linked, entry: DynamicEntry) -> bool:
        """A PLT import (bound at its first call when its library is global); with the
        relocation tables unread, every import of a name that is no shim ABI."""
        return entry.index in lib.lazy or (lib.lazy_unknown and not shim_abi.is_shim_name(entry.symbol.name))

    def _binding(self, lib: Linked, entry: DynamicEntry) -> Binding:
        """:meth:`bind` for the load's judgement. An import of a name that is no shim ABI is
        only asked whether it binds at all: any definer answers that, so its own search list
        (where its definer most likely is) is asked first, the global scope after."""
        if shim_abi.is_shim_name(entry.symbol.name) or _binds_itself(entry):
            return self.bind(lib, entry)
        name = entry.symbol.name
        for definer in self._search_list(lib):
            d = pick(definer, definer.definitions(name), entry)
            if d is not None:
                return Binding(lib, entry, definer, d, "global" if definer in self._global else "local")
        first = self._kept.first_definer(self._global, self._visible(lib, entry), name, entry)
        if first is not None:
            return Binding(lib, entry, first[0], first[1], "global")
        return Binding(lib, entry, None, None, "none")

    def _unbound(self, b: Binding) -> bool:
        """An import that fails its load (or first call): bound to nothing, not weak, and
        judgeable: an import of a name that is no shim ABI beside a library this machine
        lacks (a GPU driver's) may be that library's, so it counts as bound. (A shim-ABI
        name is never the driver's: the import rules judge it whatever else is there.)"""
        if b.definer is not None or b.scope == "itself" or b.entry.symbol.bind == STB_WEAK:
            return False
        if shim_abi.is_shim_name(b.name):
            return True
        if b.importer.referenced is not None and b.entry.index not in b.importer.referenced:
            return False  # no relocation refers to it: ld.so never looks it up
        if b.name.startswith(("Py", "_Py")) and self.in_python(b.importer):
            # CPython's C API is the host program's, the interpreter's: an extension module
            # links no libpython (manylinux forbids it), so no library defines these names.
            return False
        scope = [*self.visible_global(b.importer, b.entry), *self._search_list(b.importer)]
        return not any(lib.unseen for lib in scope)

    @cached_property
    def _python_hosted(self) -> frozenset[int]:
        everyone = {id(x): x for x in (*self.programs, *self.references, *self.shims, *self.dependencies, *self.models)}
        return lineage.python_hosted(everyone.values(), self._closure)

    def in_python(self, lib: Linked) -> bool:
        """True when ``lib`` lives in a CPython process (:func:`lineage.python_hosted`)."""
        return id(lib) in self._python_hosted

    def chain(self, lib: Linked) -> list[Linked]:
        """How ``lib`` joined the process (:func:`lineage.chain`): its root first."""
        return lineage.chain((*self.programs, *self.references, *self.shims, *self.models), lib, self._by_name)

    def _search_list(self, lib: Linked) -> list[Linked]:
        return self._local.get(id(lib)) or (self._tried[id(lib)][0] if id(lib) in self._tried else [lib])

    def _undefined(self, root: Linked, lib: Linked, entry: DynamicEntry, *, at_call: bool = False) -> LoadFailure:
        return LoadFailure(
            root, f"undefined symbol: {entry.symbol.name}", undefined=True, importer=lib, entry=entry,
            searched=tuple(self._search_list(lib)), at_call=at_call,
        )

    def _more_undefined(
        self, root: Linked, new: list[Linked], glob: bool, first: tuple[Linked, DynamicEntry]
    ) -> Iterator[LoadFailure]:
        """The other imports of a failed dlopen, of names that are no shim ABI, bound to nothing."""
        for lib in reversed(new):
            for entry in lib.imports:
                if (
                    (lib, entry) == first
                    or shim_abi.is_shim_name(entry.symbol.name)
                    or (glob and self._is_lazy(lib, entry))
                ):
                    continue
                if self._unbound(self._binding(lib, entry)):
                    yield self._undefined(root, lib, entry)

    def _bind_calls(self) -> None:
        """The global libraries' lazy imports of names that are no shim ABI, bound at their
        first call, every global library loaded (the import rules judge the shim-ABI ones)."""
        seen: set[int] = set()
        for lib in self._global:
            if id(lib) in seen or lib.role in (REFERENCE, SYSTEM):
                continue
            seen.add(id(lib))
            for entry in lib.imports:
                if self._is_lazy(lib, entry) and not shim_abi.is_shim_name(entry.symbol.name):
                    if self._unbound(self._binding(lib, entry)):
                        self._call_failures.append(self._undefined(lib, lib, entry, at_call=True))

    def call_failures(self) -> list[LoadFailure]:
        """The global libraries' lazy imports of names that are no shim ABI that bind to
        nothing: each fails its first call (and the load, for a host opening it RTLD_NOW)."""
        self._ensure()
        return list(self._call_failures)

    def _roll_back(self, new: list[Linked], glob: bool) -> None:
        for lib in new:
            self._tried.setdefault(id(lib), (self._local[id(lib)], self._before.get(id(lib))))
            self._local.pop(id(lib), None)
            self._before.pop(id(lib), None)
        if glob:
            del self._global[len(self._global) - len(new) :]
            self._kept.generation += 1

    def load_failures(self, *, undefined: bool = True) -> list[LoadFailure]:
        """What dlopen refuses; ``undefined=False`` leaves out the imports bound to nothing."""
        return [f for f in self._loaded[2] if undefined or not f.undefined]

    @cached_property
    def global_scope(self) -> list[Linked]:
        return list(self._loaded[0])

    def scope_of(self, lib: Linked) -> list[Linked] | None:
        """The libraries ``lib``'s lookups search after the global scope (its local scope);
        None when it did not load."""
        self._ensure()
        return self._local.get(id(lib))

    def _ensure(self) -> None:
        if not hasattr(self, "_failures"):
            self._loaded  # noqa: B018 - computes the scopes once

    def visible_global(self, lib: Linked, entry: DynamicEntry | None = None) -> list[Linked]:
        """The part of the global scope ``lib``'s lookups see: what was loaded before it
        (all of it for a global library's function import, bound at its first call)."""
        n = self._visible(lib, entry)
        return self._global if n == len(self._global) else self._global[:n]

    def _visible(self, lib: Linked, entry: DynamicEntry | None = None) -> int:
        """How many of the global scope's libraries :meth:`visible_global` is."""
        self._ensure()
        if entry is not None and entry.index in lib.lazy and id(lib) in self._before and not self._opening:
            return len(self._global)
        if id(lib) in self._before:
            return self._before[id(lib)]
        if id(lib) in self._local:
            return len(self._global)  # loaded local (a blob's search list), maybe after a failed try
        if id(lib) in self._tried:
            seen = self._tried[id(lib)][1]
            return len(self._global) if seen is None else seen
        return len(self._global)

    # -- binding ------------------------------------------------------------------------

    def bind(self, lib: Linked, entry: DynamicEntry) -> Binding:
        """Where ``lib``'s import ``entry`` binds: worked out once while the scopes it reads
        stand (a GNU_UNIQUE answer, which depends on the blobs loaded so far, every time)."""
        if _binds_itself(entry) and entry.symbol.visibility != STV_PROTECTED:
            return Binding(lib, entry, None, None, "itself")
        n = self._visible(lib, entry)
        local = self._search_list(lib)
        key = (id(lib), id(entry), self._kept.generation, n, id(local))
        known = self._kept.bound.get(key)
        if known is not None:
            return known
        b = self._bind(lib, entry, n, local)
        if b.definition is None or b.definition.symbol.bind != STB_GNU_UNIQUE:
            self._kept.bound[key] = b
        return b

    def _bind(self, lib: Linked, entry: DynamicEntry, n: int, local: list[Linked]) -> Binding:
        """:meth:`bind`'s search: itself (-Bsymbolic), the global scope's first ``n``, its search
        list (a library met twice answers the same, so the second ask is no other answer)."""
        name = entry.symbol.name
        found = None
        if lib.symbolic:
            d = pick(lib, lib.definitions(name), entry)
            found = None if d is None else (lib, d, "self")
        if found is None:
            first = self._kept.first_definer(self._global, n, name, entry)
            found = None if first is None else (*first, "global")
        for definer in local if found is None else ():
            d = pick(definer, definer.definitions(name), entry)
            if d is not None:
                found = (definer, d, "local")
                break
        if found is None:
            return Binding(lib, entry, None, None, "none")
        definer, d, scope = found
        if entry.symbol.visibility == STV_PROTECTED and not versions_asserted(definer, entry):
            return Binding(lib, entry, lib, None, "itself")  # glibc's answer: the reference itself
        if d.symbol.bind == STB_GNU_UNIQUE:
            first_unique = self._unique_owner(name, entry)
            if first_unique is not None and first_unique[0] is not definer:
                return Binding(lib, entry, first_unique[0], first_unique[1], "unique")
        return Binding(lib, entry, definer, d, scope)

    def _unique_owner(self, name: str, entry: DynamicEntry) -> tuple[Linked, DynamicEntry] | None:
        """The first loaded library defining ``name`` GNU_UNIQUE: its copy is the process's."""
        order = [*self._global, *(lib for blob in self.models for lib in (self._local.get(id(blob)) or []))]
        seen: set[int] = set()
        for lib in order:
            if id(lib) in seen:
                continue
            seen.add(id(lib))
            d = pick(lib, [x for x in lib.definitions(name) if x.symbol.bind == STB_GNU_UNIQUE], entry)
            if d is not None:
                return lib, d
        return None

    def libraries(self) -> list[Linked]:
        """Every library whose imports count: programs, shims, blobs, known dependencies
        (references' own imports are libtorch's business)."""
        out: list[Linked] = []
        seen: set[int] = set()
        for lib in (*self.programs, *self.shims, *self.dependencies, *self.models):
            if id(lib) not in seen:
                seen.add(id(lib))
                out.append(lib)
        return out

    def resolve(self, which: Callable[[DynamicEntry], bool] = shim_abi_imports) -> Iterator[Binding]:
        """The binding of every import ``which`` selects, library by library (those that
        failed to load are left out: :meth:`load_failures` says why)."""
        self._ensure()
        for lib in self.libraries():
            failed = [b for b in self._failed_bindings if b.importer is lib and which(b.entry)]
            yield from failed
            if self.scope_of(lib) is None and id(lib) not in self._tried:
                continue
            for entry in lib.imports:
                if which(entry):
                    yield self.bind(lib, entry)
