"""Run the checker: read the inputs, decide the prefix, evaluate the rules."""

from __future__ import annotations

import dataclasses
import os
import posixpath
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from aoti_shim.checks.abi import prefix as prefix_rules
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.inputs.collect import DEFAULT_MEMBER_LIMIT, Artifact, Workspace, collect, open_wheel
from aoti_shim.checks.loader import closure, search
from aoti_shim.checks.loader.bindings import Linked
from aoti_shim.checks.references.reference import Reference, close_all, open_references
from aoti_shim.checks.report import suppressions as suppression_file
from aoti_shim.checks.report.model import (
    AgainstSource,
    CheckedArtifact,
    Finding,
    FindingBatch,
    Header,
    MachineFact,
    Report,
    Tally,
    assemble,
    findings_of,
)
from aoti_shim.checks.report.suppressions import Suppression
from aoti_shim.checks.rules.table import RULES_BY_ID, Context, Library, evaluate
from aoti_shim.checks.scan.interpreter import running_interpreter
from aoti_shim.errors import AotiShimError, InputError, UsageError
from aoti_shim.guard import input_folder

# Exports past which a library's shim names are picked from its string table.
TABLE_SEARCH_ABOVE = 4096


@dataclass(frozen=True)
class CheckSettings:
    """What to check and how: the CLI's arguments, or the build backend's settings."""

    shims: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    against: tuple[str, ...] = ()
    prefix: str | None = None
    suppressions: str | None = None
    # Suppression tables given inline (the plugin reads them from pyproject.toml).
    inline_suppressions: tuple[dict[str, str], ...] = ()
    torch_search_paths: tuple[str, ...] = ()
    member_limit: int = DEFAULT_MEMBER_LIMIT
    # Files under this folder are named relative to it (the build gate's extracted members).
    display_root: str | None = None
    # Folders that each hold one extracted wheel: their files are members, and a run path
    # of theirs that leaves the wheel is looked up where the wheel installs (site_folders).
    wheel_roots: tuple[str, ...] = ()
    # Where a wheel's members install beside other distributions (default: the running
    # interpreter's site folders).
    site_folders: tuple[str, ...] | None = None
    # --library-path: the deployment's folders, searched after the loader's own.
    library_path: tuple[str, ...] = ()
    # The fix a missing dependency's finding names (default: --library-path, a suppression).
    missing_fix: str | None = None


def _identity(art: Artifact) -> object:
    """What makes two inputs one library: the file, or the wheel member (each is a fresh temp copy)."""
    if art.path != art.display:
        return art.display
    if art.file_id is not None:
        return art.file_id  # collect's stat of it
    try:
        st = os.stat(art.path)
    except OSError:
        return art.path
    return st.st_dev, st.st_ino


# Relocation tables up to this size are read for every library (a few milliseconds).
RELOCATION_READ_LIMIT = 256 << 10


def _read(art: Artifact, role: str, wheel_roots: tuple[str, ...] = ()) -> tuple[Library, closure.Needs | None]:
    """A library as the rules and the binding model see it, and what the dependency search
    needs of it (taken while its image is open: a streamed member's image closes with the read)."""
    identity = _identity(art)
    executable = art.kind == "executable"
    with art.open() as image:
        if not image.has_dynsym:
            return Library(
                display=art.display, role=role, exports={}, imports={}, identity=identity, executable=executable
            ), None
        # The tables hold packed ints, not the mapping: they outlive the image.
        exports, imports = image.exports(), image.imports()
        # The loader's view for the binding model: every import. The relocation tables (which
        # say which imports bind lazily, and which any relocation names) are read for a
        # library with shim-ABI imports or small tables (libtorch_cpu's are 8 MiB, 0.2 s).
        shim_imports = any(prefix_rules.is_shim_name(n) for n in imports)
        relocated = (
            image.relocated_symbol_indexes()
            if shim_imports or image.relocation_bytes() <= RELOCATION_READ_LIMIT
            else None
        )
        # A big table is searched where it lies (C passes over .dynstr), not name by name:
        # 14 ms for libtorch_cpu's 74k exports, which hold a few hundred candidates.
        big = len(exports) > TABLE_SEARCH_ABOVE
        holding = image.tables_holding(contains=prefix_rules.SHIM_NAME_NEEDLES)[0] if big else exports
        shim_exports = prefix_rules.shim_names(holding)
        soname, needed, filtees = image.soname, image.needed, image.filtees  # each asked once
        linked = Linked.of_tables(
            art.display,
            "shim" if role == "shim" else "model",
            exports,
            imports,
            file_name=art.file_name,
            soname=soname,
            needed=needed,
            filtees=filtees,
            symbolic=image.symbolic,
            noopen=image.noopen,
            header=(image.elf_class, image.big_endian, image.machine),
            versions=image.versions(),
            lazy=relocated[0] if relocated is not None else frozenset(),
            referenced=relocated[1] if relocated is not None else None,
            local_references=image.local_references(),
            unseen=image.unseen_definitions(exports, shim_exports),
        )
        # A program's copies of shim data (R_*_COPY) are the one instance, not a definition of its own.
        at = image.copy_relocated_indexes() if executable else frozenset()
        copied = frozenset(n for n in exports if exports.entry(n, image.versions()).index in at) if at else frozenset()
        # (glibc ignores an auxiliary filtee it cannot find.)
        auxiliary = frozenset(image.auxiliary_filtees)
        wanted = [*needed, *(n for n in filtees if n not in auxiliary), *auxiliary]
        needs = closure.Needs(_needer(art, image, wheel_roots), tuple(dict.fromkeys(wanted)), auxiliary, soname)
        return Library(
            display=art.display, role=role, exports=exports, imports=imports, identity=identity, linked=linked,
            executable=executable, copied=copied, shim_exports=shim_exports,
        ), needs


def _needer(art: Artifact, image: ElfImage, wheel_roots: tuple[str, ...]) -> search.Needer:
    rpath, runpath = image.search_paths
    header = (image.elf_class, image.big_endian, image.machine)
    common: dict[str, Any] = dict(rpath=rpath, runpath=runpath, nodeflib=image.nodeflib, header=header)
    if art.wheel is not None:
        member = art.display.rsplit("!", 1)[-1].replace("\\", "/")
        return search.Needer(None, root=art.wheel, member_dir=posixpath.dirname(member) or ".", streamed=True, **common)
    path = os.path.abspath(art.path) if wheel_roots else ""
    for root in wheel_roots:
        inside = os.path.join(os.path.abspath(root), "")
        if path.startswith(inside):
            rel = os.path.relpath(os.path.dirname(path), root).replace(os.sep, "/")
            return search.Needer(os.path.dirname(path), root=os.path.abspath(root), member_dir=rel, **common)
    # $ORIGIN is the folder of the path it was opened by, symlinks not resolved (glibc's l_origin),
    # nor a link/.. taken away (the kernel resolves it from the link's target).
    return search.Needer(os.path.dirname(search.absolute(art.path)), **common)


def _members(wheel: str) -> tuple[frozenset[str], frozenset[str]]:
    """Every folder of a wheel that holds a member (its ancestors too), and the members."""
    dirs, files = {"."}, set()
    with open_wheel(wheel) as zf:
        for name in zf.namelist():
            parts = name.replace("\\", "/").split("/")
            files.add("/".join(parts))
            dirs.update("/".join(parts[: i + 1]) for i in range(len(parts) - 1))
    return frozenset(dirs), frozenset(files)


# The fix a missing dependency's message names (the build backend says its own setting).
MISSING_FIX = "give its folder with --library-path DIR, or suppress LOAD_FAILURE for this library"


def _key(art: Artifact) -> closure.Key:
    """A checked file's identity for the walk: its real path, or a streamed member's name."""
    return art.display if art.wheel is not None else art.real_path


class _Found:
    """The walk's reader of the libraries found in the deployment's folders: each read once,
    kept for the export rules (a shim's dependency is judged as a shim is)."""

    def __init__(self) -> None:
        self.read: dict[str, Library] = {}

    def __call__(self, path: str, key: closure.Key) -> tuple[Linked, closure.Needs] | None:
        lib, needs = _read(Artifact(path, key), "model")
        self.read[key] = lib
        return (lib.linked, needs) if lib.linked is not None and needs is not None else None

    def of_shims(self, walked: closure.Closure) -> tuple[Library, ...]:
        """Those a shim's closure reaches (global with it), their shim-ABI exports alone."""
        nodes = [n for n in walked.nodes.values() if n.kind == closure.DEPENDENCY_NODE and n.from_shim]
        return tuple(
            _shim_names_only(dataclasses.replace(self.read[n.key], role="dependency", linked=n.linked)) for n in nodes
        )


def _dependencies(
    checked: list[tuple[Artifact, Library, closure.Needs | None]],
    known: set[str],
    refs: list[Reference],
    settings: CheckSettings,
) -> tuple[closure.Closure, tuple[Library, ...], tuple[MachineFact, ...]]:
    """Every DT_NEEDED entry of the checked libraries, looked up as ld.so looks it up, and
    of what that finds (:mod:`aoti_shim.checks.loader.closure`); the dependencies a
    shim's closure reaches, for the export rules; and the loader facts of this machine."""
    sites = settings.site_folders if settings.site_folders is not None else running_interpreter().folders
    finder = search.Search(
        search.SearchPaths.of_machine(settings.library_path, sites), lru_cache(maxsize=None)(_members)
    )
    ref_images = tuple(r for r in refs if isinstance(r, ElfImage))
    # The process's machine, as the binding model takes it: the references', else the models'.
    headers: list[tuple[int, bool, int] | None] = [
        (r.elf_class, r.big_endian, r.machine) for r in ref_images if r.has_dynsym
    ]
    headers += [lib.linked.header for _, lib, _ in checked if lib.role != "shim" and lib.linked is not None]
    headers += [lib.linked.header for _, lib, _ in checked if lib.linked is not None]
    process = closure.Process(
        known=frozenset(known), checked=frozenset(_key(a) for a, _, _ in checked),
        references=frozenset(os.path.realpath(r.path) for r in ref_images), reference_images=ref_images,
        header=closure.process_header(headers), fix=settings.missing_fix or MISSING_FIX,
    )
    # One file given as --shim and --model is one library: its needs are said once.
    roots: list[closure.Root] = []
    identities: set[object] = set()
    for art, lib, needs in checked:
        if lib.linked is not None and (lib.identity is None or lib.identity not in identities):
            identities.add(lib.identity)
            roots.append(closure.Root(_key(art), lib.linked, needs, lib.role == "shim", lib.hosts))
    found = _Found()
    walked = closure.Walk(finder, process, found).run(roots)
    return walked, found.of_shims(walked), machine_facts(finder.paths, walked)


def machine_facts(paths: search.SearchPaths, walked: closure.Closure) -> tuple[MachineFact, ...]:
    """The loader facts the check took from this machine, each with its value and whether it
    was used (issue 33 §2: a wheel checked in CI is deployed on another machine).
    LD_LIBRARY_PATH only when set."""
    values = {
        search.PLATFORM_FACT: paths.platform or "(unknown: a folder naming it is dropped)",
        search.LIB_FACT: paths.lib,
        search.HWCAPS_FACT: ":".join(s for s in paths.subfolders if s) or "(none)",
        search.ENV_FACT: ":".join(paths.env),
        search.CACHE_FACT: search.CACHE_FILE if paths.cache else f"{search.CACHE_FILE} (absent or unreadable)",
        search.SYSTEM_FACT: ":".join(paths.system),
        search.LIBC_FACT: walked.libc or "(not found)",
    }
    return tuple(
        MachineFact(fact, values[fact], fact in walked.facts_used)
        for fact in search.FACTS
        if fact != search.ENV_FACT or paths.env
    )


def _shim_names_only(lib: Library) -> Library:
    """A dependency as the export rules see it: only its shim-ABI exports count (libcudart's
    cuda* names are no collision of the shims')."""
    exports = {
        n: lib.exports[n] for n in lib.exports if prefix_rules.may_be_shim_name(n) and prefix_rules.is_shim_name(n)
    }
    return dataclasses.replace(lib, exports=exports, imports={}, shim_exports=None)


def _with_needs(checked: list[tuple[Artifact, Library]], walked: closure.Closure) -> list[Library]:
    """The libraries with what the search said of their DT_NEEDED entries: the names found
    nowhere or not on this machine, and the paths by which others need them."""
    out = []
    for art, lib in checked:
        node = walked.nodes.get(_key(art))
        if lib.linked is not None and node is not None:
            said = node.said_of(lib.linked)
            if said is not lib.linked:  # (a blob the search says nothing of stays as read)
                lib = lib.with_linked(said)
        out.append(lib)
    return out


def _hosts(arts: list[Artifact], libs: list[Library], settings: CheckSettings) -> list[Library]:
    """Marks the programs the user named (a file given, not a wheel's member nor one a folder
    holds) as the program hosting the blobs; any other program is a process of its own."""
    if not any(lib.executable for lib in libs):
        return libs
    named = {os.path.realpath(x) for x in (*settings.shims, *settings.models) if os.path.isfile(x)}
    inside = tuple(os.path.join(os.path.abspath(r), "") for r in settings.wheel_roots)
    return [
        dataclasses.replace(lib, hosts=True)
        if lib.executable
        and art.wheel is None
        and os.path.realpath(art.path) in named
        and not os.path.abspath(art.path).startswith(inside)
        else lib
        for art, lib in zip(arts, libs)
    ]


def _named_from(arts: list[Artifact], root: str | None) -> list[Artifact]:
    if root is None:
        return arts
    inside = os.path.join(os.path.abspath(root), "")
    return [
        dataclasses.replace(a, display=os.path.relpath(a.path, root))
        if os.path.abspath(a.path).startswith(inside)
        else a
        for a in arts
    ]


class CheckRun:
    """A check under way: the header is known, the findings stream from :meth:`batches`
    or :meth:`findings` (one pass, either) and add up in :attr:`tally`. Open only inside
    :func:`checking`."""

    def __init__(self, header: Header, ctx: Context, suppressions: tuple[Suppression, ...]) -> None:
        self.header = header
        self.tally = Tally()
        self._ctx = ctx
        self._suppressions = suppressions
        self._used = False

    @property
    def context(self) -> Context:
        """What the rules read: the libraries, the references and the binding model
        (``context.process``, ``context.bindings``)."""
        return self._ctx

    def batches(self) -> Iterator[FindingBatch]:
        if self._used:
            raise RuntimeError("a CheckRun's findings stream once")
        self._used = True
        return suppression_file.stream(evaluate(self._ctx), self._suppressions, self.tally)

    def findings(self) -> Iterator[Finding]:
        return findings_of(self.batches())


def library_folders(
    folders: Iterable[str],
    source: str,
    *,
    base: str | os.PathLike[str] | None = None,
    error: type[AotiShimError] = InputError,
) -> tuple[str, ...]:
    """The deployment's library folders, those relative taken from ``base`` when one is given.
    One that is no folder is a one-line ``error`` naming ``source``, where they were given
    (``--library-path``, or the build backend's pyproject key, a usage error there)."""
    out = []
    for folder in folders:
        path = folder if base is None else str(Path(base, folder))  # an absolute folder keeps its own
        if not os.path.isdir(path):
            raise error(f"{source} {folder!r}: {path} is not a folder")
        input_folder(path, what=f"{source} {folder!r}:", error=error)  # a folder the loader cannot list
        out.append(path)
    return tuple(out)


def _nothing_found(flag: str, given: tuple[str, ...], ignored: tuple[tuple[str, str], ...]) -> str:
    """Why ``flag``'s inputs gave no library: only programs (or objects) in them, or no ELF file."""
    inside = [
        name for name, _ in ignored if any(name == g or name.startswith((g.rstrip("/") + "/", g + "!")) for g in given)
    ]
    if not inside:
        return f"{flag} {' '.join(given)}: no ELF file found"
    programs = [name for name, kind in ignored if kind == "executable" and name in inside]
    if len(programs) == len(inside):
        what = f"only programs ({len(programs)}, e.g. {programs[0]})"
    else:
        what = f"only programs or objects ({len(inside)}, e.g. {inside[0]})"
    return (f"{flag} {' '.join(given)}: holds {what}, no shared library; {flag} takes shared libraries (.so), folders "
        "or wheels holding them")


def _suppressions(settings: CheckSettings) -> tuple[Suppression, ...]:
    sups: tuple[Suppression, ...] = ()
    if settings.suppressions:
        sups = suppression_file.load(settings.suppressions, RULES_BY_ID)
    if settings.inline_suppressions:
        sups = sups + suppression_file.parse(settings.inline_suppressions, "pyproject.toml", RULES_BY_ID)
    return sups


def _collected(settings: CheckSettings, ws: Workspace) -> dict[str, list[Artifact]]:
    """The files of the --shim and --model inputs, by role."""
    given = {"shim": settings.shims, "model": settings.models}
    return {
        role: _named_from(collect(paths, ws, member_limit=settings.member_limit), settings.display_root)
        for role, paths in given.items()
    }


def _inputs(
    settings: CheckSettings, ws: Workspace, arts: dict[str, list[Artifact]]
) -> list[tuple[Artifact, Library, closure.Needs | None]]:
    """The checked libraries read, shims first, each with its needs."""
    given = {"shim": settings.shims, "model": settings.models}
    read = []
    for role in given:
        pairs = [_read(a, role, settings.wheel_roots) for a in arts[role]]
        hosted = _hosts(arts[role], [lib for lib, _ in pairs], settings)
        read += [(a, lib, needs) for a, lib, (_, needs) in zip(arts[role], hosted, pairs)]
    for role, paths in given.items():
        if paths and not arts[role]:
            raise UsageError(_nothing_found(f"--{role}", paths, tuple(ws.ignored)))
    return read


@dataclass(frozen=True)
class _Prefix:
    """The run's prefix, where it came from, and the shim names it was read from."""

    prefix: str | None
    source: str  # "given", "inferred" or "none"
    inferred_from: str
    shim_names: tuple[str, ...]


def _prefix(settings: CheckSettings, shims: list[Library], models: list[Library]) -> _Prefix:
    # Only shim-ABI names can carry a prefix.
    shim_names = tuple(n for lib in shims for n in lib.marked_exports)
    return _prefix_of(
        settings, shim_names, bool(shims),
        lambda: (n for lib in models for n in lib.imports if prefix_rules.is_shim_name(n)),
    )


def _prefix_of(
    settings: CheckSettings, shim_names: tuple[str, ...], any_shim: bool, model_imports: Callable[[], Iterable[str]]
) -> _Prefix:
    """The prefix: given, else read from the shims' names, else (no shim given) from the models' imports."""
    if settings.prefix is not None:
        return _Prefix(prefix_rules.validate(settings.prefix), "given", "", shim_names)
    inferred, inferred_from = prefix_rules.infer(shim_names), "shims"
    if inferred is None and not any_shim:
        inferred, inferred_from = prefix_rules.infer(model_imports()), "models"
    source = "inferred" if inferred else "none"
    return _Prefix(inferred, source, inferred_from if source == "inferred" else "", shim_names)


class _Checked(Protocol):
    """A checked library or image, as the header names it."""

    @property
    def display(self) -> str: ...

    @property
    def role(self) -> str: ...


def _header(
    settings: CheckSettings,
    prefix: _Prefix,
    libs: Sequence[_Checked],
    refs: list[Reference],
    sources: list[AgainstSource],
    ignored: tuple[tuple[str, str], ...],
    facts: tuple[MachineFact, ...] = (),
) -> Header:
    skipped = []
    if not settings.against:
        skipped.append(("COLLISION", "no --against reference given"))
    if not any(lib.role == "shim" for lib in libs):
        skipped.append(("UNSATISFIED_IMPORT", "needs --shim libraries"))
    return Header(
        prefix=prefix.prefix,
        prefix_source=prefix.source,
        artifacts=tuple(CheckedArtifact(lib.display, lib.role) for lib in libs),
        references=tuple(r.display for r in refs),
        skipped_rules=tuple(skipped),
        prefix_inferred_from=prefix.inferred_from,
        against=tuple(sources),
        ignored=ignored,
        machine_facts=facts,
    )


@contextmanager
def checking(settings: CheckSettings) -> Iterator[CheckRun]:
    """Read the inputs and references, decide the prefix; the references stay open (and
    wheel members on disk) until the block ends, so findings can stream to the output."""
    if not settings.shims and not settings.models:
        raise UsageError("nothing to check: give --shim and/or --model inputs")
    library_folders(settings.library_path, "--library-path")
    sups = _suppressions(settings)
    with Workspace() as ws:
        collected = _collected(settings, ws)
        fmt = _one_format([*collected["shim"], *collected["model"]])
        if fmt != "elf":
            with _native_checking(settings, ws, collected, fmt, sups) as run:
                yield run
            return
        inputs = _inputs(settings, ws, collected)
        ignored = tuple(ws.ignored)
        checked = [(a, lib) for a, lib, _ in inputs]
        shims = [lib for _, lib, _ in inputs if lib.role == "shim"]
        prefix = _prefix(settings, shims, [lib for _, lib, _ in inputs if lib.role == "model"])
        sources: list[AgainstSource] = []
        refs = open_references(
            settings.against, ws, torch_search_paths=settings.torch_search_paths,
            exclude=frozenset(a.real_path for a, _ in checked), sources=sources,
        )
        # (A checked library is known by its soname from when it loads: the walk's.)
        known = {os.path.basename(r.display.split("!")[-1]) for r in refs}
        known.update(n for r in refs for n in (getattr(r, "soname", None),) if n)
        try:
            walked, of_shims, facts = _dependencies(inputs, known, refs, settings)
        except BaseException:
            close_all(refs)
            raise
        libs = _with_needs(checked, walked)
        try:
            ctx = Context(
                prefix=prefix.prefix,
                shims=[lib for lib in libs if lib.role == "shim"],
                models=[lib for lib in libs if lib.role == "model"],
                references=refs,
                prefix_source=prefix.source,
                shim_prefixes=frozenset(prefix_rules.carried(prefix.shim_names)),
                dependencies=walked.found,
                shim_dependencies=of_shims,
                unseen=walked.unseen,
                machine=walked.machine,
            )
            yield CheckRun(_header(settings, prefix, libs, refs, sources, ignored, facts), ctx, sups)
        finally:
            close_all(refs)
            for image in walked.images:
                image.close()


def _one_format(arts: list[Artifact]) -> str:
    """The inputs' one format; the Mach-O and PE side of the checker (readers, lookup models)
    is imported only when an input is of theirs, so an ELF check loads none of it."""
    if all(a.format == "elf" for a in arts):
        return "elf"
    import aoti_shim.checks.check.native as native

    return native.one_format(arts)


@contextmanager
def _native_checking(
    settings: CheckSettings, ws: Workspace, arts: dict[str, list[Artifact]], fmt: str, sups: tuple[Suppression, ...]
) -> Iterator[CheckRun]:
    """:func:`checking` of Mach-O or PE inputs: the native lookup model's process, judged by
    the same rules and reported the same way (no ELF loader facts: nothing is searched)."""
    import aoti_shim.checks.check.native as native

    for role, paths in (("shim", settings.shims), ("model", settings.models)):
        if paths and not arts[role]:
            raise UsageError(_nothing_found(f"--{role}", paths, tuple(ws.ignored)))
    shims, models = native.images(arts["shim"], "shim"), native.images(arts["model"], "model")
    prefix = _prefix_of(settings, tuple(native.shim_names(shims)), bool(shims), lambda: native.model_imports(models))
    sources: list[AgainstSource] = []
    refs = open_references(
        settings.against, ws, torch_search_paths=settings.torch_search_paths,
        exclude=frozenset(os.path.realpath(a.path) for a in (*arts["shim"], *arts["model"])), sources=sources,
    )
    try:
        process = native.process(fmt, shims, models, refs, prefix.prefix)
        ctx = Context(
            prefix=prefix.prefix, shims=[], models=[], references=refs, prefix_source=prefix.source,
            shim_prefixes=process.shim_prefixes, native=process,
        )
        header = _header(settings, prefix, [*shims, *models], refs, sources, tuple(ws.ignored))
        header = dataclasses.replace(header, format=fmt)
        yield CheckRun(header, ctx, sups)
    finally:
        close_all(refs)


def run_check(settings: CheckSettings) -> Report:
    """The whole report, findings in memory (the command streams them instead)."""
    with checking(settings) as run:
        findings = tuple(run.findings())
    return assemble(run.header, findings, run.tally)
