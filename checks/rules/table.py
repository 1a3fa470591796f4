"""The checker's rules, kept as one table of (ID, function, doc, severity).

Each rule reads a :class:`Context` and yields what it found as ``(artifact, symbol,
message[, related])`` tuples, or :class:`Columns` of many; :func:`evaluate` stamps each
with the rule's id and severity from its :class:`Rule` row, so a rule's identity is
written once. The rules about imports are judgements over the binding model
(:mod:`aoti_shim.checks.loader.bindings`): where each shim-ABI import binds in the coalesced
process. Shim libraries and model blobs are small, so their symbol tables are read
whole; references (libtorch) are large and are only asked about single names, through
their ``.gnu.hash``.
"""

from __future__ import annotations

import dataclasses
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import compress
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

from aoti_shim.checks.abi import prefix as prefixes
from aoti_shim.checks.abi.prefix import MODEL_ENTRY_PREFIX
from aoti_shim.checks.elf.layout import STB_GNU_UNIQUE, STB_LOCAL, STB_WEAK, STT_TLS
from aoti_shim.checks.elf.symbols import Symbol
from aoti_shim.checks.elf.versions import DynamicEntry
from aoti_shim.checks.loader.bindings import (
    DEPENDENCY,
    MODEL,
    PROGRAM,
    REFERENCE,
    SHIM,
    SYSTEM,
    Binding,
    Linked,
    LoadFailure,
    Process,
)
from aoti_shim.checks.report.model import BLOCKING, WARNING, FindingBatch
from aoti_shim.torch_names import shipped_names

if TYPE_CHECKING:
    # Named in annotations only: a scan, which reads no reference, skips the reference
    # readers' imports (the snapshot and wheel readers, difflib: a tenth of its start-up).
    from aoti_shim.checks.native.process import NativeProcess
    from aoti_shim.checks.references.reference import Reference

# Mangled and C names of the C++ runtime (libstdc++, libsupc++, libgcc's unwinder)
# that a library only exports when it links the runtime statically.
RUNTIME_NAME = re.compile(
    r"(_ZN?K?St|_ZT[VISH]N?K?St|_ZT[VIS]N10__cxxabiv1|_ZN10__cxxabiv1|_ZN9__gnu_cxx|_ZT[VIS]N9__gnu_cxx"
    r"|_Znw|_Zna|_Zdl|_Zda|__cxa_|__gxx_|_Unwind_|__gcc_personality|_ZGTtNSt)"
)
# Every name RUNTIME_NAME matches starts with one of these.
_RUNTIME_STARTS = (
    "_ZSt", "_ZNSt", "_ZKSt", "_ZNKSt", "_ZT", "_ZN10__cxxabiv1", "_ZN9__gnu_cxx",
    "_Znw", "_Zna", "_Zdl", "_Zda", "__cxa_", "__gxx_", "_Unwind_", "__gcc_personality", "_ZGTtNSt",
)
_RUNTIME_OR_CUDA_STARTS = (*_RUNTIME_STARTS, "cuda")
# Of those, the ones no ordinary translation unit defines: even WEAK, they are the runtime.
# The rest (std:: template instantiations) are WEAK in any C++ library (vague linkage).
ALWAYS_RUNTIME_NAME = re.compile(
    r"(__cxa_|__gxx_|_Unwind_|__gcc_personality|_Znw|_Zna|_Zdl|_Zda|_ZT[VIS]N10__cxxabiv1|_ZN10__cxxabiv1)"
)
# CUDA runtime API names (cudaMalloc, cudaLaunchKernel...). A library defines them only
# when it carries a runtime of its own (libcudart_static built with default visibility, or
# wrappers). nvcc's registration entry points (__cudaRegisterFatBinary, __fatbinwrap_*...)
# start with underscores and do not match: every library with kernels has them.
CUDA_RUNTIME_NAME = re.compile(r"cuda[A-Z]\w*")


@dataclass(frozen=True)
class Library:
    """A checked library with its whole dynamic symbol table in hand."""

    display: str
    role: str  # "shim" or "model"
    exports: Mapping[str, Symbol]
    imports: Mapping[str, Symbol]
    # The file's identity (device, inode): one file given as --shim and --model is one definer.
    identity: object = None
    # The loader's view of it (names, needs, versions, flags) for the binding model.
    linked: Linked | None = None
    # An executable that exports dynamic symbols.
    executable: bool = False
    # An executable the user named (not one found in a wheel or a folder): the program that
    # hosts the blobs. Any other program is a process of its own.
    hosts: bool = False
    # Its exports that are copies (R_*_COPY) of a library's data: the process's one instance.
    copied: frozenset[str] = frozenset()
    # Its shim-ABI exports, in any order, when the reader picked them already (given with
    # ``exports``, never kept past a change of them): marked_exports sorts them.
    shim_exports: Sequence[str] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def sorted_exports(self) -> list[str]:
        return sorted(self.exports)

    @cached_property
    def sorted_imports(self) -> list[str]:
        return sorted(self.imports)

    def kinds(self, names: list[str]) -> list[str]:
        """'GLOBAL FUNC' and the like for exports, without making Symbols."""
        kinds = getattr(self.exports, "kinds", None)
        if kinds is not None:
            return kinds(names)  # type: ignore[no-any-return]  # the reader's fast path, found by duck typing
        return [f"{self.exports[n].bind_name} {self.exports[n].type_name}" for n in names]

    @cached_property
    def runtime_exports(self) -> frozenset[str]:
        """Exports named like the C++ runtime's (one pass, shared by two rules; the C-fast
        prefix test first, the regex only on what passes it)."""
        match = RUNTIME_NAME.match
        return frozenset([n for n in self._runtime_candidates if n.startswith(_RUNTIME_STARTS) and match(n)])

    @cached_property
    def cuda_runtime_exports(self) -> list[str]:
        """Exports named like the CUDA runtime API's, sorted (shared by two rules)."""
        match = CUDA_RUNTIME_NAME.fullmatch
        return sorted([n for n in self._runtime_candidates if n.startswith("cuda") and match(n)])

    @cached_property
    def _runtime_candidates(self) -> list[str]:
        # One C-fast prefix test over all exports serves both runtimes' rules.
        return [n for n in self.exports if n.startswith(_RUNTIME_OR_CUDA_STARTS)]

    @cached_property
    def is_aoti_model(self) -> bool:
        return any(name.startswith(MODEL_ENTRY_PREFIX) for name in self.exports)

    @cached_property
    def marked_exports(self) -> list[str]:
        """The shim-ABI exports (prefixed or not; aoti_torch_* and the stable C ABI's torch_*),
        sorted: one pass, shared by the prefix inference and the rules about shim names."""
        if self.shim_exports is not None:
            return sorted(self.shim_exports)  # the same names: a per-name test, sorted after
        return prefixes.shim_names(self.sorted_exports)

    @property
    def exports_shims(self) -> bool:
        return bool(self.marked_exports)

    @cached_property
    def shim_imports(self) -> list[str]:
        """Its shim-ABI imports (prefixed or not), sorted."""
        return prefixes.shim_names(self.sorted_imports)

    @cached_property
    def mangled_shim_exports(self) -> list[str]:
        """C++-mangled exports holding a shim name: shims defined without extern "C"."""
        return [n for n in self.marked_exports if prefixes.is_mangled(n)]

    def with_linked(self, linked: Linked) -> Library:
        """The library with another loader view, what was worked out from its unchanged
        symbol tables kept (sorted names, shim names: a 75k-name sort and scan)."""
        new = dataclasses.replace(self, linked=linked)
        new.__dict__.update((k, v) for k, v in self.__dict__.items() if k in _OF_TABLES)
        return new

    def imports_prefix(self, prefixes_: frozenset[str]) -> bool:
        """True when it imports a shim name with one of ``prefixes_``: a consumer of the prefixed ABI."""
        return any(prefixes.prefix_of(n) in prefixes_ for n in self.shim_imports)


# Library's cached properties worked out from its exports and imports alone: with_linked
# keeps them (one not named here is worked out again, never stale).
_OF_TABLES = frozenset({
    "sorted_exports", "sorted_imports", "runtime_exports", "cuda_runtime_exports", "_runtime_candidates",
    "is_aoti_model", "marked_exports", "shim_imports", "mangled_shim_exports",
})


@dataclass(frozen=True)
class Context:
    """What every rule reads: the prefix, the checked libraries and the references."""

    prefix: str | None
    shims: Sequence[Library]
    models: Sequence[Library]
    references: Sequence[Reference]
    # "given" when the prefix came from the user (--prefix, the plugin), not from the shims.
    prefix_source: str = "inferred"
    # Every prefix the shims' exports carry in front of aoti_torch_ (the ground truth).
    shim_prefixes: frozenset[str] = field(default=frozenset())
    # Libraries the checked ones need, found where their run paths point (not checked
    # themselves: they load with whoever needs them).
    dependencies: Sequence[Linked] = ()
    # The dependencies a shim's closure reaches (global with it), their shim-ABI exports
    # alone: judged by the export rules as the shims are.
    shim_dependencies: Sequence[Library] = ()
    # (library, DT_NEEDED name, why) of dependencies this machine lacks and a deployment
    # has: the GPU driver's, another distribution's.
    unseen: Sequence[tuple[str, str, str]] = ()
    # The process's own libraries, global first: the machine's libc, the references'
    # dependencies (read for their exports only).
    machine: Sequence[Linked] = ()
    # A check of Mach-O or PE images: the rules judge this process (each row's ``native``
    # function), and the ELF fields above are empty.
    native: NativeProcess | None = None

    @property
    def libraries(self) -> Sequence[Library]:
        return [*self.shims, *self.models]

    @property
    def exporters(self) -> Sequence[Library]:
        """What the export rules judge: the shims and the dependencies loaded global with them."""
        return [*self.shims, *self.shim_dependencies]

    @cached_property
    def own_prefixes(self) -> frozenset[str]:
        """The prefixes of the shims' ABI: the one checked and those the shims carry."""
        return frozenset(p for p in (self.prefix, *self.shim_prefixes) if p)

    @cached_property
    def _placed(self) -> tuple[list[Linked], list[Linked], list[Linked], list[Linked]]:
        """The checked libraries' loader views: (the named programs, the shims, the models, the
        programs found in a wheel or a folder)."""
        def linked(lib: Library, role: str) -> Linked:
            if lib.linked is not None:
                return lib.linked if lib.linked.role == role else dataclasses.replace(lib.linked, role=role)
            exports = lib.exports
            return Linked(lib.display, role, frozenset(), lookup=lambda name: _entries(exports, name))

        programs: list[Linked] = []
        shims: list[Linked] = []
        models: list[Linked] = []
        found: list[Linked] = []
        for lib in self.distinct_libraries:
            role = PROGRAM if lib.executable else (SHIM if lib.role == "shim" else MODEL)
            one = linked(lib, role)
            (
                found
                if role == PROGRAM and not lib.hosts
                else programs
                if role == PROGRAM
                else shims
                if role == SHIM
                else models
            ).append(one)
        return programs, shims, models, found

    @cached_property
    def process(self) -> Process:
        """The coalesced process of the binding model: the named program, the references, the
        shims (global), then each model (local)."""
        programs, shims, models, _ = self._placed
        return Process.of(
            references=self.references, programs=programs, shims=shims, models=models, dependencies=self.dependencies,
            machine=self.machine,
        )

    @cached_property
    def own_processes(self) -> list[Process]:
        """A program found in a wheel or a folder is no host of the others: each is a process of
        its own, the program and its DT_NEEDED closure on the machine's libraries (a tool that
        exports a copy-relocated ``stderr`` must not lend its dependencies to a library)."""
        main = self.process
        known = [*main.shims, *main.models, *main.dependencies, *main.references]
        return [
            Process(machine=self.machine, programs=[p], dependencies=[x for x in known if x is not p])
            for p in self._placed[3]
        ]

    @property
    def processes(self) -> list[Process]:
        """Every process the check judges: the coalesced one, then each found program's own."""
        return [self.process, *self.own_processes]

    @cached_property
    def judged(self) -> Sequence[Library]:
        """What the import rules judge: every library of the process, the checked ones and each
        dependency their closures reach (a blob's kernel library its RUNPATH finds, a shim's);
        one without shim-ABI imports has nothing for them."""
        deps = []
        for dep in self.dependencies:
            if dep.role != DEPENDENCY:
                continue
            imports = {e.symbol.name: e.symbol for e in dep.imports if prefixes.is_shim_name(e.symbol.name)}
            if imports:
                deps.append(Library(dep.display, "dependency", {}, imports, linked=dep))
        return [*self.distinct_libraries, *deps]

    def loaded_as(self, lib: Library) -> str:
        """' (loaded as blob.so → libdep.so)' for a dependency: who pulled it in; '' for the others."""
        if lib.role != "dependency" or lib.linked is None:
            return ""
        return f" (loaded as {' → '.join(x.display for x in self.chain(lib.linked))})"

    def chain(self, lib: Linked) -> list[Linked]:
        """Process.chain in the coalesced process, else in the found program's own that loads it."""
        for process in self.processes:
            path = process.chain(lib)
            if len(path) > 1:
                return path
        return [lib]

    def root_of(self, lib: Library) -> Library | None:
        """The checked library whose DT_NEEDED closure brought ``lib`` into the process."""
        if lib.linked is None:
            return None
        first = self.chain(lib.linked)[0]
        return next((x for x in self.distinct_libraries if x.display == first.display), None)

    @cached_property
    def linked_of(self) -> dict[str, Linked]:
        """Each checked library's loader view, by its display name."""
        return {lib.display: lib for lib in self.process.libraries()}

    @cached_property
    def bindings(self) -> dict[str, list[Binding]]:
        """Every shim-ABI import's binding, by importer's display name (a found program's in its
        own process)."""
        out: dict[str, list[Binding]] = {}
        for b in self.process.resolve():
            out.setdefault(b.importer.display, []).append(b)
        main = set(out)
        for own in self.own_processes:
            for b in own.resolve():
                # The program, and what only its closure loads (the coalesced process has it not).
                if b.importer in own.programs or b.importer.display not in main:
                    out.setdefault(b.importer.display, []).append(b)
        return out

    def load_failures(self, *, undefined: bool = True) -> list[LoadFailure]:
        """What dlopen refuses, in every process the check judges (a failure a found program's
        process repeats, of a library both load, said once)."""
        return _once(f for p in self.processes for f in p.load_failures(undefined=undefined))

    def call_failures(self) -> list[LoadFailure]:
        return _once(f for p in self.processes for f in p.call_failures())

    def binding_of(self, lib: Library, name: str) -> Binding | None:
        return next((b for b in self.bindings.get(lib.display, ()) if b.name == name), None)

    @cached_property
    def distinct_libraries(self) -> Sequence[Library]:
        """The libraries, a file given twice (as --shim and --model) once: it is one
        definer, and what it exports is said once."""
        seen: set[object] = set()
        distinct = []
        for lib in self.libraries:
            if lib.identity is not None:
                if lib.identity in seen:
                    continue
                seen.add(lib.identity)
            distinct.append(lib)
        return distinct

    @cached_property
    def provided(self) -> frozenset[str]:
        """Every name a checked shim library exports."""
        return frozenset(name for shim in self.shims for name in shim.exports)

    def is_unprefixed_shim(self, name: str) -> bool:
        return prefixes.is_unprefixed(name)

    def is_prefixed_shim(self, name: str) -> bool:
        prefix = self.prefix
        if not prefix:
            return False
        return name.startswith(prefix) and prefixes.is_unprefixed(name[len(prefix) :])


def _once(failures: Iterable[LoadFailure]) -> list[LoadFailure]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for f in failures:
        key = (f.library.display, f.reason, f.symbol)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


# Symbols the static linker defines in every shared object; sharing them is harmless.
LINKER_DEFINED = frozenset(
    {"_init", "_fini", "_end", "_edata", "_etext", "__bss_start", "__end__", "_DYNAMIC", "_GLOBAL_OFFSET_TABLE_"}
)


# Findings per batch of a rule that finds many (see FindingBatch).
BATCH = 1024


class Columns(NamedTuple):
    """Many findings of one rule about one artifact, as columns (the FindingBatch fast path
    without the rule's identity, which :func:`evaluate` stamps)."""

    artifact: str
    symbols: Sequence[str]
    messages: Sequence[str]
    related: Sequence[str | None]


# What a rule body yields: (artifact, symbol, message) or (artifact, symbol, message, related), or Columns.
Found = tuple[str, str, str] | tuple[str, str, str, "str | None"] | Columns


def _entries(exports: Mapping[str, Symbol], name: str) -> list[DynamicEntry]:
    sym = exports.get(name)
    return [] if sym is None else [DynamicEntry(sym, 0, 1, None)]

# A reference answers one name through its hash table for about this many names it would
# read in a scan: a shim asking about more than size/LOOKUP_COST names scans instead.
LOOKUP_COST = 16


def _owners(names: list[str], refs: Sequence[Reference]) -> tuple[array[int], bytearray]:
    """For each of ``names``: the index of the first reference exporting it (-1: none) and
    how many do (capped at 255). Flat arrays, not per-name objects: a shim may have 75k names."""
    first = array("i", [-1]) * len(names)
    count = bytearray(len(names))
    index: dict[str, int] | None = None
    for r, ref in enumerate(refs):
        if len(names) * LOOKUP_COST > ref.size_hint():
            if index is None:
                index = dict(zip(names, range(len(names))))
            get = index.get
            hits = [i for chunk in ref.export_name_chunks() for i in map(get, chunk) if i is not None]
        else:
            hits = [i for i, name in enumerate(names) if ref.find_export(name) is not None]
        for i in hits:
            if first[i] < 0:
                first[i] = r
            if count[i] < 255:
                count[i] += 1
    return first, count


def _more(n: int) -> str:
    """How many references besides the first export a name (counted up to 255)."""
    return f" (and {n - 1}{'+' if n == 255 else ''} more)" if n > 1 else ""


def _collision(ctx: Context) -> Iterator[Found]:
    refs = ctx.references
    if not refs:
        return
    for shim in ctx.exporters:
        # REEXPORTED_RUNTIME and REEXPORTED_CUDA_RUNTIME report the runtimes; the linker's
        # own names are harmless.
        skip = shim.runtime_exports.union(LINKER_DEFINED, shim.cuda_runtime_exports)
        names = [n for n in shim.sorted_exports if n not in skip]
        first, count = _owners(names, refs)
        hit = list(compress(range(len(count)), count))  # the indexes some reference exports
        hit_names = list(map(names.__getitem__, hit))
        del names
        artifact = shim.display
        owner_of = [ref.display for ref in refs]
        more_of = [_more(n) for n in range(256)]
        kinds = shim.kinds(hit_names)
        # Columns, a batch at a time: the messages of 70k collisions are never all in memory.
        for at in range(0, len(hit), BATCH):
            indexes = hit[at : at + BATCH]
            symbols = hit_names[at : at + BATCH]
            related = list(map(owner_of.__getitem__, map(first.__getitem__, indexes)))
            more = map(more_of.__getitem__, map(count.__getitem__, indexes))
            messages = [
                f"{kind} '{name}' is also exported by {owner}{also}"
                for kind, name, owner, also in zip(kinds[at : at + BATCH], symbols, related, more)
            ]
            yield Columns(artifact, symbols, messages, related)


# Said of a shim library none of whose sources included the rename header; the text report
# finds this finding by it (checks/formats/text.py).
NO_RENAME_HEADER = "no source of it included the rename header"


def _without_rename_header(ctx: Context, shim: Library) -> list[str]:
    """The unprefixed shim names of a library that carries no prefix at all while the
    build's prefix is known, when torch's headers declare one of them (else the rename
    header would not have renamed them): every source missed the rename header."""
    if not ctx.prefix or ctx.prefix_source != "given" or any(map(prefixes.prefix_of, shim.marked_exports)):
        return []
    names = [n for n in shim.marked_exports if ctx.is_unprefixed_shim(n)]
    own = _runtime_own_names(shim) if names else frozenset()
    return names if any(n not in own for n in names) else []


def _unprefixed_export(ctx: Context) -> Iterator[Found]:
    for shim in ctx.exporters:
        missed = _without_rename_header(ctx, shim)
        if missed:
            # One cause, one line: not a finding per name that never names the header.
            yield (
                shim.display,
                missed[0],
                f"exports {'its one shim name' if len(missed) == 1 else f'all {len(missed)} of its shim names'} "
                f"without the prefix {ctx.prefix!r} (e.g. '{missed[0]}'): "
                f"{NO_RENAME_HEADER}; include <aoti_shim_rename.h> first in each shim source, or use FORCE_INCLUDE "
                "(aoti_shim_prefix) or force-include = true ([tool.aoti-shim])",
            )
            continue
        own = _runtime_own_names(shim)
        for name in shim.marked_exports:
            if ctx.is_unprefixed_shim(name):
                want = f"'{ctx.prefix}{name}'" if ctx.prefix else "a prefixed name"
                message = f"exports '{name}' without the prefix (expected {want})"
                if ctx.prefix and prefixes.prefixed(name, ctx.prefix) in shim.exports:
                    # Both spellings: one source file was compiled without the rename header.
                    message += (
                        f" beside '{prefixes.prefixed(name, ctx.prefix)}': a source defines it without the rename "
                        "header; include <aoti_shim_rename.h> first, or use FORCE_INCLUDE"
                    )
                elif name in own:
                    message += (
                        ": no rename list holds this name (a runtime's own shim, not in torch's headers); add it "
                        "with NAMES_FROM in CMake, `names-from` in [tool.aoti-shim], or `aoti-shim rename-header "
                        "--shim-include DIR`"
                    )
                elif ctx.prefix and any(prefixes.prefix_of(n) == ctx.prefix for n in shim.marked_exports):
                    message += (
                        f": other shims carry '{ctx.prefix}', so a source defines this one without the rename header; "
                        "include <aoti_shim_rename.h> first, or use FORCE_INCLUDE"
                    )
                yield shim.display, name, message


def _runtime_own_names(shim: Library) -> frozenset[str]:
    """Its unprefixed aoti_torch_* exports that torch's headers do not declare."""
    declared = shipped_names().names
    return frozenset(n for n in shim.marked_exports if prefixes.is_unprefixed(n) and n not in declared)


def _mangled_shim(ctx: Context) -> Iterator[Found]:
    for lib in (*ctx.distinct_libraries, *ctx.shim_dependencies):
        names = lib.mangled_shim_exports
        if names:
            yield (
                lib.display,
                names[0],
                f"exports {len(names)} C++-mangled shim name(s), e.g. '{names[0]}': the shims are defined without "
                'extern "C", so no blob can bind to them; declare them extern "C" (include torch\'s shim headers, '
                "or wrap the definitions in an extern \"C\" block)",
            )


def _load_failure(ctx: Context) -> Iterator[Found]:
    for failure in ctx.load_failures(undefined=False):
        yield failure.library.display, "", f"cannot be loaded next to the others: {failure.reason}"
    # Imports of names that are no shim ABI bound to nothing (the import rules say the rest).
    for failure in [*ctx.load_failures(), *ctx.call_failures()]:
        if failure.judged_here:
            yield failure.library.display, failure.symbol, _undefined_message(failure)


def _undefined_message(failure: LoadFailure) -> str:
    """One line: the symbol, who needs it, where a definer was expected, and the fix."""
    importer = failure.importer or failure.library
    entry = failure.entry
    name = failure.symbol
    wanted = f"'{name}@{entry.version}'" if entry is not None and entry.version else f"'{name}'"
    by = "" if importer is failure.library else f", which {importer.display} (of its DT_NEEDED closure) imports"
    # The machine's libraries (libc, libstdc++) stand as one item: their paths say little.
    own = ", ".join(lib.display for lib in failure.searched if lib is not importer and lib.role != SYSTEM)
    closure = f"its DT_NEEDED closure: {own}" if own else "its DT_NEEDED closure"
    if entry is not None and entry.version_file:
        closure = f"{entry.version_file}, which its version is needed from; {closure}"
    head = "loads, but its first call of" if failure.at_call else "cannot be loaded next to the others:"
    tail = (
        " fails (a host opening it RTLD_NOW, as Python's ctypes does, is refused the load)" if failure.at_call else ""
    )
    return (
        f"{head} undefined symbol {wanted}{by}{tail}: no library of its lookup scope defines it ({closure}; the "
        "references; the shims; the machine's libraries, libc among them); link it against the library that defines "
        "it (a DT_NEEDED entry), or make the one found define it (--library-path DIR names the deployment's folder)"
    )


def _unseen_dependency(ctx: Context) -> Iterator[Found]:
    for display, name, why in ctx.unseen:
        yield (
            display,
            name,
            f"needs {name}, {why}: not on this machine, so not checked; the process it runs in must have it",
        )


def _is_stable_abi_extension(ctx: Context, lib: Library) -> bool:
    """A model that is no AOTInductor model and imports none of the shims' prefixed names:
    its unprefixed imports are meant for libtorch (torchaudio's, say); and such a model's own
    dependency that imports no prefixed name either (libtorchaudio.so under _torchaudio)."""
    if lib.role == "dependency":
        root = ctx.root_of(lib)
        return (
            root is not None
            and root is not lib
            and _is_stable_abi_extension(ctx, root)
            and not lib.imports_prefix(ctx.own_prefixes)
        )
    return (
        lib.role == "model"
        and not lib.executable
        and not lib.is_aoti_model
        and not lib.imports_prefix(ctx.own_prefixes)
    )


def _not_an_aoti_model(ctx: Context) -> Iterator[Found]:
    for model in ctx.models:
        if not _is_stable_abi_extension(ctx, model):
            continue
        unprefixed = sum(1 for name in model.imports if ctx.is_unprefixed_shim(name))
        if not unprefixed:
            # A consumer of the prefixed ABI (a runtime's backend, say) is no model either, but
            # nothing about it needs saying: its imports are held to the shims like a model's.
            continue
        yield (
            model.display,
            "",
            f"exports no {MODEL_ENTRY_PREFIX}* entry point: not an AOTInductor model; its "
            f"{unprefixed} unprefixed aoti_torch_* import(s) bind to libtorch by design "
            "(a stable-ABI extension?) and are not reported",
        )


def _not_a_shim(ctx: Context) -> Iterator[Found]:
    for shim in ctx.shims:
        if not shim.exports_shims:
            yield shim.display, "", f"exports no {prefixes.SHIM_MARK}* name, prefixed or not: not a shim library"


def _where(b: Binding | None) -> str:
    if b is not None and b.scope == "none" and not b.weak:
        # A global library's function import binds at its first call; the rest at load.
        when = (
            "its first call fails" if b.entry.index in b.importer.lazy and b.importer.role == SHIM else "the load fails"
        )
        return (f"binds to no library of this process ({when}: undefined symbol), and to libtorch whenever libtorch is "
            "global")
    if b is None or b.definer is None:
        return "binds to libtorch whenever libtorch is global"
    if b.definer.role == REFERENCE:
        return f"binds to {b.definer.display} in the process"
    return "binds to libtorch whenever libtorch is global"


def _unprefixed_import(ctx: Context) -> Iterator[Found]:
    """Every library's unprefixed shim-ABI imports, the shims' own included: each binds to
    libtorch's definition when libtorch is global (the binding model says where, with
    --against). Only a stable-ABI extension imports them on purpose."""
    for lib in ctx.judged:
        if _is_stable_abi_extension(ctx, lib):
            continue  # NOT_AN_AOTI_MODEL says so once
        consumer = lib.role == "model" and not lib.is_aoti_model
        loaded_as = ctx.loaded_as(lib)
        for name in lib.shim_imports:
            if not ctx.is_unprefixed_shim(name):
                continue
            b = ctx.binding_of(lib, name)
            if b is not None and b.definer is not None and b.scope == "self":
                continue  # -Bsymbolic: it binds to its own definition (UNPREFIXED_EXPORT's)
            if b is not None and b.scope == "itself":
                continue  # bound to itself, never to libtorch: BINDS_OUTSIDE_SHIMS says so
            where = _where(b)
            if lib.role == "shim" and not consumer:
                message = f"imports '{name}' itself (its own code calls the unprefixed name), which {where}"
            elif consumer:
                message = (
                    f"imports '{name}' beside the prefixed shim names it uses (a source built without the rename "
                    f"header?), which {where}"
                )
            else:
                message = f"imports '{name}'{loaded_as}, which {where}"
            related = (
                b.definer.display if b is not None and b.definer is not None and b.definer.role == REFERENCE else None
            )
            yield lib.display, name, message, related


def _carried(ctx: Context) -> str:
    if ctx.shim_prefixes:
        return prefixes.describe(ctx.shim_prefixes)
    mangled = [n for shim in ctx.shims for n in shim.mangled_shim_exports]
    if mangled:
        # Built without extern "C": the prefix is there, inside C++ manglings (MANGLED_SHIM's).
        return f"their names only C++-mangled (e.g. '{mangled[0]}': defined without extern \"C\")"
    return "no prefix at all"


def _unbound(ctx: Context, lib: Library) -> Iterator[tuple[str, str | None, Binding | None]]:
    """(name, its prefix, binding) of each prefixed shim import of ``lib`` that binds to
    no library of the process (none exports it in a matching version).

    Every import holding a shim name, whatever its prefix, must bind to a checked shim.
    The marker, not the prefix, selects the names: with a short prefix ("m") libc's memcpy
    would start with it, and a blob rewritten to another prefix would not. Unprefixed
    imports are UNPREFIXED_IMPORT's (libtorch defines them).
    """
    for name in lib.shim_imports:
        if prefixes.is_unprefixed(name) or prefixes.is_mangled(name):
            continue  # a mangled import binds to a mangled export: MANGLED_SHIM's
        b = ctx.binding_of(lib, name)
        if b is None:
            if name not in ctx.provided and lib.role != "dependency":  # a dependency never loaded: nothing bound
                yield name, prefixes.prefix_of(name), None
        elif b.scope == "itself":
            continue  # bound to itself: BINDS_OUTSIDE_SHIMS says so
        elif b.definer is None:
            yield name, prefixes.prefix_of(name), b


def _is_shims_prefix(ctx: Context, p: str | None) -> bool:
    return p is not None and (p == ctx.prefix or p in ctx.shim_prefixes)


def _failed(ctx: Context) -> set[str]:
    return {f.library.display for f in ctx.load_failures(undefined=False)}


def _unsatisfied_import(ctx: Context) -> Iterator[Found]:
    if not ctx.shims:
        return
    failed = _failed(ctx)
    for lib in ctx.judged:
        if lib.display in failed:
            continue  # LOAD_FAILURE says it cannot load at all
        loaded_as = ctx.loaded_as(lib)
        for name, p, b in _unbound(ctx, lib):
            if _is_shims_prefix(ctx, p):
                if b is not None and b.version is not None and name in ctx.provided:
                    message = (
                        f"imports '{name}@{b.version}'{loaded_as}, which no shim library defines in that version "
                        "(a versioned import binds only to its version)"
                    )
                elif name in ctx.provided:
                    message = (
                        f"imports '{name}'{loaded_as}, which a shim library exports, but the loader's lookup passes "
                        "over "
                        "that definition (of value 0, of a type that is no code or data, or out of reach of its "
                        ".gnu.hash)"
                    )
                else:
                    message = (
                        f"imports '{name}'{loaded_as}, which no shim library exports{_fails(ctx, lib)}"
                        f"{_only_mangled(ctx, name)}"
                    )
                yield lib.display, name, message


def _only_mangled(ctx: Context, name: str) -> str:
    """The shims' C++-mangled definition of ``name``, said: the import's cause is extern "C"
    (the shims' MANGLED_SHIM), which the shims' own finding no longer repeats as a prefix."""
    spelled = f"{len(name)}{name}"
    found = next((n for shim in ctx.shims for n in shim.mangled_shim_exports if spelled in n), None)
    return f"; the shims define it only C++-mangled ('{found}': without extern \"C\", MANGLED_SHIM)" if found else ""


def _mangles(mangled: str, start: str) -> bool:
    """Whether a C++-mangled name holds a source name that begins with ``start``: Itanium
    spells each as its length, then its letters (``_Z19myrt_aoti_torch_barv``), so ``rt_``
    inside ``myrt_`` is no such start."""
    return any(int(m.group(1)) >= len(start) for m in re.finditer(rf"(\d+){re.escape(start)}", mangled))


def _fails(ctx: Context, lib: Library) -> str:
    """What an import bound to nothing fails: a blob's dependency fails the blob's dlopen (RTLD_NOW)."""
    root = ctx.chain(lib.linked)[0] if lib.role == "dependency" and lib.linked is not None else None
    if root is not None and root.role == MODEL:
        return f": the dlopen of {root.display} fails (undefined symbol)"
    return " (it fails when first called)"


def _given_prefix_mismatch(ctx: Context) -> Iterator[Found]:
    """``check --model BLOB --prefix P`` with no shim library: P stands for the shims' prefix
    (the README's CMake quickstart), so a blob built with another one cannot bind to them."""
    if ctx.prefix_source != "given" or not ctx.prefix:
        return
    for model in ctx.judged:
        foreign: dict[str, list[str]] = {}
        for name in model.shim_imports:
            if prefixes.is_unprefixed(name) or prefixes.is_mangled(name):
                continue  # UNPREFIXED_IMPORT's and MANGLED_SHIM's
            p = prefixes.prefix_of(name)
            if p != ctx.prefix:
                foreign.setdefault(p or "", []).append(name)
        yield from _foreign_prefixes(
            model.display, foreign, f"the given prefix is {ctx.prefix!r}", ctx.loaded_as(model)
        )


def _foreign_prefixes(
    artifact: str, foreign: dict[str, list[str]], expected: str, loaded_as: str = "", mangled: bool = False
) -> Iterator[Found]:
    """PREFIX_MISMATCH's finding for each prefix of ``foreign`` (prefix -> the names imported
    with it), in prefix order; ``expected`` says which prefix was wanted. ``mangled``: the
    shims carry names only C++-mangled, so the cause is extern "C", not another prefix."""
    why = (
        'the shims need extern "C" (MANGLED_SHIM), so it cannot load' if mangled
        else "blob and shims were built with different prefixes, so it cannot load"
    )
    for p, names in sorted(foreign.items()):
        yield (
            artifact,
            names[0],
            f"imports {len(names)} shim name(s) with prefix {p!r} (e.g. '{names[0]}'){loaded_as}, but {expected}: "
            f"{why}",
        )


def _prefix_mismatch(ctx: Context) -> Iterator[Found]:
    """Blobs and shims built with different prefixes, or a given prefix the shims lack.

    One finding per (library, foreign prefix), naming both prefixes: the per-name list would
    repeat one cause hundreds of times.
    """
    if not ctx.shims:
        yield from _given_prefix_mismatch(ctx)
        return
    told = all(_without_rename_header(ctx, shim) for shim in ctx.shims)  # UNPREFIXED_EXPORT names the cause
    # Built without extern "C", the shims carry the given prefix inside C++ manglings:
    # MANGLED_SHIM names that cause and its fix, so a second finding would only repeat it.
    mark = f"{ctx.prefix}{prefixes.SHIM_MARK}"
    told = told or any(_mangles(n, mark) for shim in ctx.shims for n in shim.mangled_shim_exports)
    if ctx.prefix_source == "given" and ctx.prefix and ctx.prefix not in ctx.shim_prefixes and not told:
        # Else the check would prove nothing about the shims that were really built.
        yield (
            ctx.shims[0].display,
            f"{ctx.prefix}{prefixes.SHIM_MARK}*",
            f"the given prefix {ctx.prefix!r} is exported by no shim library; the shims carry {_carried(ctx)}",
        )
    failed = _failed(ctx)
    for model in ctx.judged:
        if model.display in failed:
            continue
        foreign: dict[str, list[str]] = {}
        for name, p, _ in _unbound(ctx, model):
            if not _is_shims_prefix(ctx, p):
                foreign.setdefault(p or "", []).append(name)
        mangled = not ctx.shim_prefixes and any(shim.mangled_shim_exports for shim in ctx.shims)
        yield from _foreign_prefixes(
            model.display, foreign, f"the shims carry {_carried(ctx)}", ctx.loaded_as(model), mangled
        )


_VISIBILITY = {0: "default", 1: "internal", 2: "hidden", 3: "protected"}


def _binds_outside_shims(ctx: Context) -> Iterator[Found]:
    """A prefixed shim-ABI import that the loader binds to a library that is no shim: a
    reference exporting the name, a blob's own dependency, a model; and a shim-ABI
    reference, prefixed or not, that the loader binds to its own library (local, or of a
    visibility other than default)."""
    global_ids = {id(g) for g in ctx.process.global_scope if g.role != REFERENCE}
    for lib in ctx.judged:
        loaded_as = ctx.loaded_as(lib)
        for b in ctx.bindings.get(lib.display, ()):
            if b.scope == "itself":
                sym = b.entry.symbol
                kind = "a local symbol" if sym.bind == STB_LOCAL else f"a {_VISIBILITY[sym.visibility]} symbol"
                yield (
                    lib.display,
                    b.name,
                    f"refers to '{b.name}'{loaded_as} as {kind} without defining it: the loader never looks it up and "
                    "binds it "
                    "to address 0 of this library itself, never to the shims",
                )
                continue
            if b.definer is None or prefixes.is_unprefixed(b.name) or b.definer.role in (SHIM, PROGRAM):
                continue
            if id(b.definer) in global_ids and not (b.definer.role == DEPENDENCY and b.name in ctx.provided):
                continue  # a shim's own dependency, loaded global with it: the shims' side
            if b.definer.display == lib.display:
                continue  # its own definition (MODEL_DEFINES_SHIM's)
            what = {REFERENCE: "a reference library", MODEL: "a model", DEPENDENCY: "a dependency"}.get(
                b.definer.role, b.definer.role
            )
            if id(b.definer) in global_ids:
                # A shim's dependency defines the name too and loads before the shim that is
                # meant to serve it: the blob gets the dependency's copy.
                shim = next((s.display for s in ctx.shims if b.name in s.exports), "the shims")
                yield (
                    lib.display,
                    b.name,
                    f"imports '{b.name}'{loaded_as}, which binds to {b.definer.display} (a dependency loaded with the "
                    "shims) "
                    f"in the process, not to {shim}, which also defines it",
                    b.definer.display,
                )
                continue
            yield (
                lib.display,
                b.name,
                f"imports '{b.name}'{loaded_as}, which binds to {b.definer.display} ({what}) in the process, not to "
                "the shims",
                b.definer.display,
            )


def _model_defines_shim(ctx: Context) -> Iterator[Found]:
    for model in ctx.models:
        for name in model.sorted_exports:
            if name in model.copied and ctx.is_prefixed_shim(name) and name in ctx.provided:
                continue  # a program's copy of the shims' data: their instance (COLLISION guards the source)
            if ctx.is_unprefixed_shim(name) or ctx.is_prefixed_shim(name):
                yield model.display, name, f"defines shim '{name}' itself; shims belong in the shim library"


def _duplicate_definer(ctx: Context) -> Iterator[Found]:
    # name -> [(library, GNU_UNIQUE?)]
    definers: dict[str, list[tuple[Library, bool]]] = {}
    libraries = [*ctx.distinct_libraries, *ctx.shim_dependencies]
    if len(libraries) < 2:
        return  # one library defines each of its names once
    for lib in libraries:
        for name, packed in _packed_items(lib.exports):
            if name in lib.copied and ctx.is_prefixed_shim(name) and name in ctx.provided:
                continue  # a program's copy of the shims' data: the one instance, not a second
            # The substring test first: it is the cheap one, and most names fail it.
            if (packed & 0xF) == STT_TLS or (
                prefixes.may_be_shim_name(name) and (ctx.is_unprefixed_shim(name) or ctx.is_prefixed_shim(name))
            ):
                definers.setdefault(name, []).append((lib, (packed >> 4) & 0xF == STB_GNU_UNIQUE))
    for name in sorted(definers):
        # The loader keeps one instance of a GNU_UNIQUE symbol per process, however many
        # libraries define it: those definers count as one copy.
        copies: list[Library] = []
        shared_unique = False
        for lib, unique in definers[name]:
            if unique:
                if shared_unique:
                    continue
                shared_unique = True
            copies.append(lib)
        if len(copies) < 2:
            continue
        first = copies[0].display
        for lib in copies[1:]:
            yield lib.display, name, f"'{name}' is also defined by {first}; each copy has its own state", first


def _packed_items(exports: Mapping[str, Symbol]) -> Iterator[tuple[str, int]]:
    packed_items = getattr(exports, "packed_items", None)
    if packed_items is not None:
        return packed_items()  # type: ignore[no-any-return]  # the reader's fast path, found by duck typing
    return ((name, sym.pack()) for name, sym in exports.items())


def _is_linked_runtime(name: str, exports: Mapping[str, Symbol]) -> bool:
    """For a name RUNTIME_NAME matches: the runtime itself, not a template instance."""
    return bool(ALWAYS_RUNTIME_NAME.match(name)) or exports[name].bind != STB_WEAK


def _reexported_runtime(ctx: Context) -> Iterator[Found]:
    for lib in ctx.distinct_libraries:
        # A program's copies (R_*_COPY) of libstdc++'s data (std::cout) are libstdc++'s instance.
        names = sorted(n for n in lib.runtime_exports if n not in lib.copied and _is_linked_runtime(n, lib.exports))
        if names:
            yield (
                lib.display,
                names[0],
                f"re-exports {len(names)} C++ runtime symbol(s), e.g. '{names[0]}'; "
                "loaded RTLD_GLOBAL they interpose the process's C++ runtime",
            )


def _reexported_cuda_runtime(ctx: Context) -> Iterator[Found]:
    for lib in ctx.distinct_libraries:
        names = lib.cuda_runtime_exports
        if names:
            yield (
                lib.display,
                names[0],
                f"exports {len(names)} CUDA runtime symbol(s), e.g. '{names[0]}'; loaded RTLD_GLOBAL "
                "they interpose libcudart for the whole process (link the runtime with hidden visibility)",
            )


# What a rule body reads: check's Context, scan's environment.
C = TypeVar("C")


@dataclass(frozen=True)
class Rule(Generic[C]):
    """A row of a rule table (check's RULES, scan's SCAN_RULES): the rule's identity is
    written here once, and :func:`stamped` puts it on what its body yields."""

    id: str
    check: Callable[[C], Iterator[Found]]
    doc: str
    severity: str
    # The rule over a Mach-O or PE process (checks/native/judge.py); None: ELF's alone.
    native: Callable[[NativeProcess], Iterator[Found]] | None = None
    # What it means there, where that differs: added to ``doc`` in a native check's reports.
    native_doc: str = ""


def _native(rule: str) -> Callable[[NativeProcess], Iterator[Found]]:
    """The native judge's ``rule`` (checks/native/judge.py), imported when a Mach-O or PE
    process is judged: a scan or an ELF check never loads the Mach-O and PE readers (a
    fifth of a scan's start-up)."""

    def judge(process: NativeProcess) -> Iterator[Found]:
        from aoti_shim.checks.native import judge as native

        found: Callable[[NativeProcess], Iterator[Found]] = getattr(native, rule)
        return found(process)

    judge.__name__ = judge.__qualname__ = rule
    return judge


def _native_only(ctx: Context) -> Iterator[Found]:
    """A rule of the native formats: nothing to find in ELF."""
    return iter(())


RULES: tuple[Rule[Context], ...] = (
    Rule(
        "NOT_AN_AOTI_MODEL",
        _not_an_aoti_model,
        "A --model library imports unprefixed aoti_torch_* names but exports no AOTInductorModelContainer* entry "
        "point (a stable-ABI extension, say); those imports are not reported one by one.",
        WARNING,
        native=_native("not_an_aoti_model"),
    ),
    Rule(
        "NOT_A_SHIM",
        _not_a_shim,
        "A --shim library exports no aoti_torch_* name, prefixed or not.",
        WARNING,
        native=_native("not_a_shim"),
    ),
    Rule(
        "COLLISION",
        _collision,
        "A shim library exports a symbol that a reference library (libtorch) also exports.",
        BLOCKING,
        native=_native("collision"),
    ),
    Rule(
        "UNPREFIXED_EXPORT",
        _unprefixed_export,
        "A shim library exports an aoti_torch_* name without the prefix.",
        BLOCKING,
        native=_native("unprefixed_export"),
    ),
    Rule(
        "UNPREFIXED_IMPORT",
        _unprefixed_import,
        "A library of the process (a model, a shim library's own code, a consumer of the prefixed names, or a library "
        "of their DT_NEEDED closure, named with the chain that loaded it) imports a shim-ABI name without the prefix: "
        "it binds to libtorch when libtorch is global, to nothing without it.",
        BLOCKING,
        native=_native("unprefixed_import"),
        native_doc="Mach-O: a flat (or weak) lookup's import, which dyld binds to libtorch's, loaded first. Mach-O "
        "and PE: one named in an image that lacks it (the load fails) or in a library neither checked nor torch's "
        "(another runtime's shims).",
    ),
    Rule(
        "UNSATISFIED_IMPORT",
        _unsatisfied_import,
        "A library of the process (a checked one or one of its DT_NEEDED closure) imports a prefixed shim name (in a "
        "version) that no shim library defines, or defines only where the loader's lookup passes over it: it binds to "
        "nothing.",
        BLOCKING,
        native=_native("unsatisfied_import"),
        native_doc="Mach-O and PE: a prefixed import that no checked shim image defines by flat lookup, or whose "
        "install name or DLL is no checked shim's or lacks it.",
    ),
    Rule(
        "PREFIX_MISMATCH",
        _prefix_mismatch,
        "A library of the process (a checked one or one of its DT_NEEDED closure) imports shim names with another "
        "prefix than the shims carry (or than the given prefix, with no shims), or the given prefix is one no shim "
        "exports.",
        BLOCKING,
        native=_native("prefix_mismatch"),
    ),
    Rule(
        "BINDS_OUTSIDE_SHIMS",
        _binds_outside_shims,
        "A prefixed shim-ABI import binds, in the coalesced process, to a library that is no shim library (a "
        "reference, a model or a dependency), or a shim-ABI reference (an undefined STB_LOCAL or "
        "non-default-visibility symbol) binds to its own library.",
        BLOCKING,
        native=_native("binds_outside_shims"),
        native_doc="Mach-O and PE: a shim-ABI import bound by name to torch (a two-level import from "
        "@rpath/libtorch_cpu.dylib, an import from torch_cpu.dll, a shim DLL's export forwarded into torch_cpu.dll), "
        "or a prefixed one to a reference or a model.",
    ),
    Rule(
        "LOAD_FAILURE",
        _load_failure,
        "A checked library cannot be loaded into the process: another ELF class, byte order or machine, a symbol "
        "version its dependency lacks, -z nodlopen on what dlopen opens, a DT_NEEDED library the loader finds "
        "nowhere, or an import of a name that is no shim ABI that no library of its lookup scope defines (a shim's "
        "function import: its first call fails).",
        BLOCKING,
    ),
    Rule(
        "UNSEEN_DEPENDENCY",
        _unseen_dependency,
        "A DT_NEEDED library this machine lacks that a deployment provides: a GPU driver library (libcuda.so.1), or "
        "one a wheel member's run path finds in another distribution's folder, not installed here.",
        WARNING,
    ),
    Rule(
        "ABSOLUTE_DEPENDENCY",
        _native_only,
        "A Mach-O model loads a library by an absolute path outside /usr/lib and /System (LC_LOAD_DYLIB "
        "/opt/homebrew/.../libomp.dylib): dyld finds it only where that file exists on the user's machine; the "
        "message says when the model binds none of its symbols.",
        WARNING,
        native=_native("absolute_dependency"),
    ),
    Rule(
        "MANGLED_SHIM",
        _mangled_shim,
        "A library exports C++-mangled names holding a shim name: shims defined without extern \"C\".",
        BLOCKING,
        native=_native("mangled_shim"),
    ),
    Rule(
        "MODEL_DEFINES_SHIM",
        _model_defines_shim,
        "A model defines aoti_torch_* or prefixed shim names itself.",
        BLOCKING,
        native=_native("model_defines_shim"),
    ),
    Rule(
        "DUPLICATE_DEFINER",
        _duplicate_definer,
        "A shim or thread-local symbol is defined by more than one checked library (GNU_UNIQUE definers share one "
        "instance and count once, as does a program's R_*_COPY copy of a shim's data).",
        BLOCKING,
        native=_native("duplicate_definer"),
        native_doc="Mach-O: weak definitions coalesce, so every image binds to the first loaded copy.",
    ),
    Rule(
        "REEXPORTED_RUNTIME",
        _reexported_runtime,
        "A library re-exports statically linked C++ runtime symbols.",
        WARNING,
    ),
    Rule(
        "REEXPORTED_CUDA_RUNTIME",
        _reexported_cuda_runtime,
        "A library exports CUDA runtime API symbols (a statically linked libcudart, or wrappers).",
        WARNING,
    ),
)

RULES_BY_ID = {rule.id: rule for rule in RULES}
# The rules an ELF check can find (ABSOLUTE_DEPENDENCY is Mach-O's alone).
ELF_RULES = tuple(rule for rule in RULES if rule.check is not _native_only)
# Those a Mach-O or PE check can find, each doc with what it means there.
NATIVE_RULES = tuple(
    dataclasses.replace(rule, doc=f"{rule.doc} {rule.native_doc}".strip()) for rule in RULES if rule.native is not None
)


def rules_for(fmt: str) -> tuple[Rule[Context], ...]:
    """The rules a check of ``fmt`` ("elf", "macho", "pe") can find, as its reports list them."""
    return ELF_RULES if fmt == "elf" else NATIVE_RULES


def evaluate(ctx: Context) -> Iterator[FindingBatch]:
    """Every rule's findings, in table order, as they are found (nothing is kept); a native
    check's by each row's ``native`` function."""
    if ctx.native is not None:
        return _stamped_native(ctx.native)
    return stamped(RULES, ctx)


def _stamped_native(process: NativeProcess) -> Iterator[FindingBatch]:
    for rule in RULES:
        if rule.native is not None:
            for found in rule.native(process):
                if isinstance(found, Columns):
                    yield FindingBatch(rule.id, rule.severity, *found)
                else:
                    related = found[3] if len(found) > 3 else None
                    yield FindingBatch(rule.id, rule.severity, found[0], (found[1],), (found[2],), (related,))


def stamped(rules: Sequence[Rule[C]], ctx: C) -> Iterator[FindingBatch]:
    """What each rule of ``rules`` finds in ``ctx``, in table order, as batches stamped with
    the rule's id and severity."""
    for rule in rules:
        rule_id, severity = rule.id, rule.severity
        for found in rule.check(ctx):
            if isinstance(found, Columns):
                yield FindingBatch(rule_id, severity, *found)
            else:
                related = found[3] if len(found) > 3 else None
                yield FindingBatch(rule_id, severity, found[0], (found[1],), (found[2],), (related,))
