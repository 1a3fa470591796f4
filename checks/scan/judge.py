"""``scan``'s judgement: which libraries of an environment provide or consume the shim ABI,
and what loading them into one process would bind wrongly.

Each library is read once and reduced to :class:`LibraryFacts` (its shim-ABI names, its
runtime re-exports, what it is) before the next is opened, so memory is bounded by the
largest library, not by the environment. The rules then judge the facts of every library
together, the process the environment can build: torch's libraries, every runtime's
shims, every stable-ABI extension and blob, any of them loaded ``RTLD_GLOBAL``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

from aoti_shim.checks.abi import prefix as prefixes
from aoti_shim.checks.abi.prefix import MODEL_ENTRY_PREFIX
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.elf.layout import ET_DYN
from aoti_shim.checks.elf.symbols import SymbolTable
from aoti_shim.checks.loader import bindings
from aoti_shim.checks.report.model import BLOCKING, WARNING, FindingBatch
from aoti_shim.checks.rules.table import ALWAYS_RUNTIME_NAME, CUDA_RUNTIME_NAME, Columns, Found, Rule, stamped
from aoti_shim.checks.scan.environment import Environment, LibraryFile
from aoti_shim.checks.snapshot.torch_libraries import import_closure
from aoti_shim.torch_names import shipped_names

if TYPE_CHECKING:
    # checks/native is imported where a Mach-O or PE library is read or judged: a venv of
    # ELF files loads neither it nor the Mach-O and PE readers under it.
    from aoti_shim.checks.native.binding import Loaded
    from aoti_shim.checks.native.image import NativeImage

# The distributions whose unprefixed shim names are the reference ones: libtorch's.
TORCH_DISTRIBUTIONS = frozenset({"torch"})
NOBODY = "(no distribution)"

# Roles, in the order the text lists them.
PROVIDER, BLOB, CONSUMER, PREFIXED_CONSUMER, RUNTIME, UNRELATED = (
    "shim provider",
    "AOTInductor blob",
    "stable-ABI consumer",
    "prefixed-ABI consumer",
    "runtime re-exporter",
    "unrelated",
)


@dataclass(frozen=True)
class LibraryFacts:
    """What one library means to the shim ABI, its symbol tables already let go."""

    display: str
    kind: str  # "shared" or "executable"
    owner: str  # the distribution's label ("torch 2.13.0"), or NOBODY
    distribution: str | None  # the distribution's name
    shim_exports: tuple[str, ...]
    shim_imports: tuple[str, ...]
    runtime_exports: tuple[str, ...]  # the C++ runtime's core (__cxa_*, _Unwind_*, new/delete), re-exported
    cuda_exports: tuple[str, ...]  # CUDA runtime API names
    is_model: bool
    symbols: int  # entries of its dynamic symbol table
    needed: tuple[str, ...] = ()
    # The library as the binding model sees it, for its shim-ABI names only (what the
    # model is asked about): its tables are let go, these few entries kept.
    linked: bindings.Linked | None = field(default=None, compare=False, repr=False)

    @property
    def is_torch(self) -> bool:
        return self.distribution is not None and _normalized(self.distribution) in TORCH_DISTRIBUTIONS

    @property
    def export_prefixes(self) -> frozenset[str]:
        """The prefix of every shim name it exports ('' for libtorch's spelling)."""
        return frozenset(p for p in map(prefixes.prefix_of, self.shim_exports) if p is not None)

    @property
    def unprefixed_exports(self) -> tuple[str, ...]:
        return tuple(n for n in self.shim_exports if prefixes.is_unprefixed(n))

    @property
    def unprefixed_imports(self) -> tuple[str, ...]:
        return tuple(n for n in self.shim_imports if prefixes.is_unprefixed(n))

    @property
    def roles(self) -> tuple[str, ...]:
        roles = []
        if self.shim_exports:
            roles.append(PROVIDER)
        if self.is_model:
            roles.append(BLOB)
        elif self.shim_imports and not self.shim_exports:
            roles.append(CONSUMER if self.unprefixed_imports else PREFIXED_CONSUMER)
        if self.runtime_exports or self.cuda_exports:
            roles.append(RUNTIME)
        return tuple(roles) or (UNRELATED,)

    def describe_roles(self) -> str:
        """The roles in words, with a provider's prefixes and a runtime's kind."""
        out = []
        for role in self.roles:
            if role == PROVIDER:
                carried = sorted(self.export_prefixes)
                out.append(f"{role} ({', '.join(repr(p) if p else 'unprefixed' for p in carried)})")
            elif role == RUNTIME:
                kinds = [k for k, names in (("C++", self.runtime_exports), ("CUDA", self.cuda_exports)) if names]
                out.append(f"{role} ({', '.join(kinds)})")
            else:
                out.append(role)
        if self.kind == "executable":
            out.insert(0, "a program, its own process (not judged with the environment's libraries)")
        return "; ".join(out)


def _normalized(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


# Starts of the names one pass over the exports keeps: the C++ runtime's core (what
# ALWAYS_RUNTIME_NAME matches) and the CUDA runtime API.
_CORE_STARTS = (
    "__cxa_",
    "__gxx_",
    "_Unwind_",
    "__gcc_personality",
    "_Znw",
    "_Zna",
    "_Zdl",
    "_Zda",
    "_ZTVN10__cxxabiv1",
    "_ZTIN10__cxxabiv1",
    "_ZTSN10__cxxabiv1",
    "_ZN10__cxxabiv1",
)
_RUNTIME_STARTS = (*_CORE_STARTS, "cuda")
# Every name the judgement reads holds "aoti_" or "torch_" (every shim-ABI name, prefixed or
# not, the stable C ABI's torch_* too) or starts with one of the others (a blob's entry
# points, the runtimes' names).
_ASKED_CONTAINS = ("aoti_", "torch_")
_ASKED_STARTS = (MODEL_ENTRY_PREFIX, *_RUNTIME_STARTS)
# What the string tables are searched for: a superset of the above (the judgement filters
# again), with fewer and shorter needles, each a whole pass over a string table (15 MiB in
# a torch venv): the four __cxxabiv1 starts share one, _Znw/_Zna and _Zdl/_Zda share "_Zn", "_Zd".
_SEARCHED_CONTAINS = (*_ASKED_CONTAINS, "10__cxxabiv1")
_SEARCHED_STARTS = (MODEL_ENTRY_PREFIX, "__cxa_", "__gxx_", "_Unwind_", "__gcc_personality", "_Zn", "_Zd", "cuda")


def _shim_names(names: Iterable[str]) -> tuple[str, ...]:
    # The substring test first: it is C-fast, and almost every name fails it.
    return tuple(sorted(n for n in names if prefixes.may_be_shim_name(n) and prefixes.is_shim_name(n)))


def _facts_of(
    display: str,
    kind: str,
    owner: str,
    distribution: str | None,
    exports: Mapping[str, object],
    imports: Mapping[str, object],
    needed: tuple[str, ...],
    symbols: int,
) -> LibraryFacts:
    # A program's exports of the runtime are its copy relocations: it is the process, the
    # one definer by design, not a second copy of the runtime.
    program = kind == "executable"
    # The C++ runtime's core only (exceptions, the unwinder, operator new and delete, RTTI
    # bases): where its process-wide state lives. Other std:: functions re-exported
    # (libstdc++_nonshared's __throw_* helpers, linked into every manylinux C++ extension)
    # hold none, and two copies of them are harmless.
    runtime = [] if program else [n for n in exports if n.startswith(_RUNTIME_STARTS)]
    return LibraryFacts(
        display=display,
        kind=kind,
        owner=owner,
        distribution=distribution,
        shim_exports=_shim_names(exports),
        shim_imports=_shim_names(imports),
        runtime_exports=tuple(sorted(n for n in runtime if not n.startswith("cuda") and ALWAYS_RUNTIME_NAME.match(n))),
        cuda_exports=tuple(sorted(n for n in runtime if n.startswith("cuda") and CUDA_RUNTIME_NAME.fullmatch(n))),
        is_model=any(n.startswith(MODEL_ENTRY_PREFIX) for n in exports if "AOTInductor" in n),
        symbols=symbols,
        needed=needed,
    )


def _linked(
    image: ElfImage, display: str, role: str, exports: SymbolTable, imports: SymbolTable, facts: LibraryFacts
) -> bindings.Linked:
    """The binding model's view of a library, limited to its shim-ABI names: each export's
    definitions (every version) and each import with the version it needs."""
    versions = image.versions()
    definitions = {name: exports.entries(name, versions) for name in facts.shim_exports}
    return bindings.Linked(
        display=display,
        role=role,
        names=frozenset(n for n in (os.path.basename(image.path.split("!")[-1]), image.soname) if n),
        needed=tuple(image.needed),
        symbolic=image.symbolic,
        header=(image.elf_class, image.big_endian, image.machine),
        has_versym=exports.has_versym or imports.has_versym,
        versions=versions,
        imports=tuple(imports.entry(name, versions) for name in facts.shim_imports),
        lookup=lambda name: definitions.get(name, []),
    )


def read_library(file: LibraryFile, owner: str, distribution: str | None) -> LibraryFacts | None:
    """The facts of one library (None for a program that neither exports nor imports shim ABI)."""
    member = file.member
    # member: a wheel's member, typed object in LibraryFile; its open() gives an ElfImage.
    image: ElfImage = (
        member.open()  # type: ignore[attr-defined]  # see above
        if member is not None
        else ElfImage(file.path, display=file.display)
    )
    with image:
        if file.kind == "executable" and image.e_type == ET_DYN and not image.pie:
            # A shared object naming an interpreter, not linked as a program: dlopen loads it.
            file = dataclasses.replace(file, kind="shared")
        if not image.has_dynsym:
            return (
                None
                if file.kind == "executable"
                else _facts_of(file.display, file.kind, owner, distribution, {}, {}, (), 0)
            )
        # Only the names the judgement reads are cut (shim ABI, blob entry points, the
        # runtimes' names; of a program, whose runtime names are its own, shim ABI only):
        # cutting all of them would cost more than nm -D does.
        program = file.kind == "executable"
        exports, imports = (
            image.tables_holding(_ASKED_CONTAINS, ())  # a program: shim ABI only, no runtime names
            if program
            else image.tables_holding(_SEARCHED_CONTAINS, _SEARCHED_STARTS)
        )
        if program and not any(map(prefixes.is_shim_name, (*exports, *imports))):
            # A program is a process of its own: it matters to the environment only as a
            # runner that exports or imports shim ABI (linked -rdynamic, say).
            return None
        facts = _facts_of(
            file.display, file.kind, owner, distribution, exports, imports, tuple(image.needed), image.symbol_count()
        )
        if not facts.shim_exports and not facts.shim_imports:
            return facts  # nothing the model is asked about
        role = bindings.PROGRAM if file.kind == "executable" else bindings.DEPENDENCY
        return dataclasses.replace(facts, linked=_linked(image, file.display, role, exports, imports, facts))


# -- the environment, read ------------------------------------------------------------------


@dataclass(frozen=True)
class DllFacts:
    """A Windows DLL a distribution ships: its name as the loader compares it, and its shim-ABI exports."""

    display: str
    owner: str
    shim_exports: tuple[str, ...]

    @property
    def base(self) -> str:
        """The module name the loaded-module list compares: the file name, without regard to case."""
        return self.display.rpartition("/")[2].lower()


@dataclass(frozen=True)
class NativeFacts:
    """A Mach-O or PE library of a macOS or Windows environment, its images (a universal
    file's slices) cut to their shim-ABI names, as checks/native models them."""

    display: str
    owner: str  # the distribution's label, or NOBODY
    distribution: str | None
    format: str  # "macho" or "pe"
    images: tuple[NativeImage, ...]
    is_model: bool  # exports an AOTInductor entry point

    @property
    def is_torch(self) -> bool:
        return self.distribution is not None and _normalized(self.distribution) in TORCH_DISTRIBUTIONS

    @property
    def shim_exports(self) -> tuple[str, ...]:
        return tuple(sorted({n for image in self.images for n in image.exports}))

    @property
    def unprefixed_exports(self) -> tuple[str, ...]:
        return tuple(n for n in self.shim_exports if prefixes.is_unprefixed(n))

    @property
    def shim_imports(self) -> tuple[str, ...]:
        return tuple(sorted({m.name for image in self.images for m in image.imports}))

    def describe_roles(self) -> str:
        """The roles in words, as :meth:`LibraryFacts.describe_roles` says them, after the format."""
        roles = []
        if self.shim_exports:
            carried = sorted({p for p in map(prefixes.prefix_of, self.shim_exports) if p is not None})
            roles.append(f"{PROVIDER} ({', '.join(repr(p) if p else 'unprefixed' for p in carried)})")
        if self.is_model:
            roles.append(BLOB)
        elif self.shim_imports and not self.shim_exports:
            unprefixed = any(prefixes.is_unprefixed(n) for n in self.shim_imports)
            roles.append(CONSUMER if unprefixed else PREFIXED_CONSUMER)
        return f"{'Mach-O' if self.format == 'macho' else 'PE'}: {'; '.join(roles) or UNRELATED}"

    @property
    def dll(self) -> DllFacts | None:
        """The library as DLL_COLLISION compares it: a PE file named ``.dll``."""
        if self.format != "pe" or not self.display.lower().endswith(".dll"):
            return None
        return DllFacts(self.display, self.owner, self.shim_exports)


def read_native(file: LibraryFile, owner: str, distribution: str | None) -> NativeFacts:
    """The facts of one Mach-O or PE library; its images' other names are let go."""
    from aoti_shim.checks.native.image import read_images

    images = read_images(file.path, file.display, "member", file.kind)
    is_model = any(n.startswith(MODEL_ENTRY_PREFIX) and "AOTInductor" in n for i in images for n in i.exports)
    cut = tuple(
        dataclasses.replace(
            i, exports=frozenset(_shim_names(i.exports)), weak_exports=frozenset(_shim_names(i.weak_exports)),
            imports=tuple(m for m in i.imports if prefixes.is_shim_name(m.name)),
        )
        for i in images
    )
    return NativeFacts(file.display, owner, distribution, file.kind, cut, is_model)


@dataclass(frozen=True)
class ScannedDistribution:
    name: str
    version: str
    location: str
    editable: bool
    source: str
    libraries: tuple[LibraryFacts, ...]
    native: tuple[NativeFacts, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"

    @property
    def dlls(self) -> tuple[DllFacts, ...]:
        """Its DLLs, as DLL_COLLISION compares them."""
        return tuple(d for d in (n.dll for n in self.native) if d is not None)


@dataclass(frozen=True)
class Scanned:
    """The environment with every library's facts: what the rules judge."""

    description: str
    site_folders: tuple[str, ...]
    distributions: tuple[ScannedDistribution, ...]
    unowned: tuple[LibraryFacts, ...]
    ignored: tuple[tuple[str, str], ...] = ()
    # Programs read that neither export nor import shim ABI (a process of their own: nobody binds to them).
    programs: tuple[str, ...] = field(default=())
    # Mach-O and PE libraries under a site folder that no distribution lists.
    unowned_native: tuple[NativeFacts, ...] = field(default=())

    @property
    def libraries(self) -> list[LibraryFacts]:
        """Every library, torch's first (the reference definer), then by distribution, then nobody's."""
        ordered = sorted(
            self.distributions, key=lambda d: (_normalized(d.name) not in TORCH_DISTRIBUTIONS, _normalized(d.name))
        )
        return [lib for d in ordered for lib in d.libraries] + list(self.unowned)

    @property
    def native(self) -> list[NativeFacts]:
        """Every Mach-O and PE library, in the order of :attr:`libraries`."""
        ordered = sorted(
            self.distributions, key=lambda d: (_normalized(d.name) not in TORCH_DISTRIBUTIONS, _normalized(d.name))
        )
        return [lib for d in ordered for lib in d.native] + list(self.unowned_native)


def scan_environment(env: Environment) -> Scanned:
    """Read every library of ``env``, one at a time."""
    programs: list[str] = []

    def facts(files: Sequence[LibraryFile], owner: str, name: str | None) -> tuple[LibraryFacts, ...]:
        out = []
        for file in files:
            found = read_library(file, owner, name)
            if found is None:
                programs.append(file.display)
            else:
                out.append(found)
        return tuple(out)

    distributions = tuple(
        ScannedDistribution(
            d.name, d.version, d.location, d.editable, d.source, facts(d.libraries, d.label, d.name),
            tuple(read_native(f, d.label, d.name) for f in d.native),
        )
        for d in env.distributions
    )
    return Scanned(
        description=env.description,
        site_folders=env.site_folders,
        distributions=distributions,
        unowned=facts(env.unowned, NOBODY, None),
        ignored=env.ignored,
        programs=tuple(programs),
        unowned_native=tuple(read_native(f, NOBODY, None) for f in env.unowned_native),
    )


# -- the rules --------------------------------------------------------------------------------


def _owner_key(lib: LibraryFacts | NativeFacts) -> str:
    # Each library outside any distribution is its own installer's.
    return lib.owner if lib.owner != NOBODY else f"{NOBODY} {lib.display}"


def _who(lib: LibraryFacts) -> str:
    return f"{lib.display} ({lib.owner})"


def torch_abi(scanned: Scanned) -> frozenset[str]:
    """libtorch's shim names: what torch's headers declare and what torch's libraries export."""
    names = set(shipped_names().names)
    libraries: list[LibraryFacts | NativeFacts] = [*scanned.libraries, *scanned.native]
    for lib in libraries:
        if lib.is_torch:
            names.update(lib.unprefixed_exports)
    return frozenset(names)


def _shared_names(
    libraries: Sequence[LibraryFacts], names_of: Callable[[LibraryFacts], Sequence[str]]
) -> dict[tuple[int, int], list[str]]:
    """For each (first definer, later library) of distinct owners: the names both export.
    The first definer of a name is the first library in ``libraries`` that exports it."""
    first: dict[str, int] = {}
    pairs: dict[tuple[int, int], list[str]] = {}
    for i, lib in enumerate(libraries):
        for name in names_of(lib):
            j = first.setdefault(name, i)
            if j != i and _owner_key(libraries[j]) != _owner_key(lib):
                pairs.setdefault((j, i), []).append(name)
    return pairs


def _collision(ctx: _Context) -> Iterator[Found]:
    libs = ctx.libraries
    for (j, i), names in sorted(_shared_names(libs, lambda lib: lib.shim_exports).items(), key=lambda kv: kv[0][::-1]):
        first, lib = libs[j], libs[i]
        messages = [
            f"exports shim name '{n}', which {_who(first)} also exports: one process binds one of them" for n in names
        ]
        yield Columns(lib.display, names, messages, [first.display] * len(names))


def _runtime_collision(ctx: _Context) -> Iterator[Found]:
    libs = ctx.libraries
    for what, names_of in (
        ("C++ runtime", lambda lib: lib.runtime_exports),
        ("CUDA runtime", lambda lib: lib.cuda_exports),
    ):
        for (j, i), names in sorted(_shared_names(libs, names_of).items(), key=lambda kv: kv[0][::-1]):
            first, lib = libs[j], libs[i]
            message = (
                f"re-exports {len(names)} {what} symbol(s) that {_who(first)} re-exports too, e.g. '{names[0]}': "
                "whichever is loaded RTLD_GLOBAL first serves both (two copies of one runtime's state)"
            )
            yield lib.display, names[0], message, first.display


def captures(scanned: Scanned, ctx: _Context | None = None) -> Iterator[tuple[LibraryFacts, LibraryFacts, list[str]]]:
    """(provider, consumer, names): the shim imports of a library that an unprefixed provider
    other than torch takes from libtorch, by the binding model of the process the hijack
    builds: the provider ``RTLD_GLOBAL``, then the libraries ``import torch`` loads, then
    each consumer of another distribution ``RTLD_LOCAL | RTLD_NOW`` (as Python loads an
    extension module). Only libtorch's shim names count: a provider's own names bind to it
    by design."""
    ctx = ctx or _Context(scanned)
    for provider in ctx.libraries:
        taken = ctx.hijacked(provider)
        if not taken or provider.linked is None:
            continue
        consumers = {
            id(lib.linked): lib
            for lib in ctx.libraries
            if lib.linked is not None and lib.unprefixed_imports and _owner_key(lib) != _owner_key(provider)
        }
        references = [provider.linked, *(r for r in ctx.torch_references if r is not provider.linked)]
        models = [lib.linked for lib in consumers.values() if lib.linked is not None]
        placed = {id(x) for x in (*references, *models)}
        # The rest of the environment's shim-ABI libraries are there to be found through a
        # consumer's DT_NEEDED (its own copy of a name, with the version it asks for).
        others = [lib.linked for lib in ctx.libraries if lib.linked is not None and id(lib.linked) not in placed]
        process = bindings.Process(references=references, models=models, dependencies=others)
        captured: dict[int, list[str]] = {}
        for b in process.resolve(bindings.shim_abi_imports):
            if b.definer is provider.linked and b.name in taken:
                captured.setdefault(id(b.importer), []).append(b.name)
        for key, names in captured.items():
            yield provider, consumers[key], sorted(names)


def _taken_by(first: Sequence[LibraryFacts], then: Sequence[LibraryFacts], blobs: Sequence[LibraryFacts]) -> int:
    """How many shim imports of ``blobs`` bind to a library of ``first`` when its shims are
    loaded global before those of ``then`` (the binding model)."""
    shims = [lib.linked for lib in (*first, *then) if lib.linked is not None]
    models = [lib.linked for lib in blobs if lib.linked is not None]
    mine = {id(lib.linked) for lib in first}
    users = {id(m) for m in models}
    process = bindings.Process(shims=shims, models=models)
    return sum(
        1 for b in process.resolve(bindings.shim_abi_imports) if id(b.importer) in users and id(b.definer) in mine
    )


class Hijack(NamedTuple):
    """One HIJACK in numbers: the provider, the consumer it captures, how many of libtorch's
    shim names the provider exports unprefixed, how many of the consumer's imports it takes."""

    provider: str
    consumer: str
    names: int
    imports: int


def native_captures(ctx: _Context) -> Iterator[tuple[NativeFacts, NativeFacts, list[str]]]:
    """(provider, consumer, names) of a macOS environment: the flat lookups of a dylib that an
    unprefixed provider of another distribution takes from libtorch. A flat lookup
    (``-undefined dynamic_lookup``, as torch links Darwin blobs) searches every image loaded
    globally, in load order, and Python loads extensions globally on macOS: dyld's model
    (checks/native/dyld.py) binds each import in the process of the provider, then torch's
    dylibs, then the consumer. A two-level import names its image and is never captured; a
    DLL's imports each name their DLL (DLL_COLLISION is Windows's capture)."""
    macho = [lib for lib in ctx.scanned.native if lib.format == "macho"]
    if not macho:
        return
    from aoti_shim.checks.native import dyld

    torch = [image for lib in macho if lib.is_torch for image in lib.images]
    for provider in macho:
        taken = ctx.hijacked(provider)
        if not taken:
            continue
        for consumer in macho:
            if _owner_key(consumer) == _owner_key(provider):
                continue
            captured = sorted({
                b.name for image in consumer.images for b in dyld.bind(image, _process(provider, torch, image))
                if b.imported.searches_all and b.name in taken and b.definer in {i.display for i in provider.images}
            })
            if captured:
                yield provider, consumer, captured


def _process(provider: NativeFacts, torch: list[NativeImage], consumer: NativeImage) -> list[Loaded]:
    """The images of ``consumer``'s architecture in load order: the provider, torch's, the consumer."""
    from aoti_shim.checks.native.binding import MODEL as NATIVE_MODEL
    from aoti_shim.checks.native.binding import REFERENCE as NATIVE_REFERENCE
    from aoti_shim.checks.native.binding import SHIM as NATIVE_SHIM
    from aoti_shim.checks.native.binding import Loaded

    def of(images: Iterable[NativeImage], kind: str) -> list[Loaded]:
        return [Loaded(i.display, i.base_name, kind, i.exports) for i in images
                if i.architecture == consumer.architecture]

    return [*of(provider.images, NATIVE_SHIM), *of(torch, NATIVE_REFERENCE), *of((consumer,), NATIVE_MODEL)]


def _hijack(ctx: _Context) -> Iterator[Found]:
    for provider, consumer, captured in captures(ctx.scanned, ctx):
        yield _hijack_found(ctx, provider, consumer, captured, "RTLD_GLOBAL before libtorch", "")
    for native_provider, native_consumer, flat in native_captures(ctx):
        when = "before libtorch (Python loads extensions globally on macOS)"
        yield _hijack_found(ctx, native_provider, native_consumer, flat, when, "flat-lookup ")


def _hijack_found(
    ctx: _Context, provider: LibraryFacts | NativeFacts, consumer: LibraryFacts | NativeFacts, captured: list[str],
    when: str, lookup: str,
) -> Found:
    """One HIJACK: ``provider`` loaded ``when`` captures ``captured``, the ``lookup`` shim
    imports of ``consumer`` (an ELF one's any, a Mach-O one's flat)."""
    taken = ctx.hijacked(provider)
    role = BLOB if consumer.is_model else CONSUMER
    whose = "outside any distribution" if consumer.owner == NOBODY else f"of {consumer.owner}"
    # The counts again as numbers, for the text report's grouping (the message keeps them in words).
    ctx.hijacks.append(Hijack(provider.display, consumer.display, len(taken), len(captured)))
    message = (
        f"exports {len(taken)} of libtorch's shim names unprefixed; loaded {when} it captures {len(captured)} "
        f"{lookup}shim import(s) of {consumer.display}, a {role} {whose} (e.g. '{captured[0]}'), which then runs "
        "against its tensors, not libtorch's"
    )
    return provider.display, captured[0], message, consumer.display


def _unprefixed_provider(ctx: _Context) -> Iterator[Found]:
    libraries: list[LibraryFacts | NativeFacts] = [*ctx.libraries, *ctx.scanned.native]
    for lib in libraries:
        names = lib.unprefixed_exports
        if not names or lib.is_torch:
            continue
        taken = ctx.hijacked(lib)
        # A DLL's importers name the DLL they bind to: there the names risk a blob built against the wrong one.
        risk = (
            "a blob importing them binds to whichever DLL its import directory names, this one or torch_cpu.dll"
            if isinstance(lib, NativeFacts) and lib.format == "pe" else
            "every stable-ABI extension and unprefixed blob installed beside it binds to whichever definer is "
            "global first"
        )
        message = (
            f"a shim provider other than torch exporting {len(names)} unprefixed shim name(s) "
            f"({len(taken)} of them libtorch's), e.g. '{names[0]}': {risk}; build it with a private prefix"
        )
        yield lib.display, names[0], message


def _prefix_clash(ctx: _Context) -> Iterator[Found]:
    first_of: dict[str, LibraryFacts] = {}
    said: set[tuple[str, str]] = set()
    for lib in ctx.libraries:
        for p in sorted(lib.export_prefixes - {""}):
            first = first_of.setdefault(p, lib)
            if _owner_key(first) == _owner_key(lib) or (p, _owner_key(lib)) in said:
                continue
            said.add((p, _owner_key(lib)))
            # What the clash does, by the binding model: each runtime's blobs, with the other
            # runtime's shims global first.
            effects = []
            for mine, theirs in ((first, lib), (lib, first)):
                provs = [x for x in ctx.libraries if _owner_key(x) == _owner_key(theirs) and p in x.export_prefixes]
                own = [x for x in ctx.libraries if _owner_key(x) == _owner_key(mine) and p in x.export_prefixes]
                blobs = [
                    x
                    for x in ctx.libraries
                    if _owner_key(x) == _owner_key(mine)
                    and any(prefixes.prefix_of(n) == p for n in x.shim_imports)
                    and not x.shim_exports
                ]
                taken = _taken_by(provs, own, blobs)
                if taken:
                    effects.append(
                        f"with {theirs.owner}'s shims global first, {taken} shim import(s) of {mine.owner}'s blobs "
                        "bind to them"
                    )
            message = (
                f"carries the private prefix {p!r}, which {_who(first)} carries too: two runtimes with one "
                "prefix bind each other's blobs to each other's shims" + (f" ({'; '.join(effects)})" if effects else "")
            )
            yield lib.display, f"{p}{prefixes.SHIM_MARK}*", message, first.display


def _dll_collision(ctx: _Context) -> Iterator[Found]:
    """Two distributions' DLLs of one base name, one of them a shim DLL (exporting shim-ABI
    names): Windows keeps one module of a name per process, the first loaded."""
    first: dict[str, DllFacts] = {}
    ordered = sorted(ctx.scanned.distributions, key=lambda d: (_normalized(d.name) not in TORCH_DISTRIBUTIONS,
                                                              _normalized(d.name)))
    for dll in (dll for d in ordered for dll in d.dlls):
        other = first.setdefault(dll.base, dll)
        if other is dll or other.owner == dll.owner or not (dll.shim_exports or other.shim_exports):
            continue
        shim = dll if dll.shim_exports else other
        message = (
            f"ships {dll.base}, as {other.owner} does ({other.display}): Windows loads one module of a base name per "
            "process (its loaded-module list compares names without regard to case), so the first one loaded serves "
            f"every import of both, and {shim.owner}'s shim DLL exports {len(shim.shim_exports)} shim-ABI name(s) "
            f"('{shim.shim_exports[0]}'); give each runtime's shim DLL a name of its own"
        )
        yield dll.display, dll.base, message, other.display


class _Context:
    """What several rules ask about the environment, computed once."""

    def __init__(self, scanned: Scanned) -> None:
        self.scanned = scanned
        # The process judged is Python's: a program (PT_INTERP) is never loaded into it (the
        # loader refuses to dlopen an executable), so its exports, -rdynamic or copy-relocated,
        # capture no extension's imports and collide with no library there, and its imports
        # bind in its own process (issue 33 §1b; `check` judges that one when named the host).
        self.libraries = [lib for lib in scanned.libraries if lib.kind != "executable"]
        self.abi = torch_abi(scanned)
        self._hijacked: dict[int, frozenset[str]] = {}
        self.hijacks: list[Hijack] = []  # what _hijack found, as numbers

    @cached_property
    def torch_references(self) -> list[bindings.Linked]:
        """torch's libraries that ``import torch`` loads, in load order, as the model's
        references (those that define shim names: the others bind nothing it is asked)."""
        by_file = {
            os.path.basename(lib.display): lib for lib in self.libraries if lib.is_torch and lib.kind == "shared"
        }
        order = import_closure(by_file, lambda name: by_file[name].needed) or sorted(by_file)
        return [lib.linked for lib in map(by_file.__getitem__, order) if lib.linked is not None and lib.shim_exports]

    def hijacked(self, lib: LibraryFacts | NativeFacts) -> frozenset[str]:
        """The libtorch shim names a provider other than torch exports unprefixed."""
        key = id(lib)
        if key not in self._hijacked:
            self._hijacked[key] = (
                frozenset() if lib.is_torch else frozenset(n for n in lib.unprefixed_exports if n in self.abi)
            )
        return self._hijacked[key]


SCAN_RULES: tuple[Rule[_Context], ...] = (
    Rule(
        "HIJACK",
        _hijack,
        "An unprefixed shim provider other than torch exports libtorch's shim names: loaded RTLD_GLOBAL before "
        "libtorch, it captures the shim imports of the environment's stable-ABI extensions and unprefixed blobs.",
        BLOCKING,
    ),
    Rule(
        "COLLISION",
        _collision,
        "Libraries of two distributions export the same shim-ABI name: one process binds only one of them.",
        BLOCKING,
    ),
    Rule("PREFIX_CLASH", _prefix_clash, "Shim providers of two distributions carry the same private prefix.", BLOCKING),
    Rule(
        "UNPREFIXED_PROVIDER",
        _unprefixed_provider,
        "A shim provider other than torch exports unprefixed shim names.",
        WARNING,
    ),
    Rule(
        "RUNTIME_COLLISION",
        _runtime_collision,
        "Libraries of two distributions both re-export the same C++ or CUDA runtime symbols.",
        WARNING,
    ),
    Rule(
        "DLL_COLLISION",
        _dll_collision,
        "Two distributions ship a Windows DLL of one base name, one of them a shim DLL: one process loads only "
        "the first.",
        BLOCKING,
    ),
)
SCAN_RULES_BY_ID = {rule.id: rule for rule in SCAN_RULES}


def evaluate(scanned: Scanned, hijacks: list[Hijack] | None = None) -> Iterator[FindingBatch]:
    """Every rule's findings, in table order; each HIJACK's counts appended to ``hijacks``
    as the stream reaches it."""
    ctx = _Context(scanned)
    if hijacks is not None:
        ctx.hijacks = hijacks
    return stamped(SCAN_RULES, ctx)


# -- the summary --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProviderRow:
    """One line of the providers table."""

    distribution: str  # label, or NOBODY
    library: str
    prefix: str  # "" for unprefixed
    names: int  # shim names it exports with that prefix


def providers(scanned: Scanned) -> tuple[ProviderRow, ...]:
    """The providers table: the ELF libraries' rows (a program is its own process: it provides
    no other library a shim), then the Mach-O and PE libraries' (none in an ELF environment)."""
    libs: list[LibraryFacts | NativeFacts] = [lib for lib in scanned.libraries if lib.kind != "executable"]
    return tuple(row for lib in [*libs, *scanned.native] for row in _provider_rows(lib))


def _provider_rows(lib: LibraryFacts | NativeFacts) -> list[ProviderRow]:
    """One row per prefix ``lib``'s shim-ABI exports carry, with how many carry it."""
    counts: dict[str, int] = {}
    for name in lib.shim_exports:
        p = prefixes.prefix_of(name)
        if p is not None:
            counts[p] = counts.get(p, 0) + 1
    return [ProviderRow(lib.owner, lib.display, p, n) for p, n in sorted(counts.items())]
