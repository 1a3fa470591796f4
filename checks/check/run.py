"""Run the checker: read the inputs, decide the prefix, evaluate the rules."""

from __future__ import annotations

import dataclasses
import os
import posixpath
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Iterator

from aoti_shim.checks.abi import prefix as prefix_rules
from aoti_shim.checks.loader import search
from aoti_shim.checks.report import suppressions as suppression_file
from aoti_shim.checks.loader.bindings import DEPENDENCY, SYSTEM, Linked
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.scan.environment import running_interpreter
from aoti_shim.checks.inputs.collect import DEFAULT_MEMBER_LIMIT, Artifact, Workspace, collect, open_wheel
from aoti_shim.checks.references.reference import close_all, open_references
from aoti_shim.checks.report.model import AgainstSource, CheckedArtifact, Finding, FindingBatch, Header, Report, Tally, assemble, findings_of
from aoti_shim.checks.rules.table import RULES_BY_ID, Context, Library, evaluate
from aoti_shim.checks.report.suppressions import Suppression
from aoti_shim.errors import AotiShimError, InputError, UsageError
from aoti_shim.guard import input_folder


@dataclass(frozen=True)
class CheckSettings:
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
    try:
        st = os.stat(art.path)
    except OSError:
        return art.path
    return st.st_dev, st.st_ino


# What the dependency search needs of each library read: where it is and what it needs,
# taken while its image is open (a streamed member's image closes with the read).
# (where it is, its DT_NEEDED and DT_FILTER names, its DT_AUXILIARY names: glibc ignores
# an auxiliary filtee it cannot find).
_Needs = dict[int, tuple[search.Needer, list[str], frozenset[str]]]

# Relocation tables up to this size are read for every library (a few milliseconds).
RELOCATION_READ_LIMIT = 256 << 10


def _read(art: Artifact, role: str, needs: _Needs | None = None, wheel_roots: tuple[str, ...] = ()) -> Library:
    identity = _identity(art)
    executable = art.kind == "executable"
    with art.open() as image:
        if not image.has_dynsym:
            return Library(display=art.display, role=role, exports={}, imports={}, identity=identity, executable=executable)
        # The tables hold packed ints, not the mapping: they outlive the image.
        exports, imports = image.exports(), image.imports()
        # The loader's view for the binding model: every import. The relocation tables (which
        # say which imports bind lazily, and which any relocation names) are read for a
        # library with shim-ABI imports or small tables (libtorch_cpu's are 8 MiB, 0.2 s).
        shim_imports = any(prefix_rules.is_shim_name(n) for n in imports)
        relocated = image.relocated_symbol_indexes() if shim_imports or image.relocation_bytes() <= RELOCATION_READ_LIMIT else None
        linked = Linked.of_tables(
            art.display,
            "shim" if role == "shim" else "model",
            exports,
            imports,
            file_name=art.file_name,
            soname=image.soname,
            needed=image.needed,
            filtees=image.filtees,
            symbolic=image.symbolic,
            noopen=image.noopen,
            header=(image.elf_class, image.big_endian, image.machine),
            versions=image.versions(),
            lazy=relocated[0] if relocated is not None else frozenset(),
            referenced=relocated[1] if relocated is not None else None,
            local_references=image.local_references(),
            unseen=image.unseen_definitions(exports, (n for n in exports if prefix_rules.is_shim_name(n))),
        )
        # A program's copies of shim data (R_*_COPY) are the one instance, not a definition of its own.
        at = image.copy_relocated_indexes() if executable else frozenset()
        copied = frozenset(n for n in exports if exports.entry(n, image.versions()).index in at) if at else frozenset()
        if needs is not None:
            auxiliary = frozenset(image.auxiliary_filtees)
            wanted = [*image.needed, *(n for n in image.filtees if n not in auxiliary), *auxiliary]
            needs[id(linked)] = (_needer(art, image, wheel_roots), list(dict.fromkeys(wanted)), auxiliary)
        return Library(
            display=art.display, role=role, exports=exports, imports=imports, identity=identity, linked=linked,
            executable=executable, copied=copied,
        )  # fmt: skip


@dataclass(frozen=True)
class Dependencies:
    """What the checked libraries' DT_NEEDED entries reach, as the loader finds them."""

    # Libraries found in the deployment's folders (run paths, LD_LIBRARY_PATH,
    # --library-path, the environment's site folders), read as the process loads them.
    linked: tuple[Linked, ...]
    # Those a shim's closure reaches (global with it), their shim-ABI exports alone: the
    # export rules judge them as they judge a shim.
    of_shims: tuple[Library, ...]
    # DT_NEEDED names each checked or found library has that the loader finds nowhere.
    missing: dict[int, list[tuple[str, str]]]
    # (library, name, why) of names this machine lacks but a deployment has (UNSEEN_DEPENDENCY).
    unseen: tuple[tuple[str, str, str], ...]
    # Extra names a checked library is needed by (a DT_NEEDED path that is its file).
    aliases: dict[int, set[str]]
    # DT_NEEDED names each checked or found library has that this machine lacks (UNSEEN).
    unseen_of: dict[int, list[str]] = dataclasses.field(default_factory=dict)
    # The process's own libraries, global before everything: the machine's libc (every
    # program has it) and the references' dependencies (libstdc++, libm...).
    machine: tuple[Linked, ...] = ()
    # The machine's libraries read for their exports, open until the check ends.
    images: tuple[ElfImage, ...] = ()


def _needer(art: Artifact, image: ElfImage, wheel_roots: tuple[str, ...]) -> search.Needer:
    rpath, runpath = image.search_paths
    header = (image.elf_class, image.big_endian, image.machine)
    common = dict(rpath=rpath, runpath=runpath, nodeflib=image.nodeflib, header=header)
    if art.wheel is not None:
        member = art.display.rsplit("!", 1)[-1].replace("\\", "/")
        return search.Needer(None, root=art.wheel, member_dir=posixpath.dirname(member) or ".", streamed=True, **common)
    path = os.path.abspath(art.path)
    for root in wheel_roots:
        inside = os.path.join(os.path.abspath(root), "")
        if path.startswith(inside):
            rel = os.path.relpath(os.path.dirname(path), root).replace(os.sep, "/")
            return search.Needer(os.path.dirname(os.path.realpath(path)), root=os.path.abspath(root), member_dir=rel, **common)
    return search.Needer(os.path.dirname(os.path.realpath(path)), **common)


def _members(wheel: str) -> tuple[frozenset[str], frozenset[str]]:
    """Every folder of a wheel that holds a member (its ancestors too), and the members."""
    dirs, files = {"."}, set()
    with open_wheel(wheel) as zf:
        for name in zf.namelist():
            parts = name.replace("\\", "/").split("/")
            files.add("/".join(parts))
            dirs.update("/".join(parts[: i + 1]) for i in range(len(parts) - 1))
    return frozenset(dirs), frozenset(files)


def _searched(needer: search.Needer, fix: str) -> str:
    where = [f"its RPATH {':'.join(needer.rpath)}"] if needer.rpath else []
    where += [f"its RUNPATH {':'.join(needer.runpath)}"] if needer.runpath else []
    where.append("LD_LIBRARY_PATH, the checked libraries, the ld.so cache and the system folders")
    return f"searched {', '.join(where)}: {fix}"


# The fix a missing dependency's message names (the build backend says its own setting).
MISSING_FIX = "give its folder with --library-path DIR, or suppress LOAD_FAILURE for this library"


def _dependencies(
    pairs: list[tuple[Artifact, Library]],
    needs: _Needs,
    known: set[str],
    checked: dict[str, int],
    references: frozenset[str],
    settings: CheckSettings,
    reference_images: tuple[ElfImage, ...] = (),
) -> Dependencies:
    """Every DT_NEEDED entry of the checked libraries, looked up as ld.so looks it up
    (:mod:`aoti_shim.checks.loader.search`), and of what that finds: each checked library's
    closure breadth first, in load order (the shims first). A name a loaded library already has (a checked library's or a
    reference's DT_SONAME or file name) is that library, as for the loader."""
    sites = settings.site_folders if settings.site_folders is not None else running_interpreter().folders
    finder = search.Search(search.SearchPaths.of_machine(settings.library_path, sites), lru_cache(maxsize=None)(_members))
    fix = settings.missing_fix or MISSING_FIX
    found: list[Linked] = []
    of_shims: list[Library] = []
    missing: dict[int, list[tuple[str, str]]] = {}
    unseen: list[tuple[str, str, str]] = []
    unseen_of: dict[int, list[str]] = {}
    aliases: dict[int, set[str]] = {}
    read: dict[str, Library] = {}
    # The machine's libraries (found in the ld.so cache or a system folder), by real path:
    # read for their exports only, through .gnu.hash, the image kept open.
    machine_read: dict[str, Linked] = {}
    machine_named: dict[str, Linked] = {}
    images: list[ElfImage] = []
    # Each checked library in load order with its closure, breadth first (as dlopen maps
    # it): (its Library, the needers that brought it in, reached from a shim?).
    todo: list[tuple[Library, tuple[search.Needer, ...], bool]] = []
    # One file given as --shim and --model is one library: its needs are said once.
    identities: set[object] = set()
    roots = []
    for _, lib in pairs:
        if lib.linked is not None and (lib.identity is None or lib.identity not in identities):
            identities.add(lib.identity)
            roots.append(lib)

    def machine_library(path: str, name: str) -> Linked | None:
        """A library of the machine (or a reference's dependency), read once: its exports
        and needs; its own imports are not asked about."""
        real = os.path.realpath(path)
        if real in machine_read:
            return machine_read[real]
        try:
            image = ElfImage(real)
        except InputError:
            return None  # unreadable: it defines nothing the check can tell
        images.append(image)
        linked = Linked.of_image(image, SYSTEM, imports=False)
        linked = dataclasses.replace(linked, names=linked.names | {name})
        machine_read[real] = linked
        for n in linked.names:
            machine_named.setdefault(n, linked)
        if image.has_dynsym:
            rpath, runpath = image.search_paths
            needer = search.Needer(os.path.dirname(real), rpath=rpath, runpath=runpath, nodeflib=image.nodeflib,
                                   header=(image.elf_class, image.big_endian, image.machine))  # fmt: skip
            needs[id(linked)] = (needer, list(image.needed), frozenset())
            todo.append((Library(linked.display, SYSTEM, {}, {}, linked=linked), (), False))
        return linked

    while todo or roots:
        if not todo:
            root = roots.pop(0)
            todo.append((root, (), root.role == "shim"))
        lib, loaders, from_shim = todo.pop(0)
        if lib.linked is None or id(lib.linked) not in needs:
            continue
        needer, needed, optional = needs[id(lib.linked)]
        system = lib.linked.role == SYSTEM
        wanted = [n for n in needed if n not in known]
        for name in wanted:
            if name in known:
                continue
            where = finder.find(name, needer, loaders)
            if where.how == search.UNSEEN:
                unseen_of.setdefault(id(lib.linked), []).append(name)
                if not system:
                    unseen.append((lib.display, name, where.via))
            elif where.how == search.MISSING and (name in optional or system):
                continue  # an auxiliary filtee found nowhere: glibc uses the filter's own definitions
            elif where.how == search.MISSING:
                missing.setdefault(id(lib.linked), []).append((name, _searched(needer, fix)))
            elif where.path in checked:  # a streamed wheel's member, by its display name
                aliases.setdefault(checked[where.path], set()).add(name)
                known.add(name)
            else:
                real = os.path.realpath(where.path or "")
                if real in checked:
                    aliases.setdefault(checked[real], set()).add(name)
                    known.add(name)
                    continue
                if real in references:
                    known.add(name)
                    continue
                if where.how == search.SYSTEM or system:
                    # The machine's own (libc, libstdc++): no shim names, its imports its own.
                    known.add(name)
                    dep_linked = machine_library(real, name)
                    if dep_linked is not None:
                        known.update(dep_linked.names)
                        if dep_linked not in found:
                            found.append(dep_linked)
                    continue
                if real in read:
                    dep = read[real]
                else:
                    dep = _read(Artifact(real, real), "model", needs)
                    read[real] = dep
                    if dep.linked is None:
                        continue
                    linked = dataclasses.replace(dep.linked, role=DEPENDENCY, names=dep.linked.names | {name})
                    needs[id(linked)] = needs[id(dep.linked)]
                    dep = dataclasses.replace(dep, role="dependency", linked=linked)
                    read[real] = dep
                    found.append(linked)
                    known.update(linked.names)
                    if from_shim:
                        of_shims.append(_shim_names_only(dep))
                    todo.append((dep, (needer, *loaders), from_shim))
                known.add(name)
    machine: list[Linked] = []
    # The process's machine, as the binding model takes it: the references', else the models'.
    headers = [(r.elf_class, r.big_endian, r.machine) for r in reference_images if r.has_dynsym]
    headers += [lib.linked.header for _, lib in pairs if lib.role != "shim" and lib.linked is not None and lib.linked.header]
    headers += [lib.linked.header for _, lib in pairs if lib.linked is not None and lib.linked.header]
    header = headers[0] if headers else None
    # Every program has libc (and its dynamic linker) in the global scope, given or not.
    libc = finder.find("libc.so.6", search.Needer(None, header=header))
    if libc.how in (search.SYSTEM, search.FILE) and libc.path is not None:
        real = os.path.realpath(libc.path)
        host = machine_read.get(real) if "libc.so.6" in known else machine_library(real, "libc.so.6")
        if host is not None:
            machine.append(host)
            known.update(host.names)
    # The references' own dependencies load global with them: what they define counts as
    # bound. One this machine lacks stands in as unknown (it may define anything).
    for ref in reference_images:
        if not ref.has_dynsym:
            continue
        rpath, runpath = ref.search_paths
        needer = search.Needer(os.path.dirname(os.path.realpath(ref.path)), rpath=rpath, runpath=runpath,
                               nodeflib=ref.nodeflib, header=(ref.elf_class, ref.big_endian, ref.machine))  # fmt: skip
        for name in ref.needed:
            if name in machine_named:  # a checked library's need too: global with the references
                if all(m is not machine_named[name] for m in machine):
                    machine.append(machine_named[name])
                continue
            if name in known:
                continue
            where = finder.find(name, needer)
            real = os.path.realpath(where.path) if where.path else None
            if real is not None and real in references:
                continue
            dep_linked = machine_library(real, name) if real is not None and where.how in (search.SYSTEM, search.FILE) else None
            if dep_linked is None:
                dep_linked = Linked(name, SYSTEM, frozenset(), unseen=(name,))
            else:
                known.update(dep_linked.names)
            known.add(name)
            machine.append(dep_linked)
    # A CUDA process (the runtime, or torch's CUDA libraries, among its libraries) has the GPU
    # driver loaded, needed or not: read where this machine has it, else unknown (it may
    # define whatever a blob that records no DT_NEEDED for it imports, cuLaunchKernel...).
    if any(search.CUDA_RUNTIME_LIBRARY.fullmatch(n) for n in known) and "libcuda.so.1" not in machine_named:
        driver = finder.find("libcuda.so.1", search.Needer(None, header=header))
        linked_driver = (
            machine_library(driver.path, "libcuda.so.1") if driver.path is not None and driver.how in (search.SYSTEM, search.FILE) else None
        )
        machine.append(linked_driver or Linked("libcuda.so.1", SYSTEM, frozenset(), unseen=("libcuda.so.1",)))
    # The closures of what was read last (libc's dynamic linker, the references' needs).
    while todo:
        lib, _, _ = todo.pop(0)
        if lib.linked is None or id(lib.linked) not in needs:
            continue
        needer, needed, _ = needs[id(lib.linked)]
        for name in needed:
            if name in known:
                continue
            where = finder.find(name, needer)
            known.add(name)
            if where.path is not None and where.how in (search.SYSTEM, search.FILE):
                real = os.path.realpath(where.path)
                if real in checked or real in references:
                    continue
                dep_linked = machine_library(real, name)
                if dep_linked is not None and dep_linked not in found:
                    found.append(dep_linked)
            elif where.how == search.UNSEEN:
                unseen_of.setdefault(id(lib.linked), []).append(name)
    # A machine library that needs one this machine lacks says so (nothing beside it is judged).
    marked: dict[int, Linked] = {}

    def mark(linked: Linked) -> Linked:
        if id(linked) not in unseen_of:
            return linked
        if id(linked) not in marked:
            marked[id(linked)] = dataclasses.replace(linked, unseen=tuple(unseen_of[id(linked)]))
        return marked[id(linked)]

    return Dependencies(
        tuple(mark(d) if d.role == SYSTEM else d for d in found), tuple(of_shims), missing, tuple(unseen), aliases,
        unseen_of, tuple(mark(m) for m in machine), tuple(images),
    )  # fmt: skip


def _shim_names_only(lib: Library) -> Library:
    """A dependency as the export rules see it: only its shim-ABI exports count (libcudart's
    cuda* names are no collision of the shims')."""
    exports = {n: lib.exports[n] for n in lib.exports if prefix_rules.may_be_shim_name(n) and prefix_rules.is_shim_name(n)}
    return dataclasses.replace(lib, exports=exports, imports={})


def _with_needs(libs: list[Library], deps: Dependencies) -> list[Library]:
    """The libraries with what the search said of their DT_NEEDED entries: the names found
    nowhere or not on this machine, and the paths by which others need them."""
    out = []
    for lib in libs:
        linked = lib.linked
        if linked is not None and (id(linked) in deps.missing or id(linked) in deps.aliases or id(linked) in deps.unseen_of):
            linked = dataclasses.replace(
                linked, missing=tuple(deps.missing.get(id(linked), ())), names=linked.names | deps.aliases.get(id(linked), set()),
                unseen=tuple(deps.unseen_of.get(id(linked), ())),
            )  # fmt: skip
            lib = dataclasses.replace(lib, linked=linked)
        out.append(lib)
    return out


def _hosts(arts: list[Artifact], libs: list[Library], settings: CheckSettings) -> list[Library]:
    """Marks the programs the user named (a file given, not a wheel's member nor one a folder
    holds) as the program hosting the blobs; any other program is a process of its own."""
    named = {os.path.realpath(x) for x in (*settings.shims, *settings.models) if os.path.isfile(x)}
    inside = tuple(os.path.join(os.path.abspath(r), "") for r in settings.wheel_roots)
    return [
        dataclasses.replace(lib, hosts=True)
        if lib.executable and art.wheel is None and os.path.realpath(art.path) in named and not os.path.abspath(art.path).startswith(inside)
        else lib
        for art, lib in zip(arts, libs)
    ]


def _named_from(arts: list[Artifact], root: str | None) -> list[Artifact]:
    if root is None:
        return arts
    inside = os.path.join(os.path.abspath(root), "")
    return [
        dataclasses.replace(a, display=os.path.relpath(a.path, root)) if os.path.abspath(a.path).startswith(inside) else a
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
    inside = [name for name, _ in ignored if any(name == g or name.startswith((g.rstrip("/") + "/", g + "!")) for g in given)]
    if not inside:
        return f"{flag} {' '.join(given)}: no ELF file found"
    programs = [name for name, kind in ignored if kind == "executable" and name in inside]
    if len(programs) == len(inside):
        what = f"only programs ({len(programs)}, e.g. {programs[0]})"
    else:
        what = f"only programs or objects ({len(inside)}, e.g. {inside[0]})"
    return f"{flag} {' '.join(given)}: holds {what}, no shared library; {flag} takes shared libraries (.so), folders or wheels holding them"


@contextmanager
def checking(settings: CheckSettings) -> Iterator[CheckRun]:
    """Read the inputs and references, decide the prefix; the references stay open (and
    wheel members on disk) until the block ends, so findings can stream to the output."""
    if not settings.shims and not settings.models:
        raise UsageError("nothing to check: give --shim and/or --model inputs")
    library_folders(settings.library_path, "--library-path")
    sups: tuple[Suppression, ...] = ()
    if settings.suppressions:
        sups = suppression_file.load(settings.suppressions, RULES_BY_ID)
    if settings.inline_suppressions:
        sups = sups + suppression_file.parse(settings.inline_suppressions, "pyproject.toml", RULES_BY_ID)
    with Workspace() as ws:
        shim_arts = _named_from(collect(settings.shims, ws, member_limit=settings.member_limit), settings.display_root)
        model_arts = _named_from(collect(settings.models, ws, member_limit=settings.member_limit), settings.display_root)
        needs: _Needs = {}
        shims = [_read(a, "shim", needs, settings.wheel_roots) for a in shim_arts]
        models = [_read(a, "model", needs, settings.wheel_roots) for a in model_arts]
        shims, models = _hosts(shim_arts, shims, settings), _hosts(model_arts, models, settings)
        ignored = tuple(ws.ignored)
        if settings.shims and not shims:
            raise UsageError(_nothing_found("--shim", settings.shims, ignored))
        if settings.models and not models:
            raise UsageError(_nothing_found("--model", settings.models, ignored))
        inferred_from = ""
        # Only shim-ABI names can carry a prefix.
        shim_names = [n for lib in shims for n in lib.marked_exports]
        if settings.prefix is not None:
            prefix, source = prefix_rules.validate(settings.prefix), "given"
        else:
            inferred, inferred_from = prefix_rules.infer(shim_names), "shims"
            if inferred is None and not shims:
                inferred, inferred_from = (
                    prefix_rules.infer(n for lib in models for n in lib.imports if prefix_rules.is_shim_name(n)),
                    "models",
                )
            prefix, source = inferred, ("inferred" if inferred else "none")
        checked = frozenset(os.path.realpath(a.path) for a in (*shim_arts, *model_arts))
        sources: list[AgainstSource] = []
        refs = open_references(
            settings.against, ws, torch_search_paths=settings.torch_search_paths, exclude=checked, sources=sources
        )
        known = {n for lib in (*shims, *models) if lib.linked is not None for n in lib.linked.names}
        known.update(os.path.basename(r.display.split("!")[-1]) for r in refs)
        known.update(n for r in refs for n in (getattr(r, "soname", None),) if n)
        # Checked files by real path, and streamed wheel members by the name the check gives them.
        by_file = {
            (a.display if a.wheel is not None else os.path.realpath(a.path)): id(lib.linked)
            for a, lib in (*zip(shim_arts, shims), *zip(model_arts, models))
        }
        ref_files = frozenset(os.path.realpath(r.path) for r in refs if isinstance(r, ElfImage))
        ref_images = tuple(r for r in refs if isinstance(r, ElfImage))
        try:
            deps = _dependencies(
                [*zip(shim_arts, shims), *zip(model_arts, models)], needs, known, by_file, ref_files, settings, ref_images
            )
        except BaseException:
            close_all(refs)
            raise
        shims, models = _with_needs(shims, deps), _with_needs(models, deps)
        linked_deps = tuple(
            dataclasses.replace(d, missing=tuple(deps.missing.get(id(d), ())), unseen=tuple(deps.unseen_of.get(id(d), ())))
            if id(d) in deps.missing or (d.role == DEPENDENCY and id(d) in deps.unseen_of)
            else d
            for d in deps.linked
        )
        try:
            ctx = Context(
                prefix=prefix,
                shims=shims,
                models=models,
                references=refs,
                prefix_source=source,
                shim_prefixes=frozenset(prefix_rules.carried(shim_names)),
                dependencies=linked_deps,
                shim_dependencies=deps.of_shims,
                unseen=deps.unseen,
                machine=deps.machine,
            )
            skipped = []
            if not settings.against:
                skipped.append(("COLLISION", "no --against reference given"))
            if not shims:
                skipped.append(("UNSATISFIED_IMPORT", "needs --shim libraries"))
            header = Header(
                prefix=prefix,
                prefix_source=source,
                artifacts=tuple(CheckedArtifact(lib.display, lib.role) for lib in (*shims, *models)),
                references=tuple(r.display for r in refs),
                skipped_rules=tuple(skipped),
                prefix_inferred_from=inferred_from if source == "inferred" else "",
                against=tuple(sources),
                ignored=ignored,
            )
            yield CheckRun(header, ctx, sups)
        finally:
            close_all(refs)
            for image in deps.images:
                image.close()


def run_check(settings: CheckSettings) -> Report:
    """The whole report, findings in memory (the command streams them instead)."""
    with checking(settings) as run:
        findings = tuple(run.findings())
    return assemble(run.header, findings, run.tally)
