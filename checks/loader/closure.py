"""The process's DT_NEEDED closure, walked as ld.so maps it (issue 34 §1).

Each checked library in load order (the shims first) with its closure breadth first, as
dlopen maps it; then what every process has: libc (and its dynamic linker), the
references' own dependencies, the GPU driver of a CUDA process; then their closures. One
loop walks every library. Where each DT_NEEDED entry leads is :mod:`search`'s answer. A name
a loaded library already has is that library, as for the loader: a checked library's
DT_SONAME (it was opened by its path, never by its file's name), a reference's soname or
file name (torch's own DT_NEEDED entries opened it), a found library's soname and the names
it was needed by; any other name is searched for, and a file the search finds that is loaded
already is that library.

State is keyed by a library's identity (its real path, or a streamed wheel member's name
as the check gives it), never by ``id()``: a ``Linked`` copied by ``dataclasses.replace``
is still the same library. The answer is a tree of dataclasses: each library with its
edges (the name, the search's answer, the library it led to).
"""

from __future__ import annotations

import dataclasses
import os
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.loader import search
from aoti_shim.checks.loader.bindings import DEPENDENCY, SYSTEM, Linked
from aoti_shim.errors import InputError

# A library's identity: its real path, or a streamed wheel member's display name.
Key = str
# What each kind of node is in the process.
CHECKED, DEPENDENCY_NODE, MACHINE = "checked", "dependency", "machine"


@dataclass(frozen=True)
class Needs:
    """What the search needs of a library: where it is, and the names it needs in order
    (DT_NEEDED, then DT_FILTER, then DT_AUXILIARY: glibc ignores an auxiliary filtee it
    cannot find)."""

    needer: search.Needer
    names: tuple[str, ...]
    optional: frozenset[str] = frozenset()
    # Its DT_SONAME: a need by that name is this library once it is loaded (glibc matches a
    # loaded library by its soname or the names it was opened by, never by its file's name).
    soname: str | None = None


@dataclass(frozen=True)
class Root:
    """A checked library, in load order."""

    key: Key
    linked: Linked
    needs: Needs | None  # None: no dynamic section, it needs nothing
    shim: bool
    # The program hosting the blobs: its DT_RPATH serves every library without DT_RUNPATH.
    program: bool = False


@dataclass(frozen=True)
class Edge:
    """One DT_NEEDED entry: what the search answered, and the library it is (None for a
    reference, or a name found nowhere or not on this machine)."""

    name: str
    found: search.Found
    target: Key | None = None


@dataclass(frozen=True)
class Node:
    """A library of the process with its needs, as the walk found them."""

    key: Key
    linked: Linked
    kind: str  # CHECKED, DEPENDENCY_NODE or MACHINE
    edges: tuple[Edge, ...] = ()
    # Reached from a shim's closure (global with it).
    from_shim: bool = False
    # Its DT_NEEDED names the loader finds nowhere, each with what was searched.
    missing: tuple[tuple[str, str], ...] = ()
    # Its DT_NEEDED names this machine lacks (a deployment has them).
    unseen: tuple[str, ...] = ()
    # Other names others need it by (a DT_NEEDED path that is its file).
    aliases: frozenset[str] = frozenset()
    # Its auxiliary filtees that do not load: not searched before it at all.
    unloaded_filtees: frozenset[str] = frozenset()

    def said_of(self, linked: Linked) -> Linked:
        """``linked`` (this library, or another copy of its file) with what the search said of its needs."""
        if self.kind == MACHINE:
            # A machine library that needs one this machine lacks says so (nothing beside it is judged).
            return dataclasses.replace(linked, unseen=self.unseen) if self.unseen else linked
        if self.unloaded_filtees:
            # The binding model finds a filtee by name: one that did not load must not be found
            # in another library of that name (the differential's folder-shadowed dep0).
            kept = tuple(n for n in linked.filtees if n not in self.unloaded_filtees)
            linked = dataclasses.replace(linked, filtees=kept)
        if not (self.missing or self.unseen or self.aliases):
            return linked
        return dataclasses.replace(linked, missing=self.missing, names=linked.names | self.aliases, unseen=self.unseen)


@dataclass(frozen=True)
class Closure:
    """The walk's answer."""

    # Every library reached, checked ones first-reached order.
    nodes: Mapping[Key, Node]
    # Libraries found in the deployment's folders and the machine's, in the order reached.
    found: tuple[Linked, ...]
    # (library, name, why) of names this machine lacks but a deployment has.
    unseen: tuple[tuple[str, str, str], ...]
    # The process's own libraries, global before everything (libc, the references' needs).
    machine: tuple[Linked, ...]
    # The machine's libraries read for their exports, open until the check ends.
    images: tuple[ElfImage, ...]
    # The facts of this machine's loader (search.FACTS) that decided where a need of a
    # checked library or of a library found in the deployment's folders was found (or that it
    # was found nowhere), and the process's libc (this machine's): a report says them, the
    # deployment may differ.
    facts_used: frozenset[str] = frozenset()
    libc: str | None = None

    def linked(self, key: Key) -> Linked | None:
        node = self.nodes.get(key)
        return node.linked if node is not None else None


@dataclass(frozen=True)
class Process:
    """The process-wide facts the walk starts from."""

    # Names the libraries loaded before the checked ones have (the references').
    known: frozenset[str]
    # Every checked file's key (one without a dynamic section too: it needs nothing).
    checked: frozenset[Key] = frozenset()
    # The references' real paths, and their images (their own needs join the process).
    references: frozenset[str] = frozenset()
    reference_images: tuple[ElfImage, ...] = ()
    # (ELF class, big-endian, machine) of the process, for libc's search.
    header: tuple[int, bool, int] | None = None
    # The fix a missing dependency's message names.
    fix: str = ""


# Reads a library found in the deployment's folders (the path it is opened by, and its key,
# the real path): its Linked and needs, or None (no dynamic section).
Reader = Callable[[str, Key], "tuple[Linked, Needs] | None"]


def searched(needer: search.Needer, fix: str, paths: search.SearchPaths) -> str:
    """Where the loader looked, in its order, naming LD_LIBRARY_PATH and --library-path only
    when they are set."""
    where = [f"its RPATH {':'.join(needer.rpath)}"] if needer.rpath else []
    where += ["LD_LIBRARY_PATH"] if paths.env else []
    where += [f"its RUNPATH {':'.join(needer.runpath)}"] if needer.runpath else []
    where += ["the checked libraries", "the ld.so cache", "the system folders"]
    where += ["--library-path"] if paths.library_path else []
    listed = f"{', '.join(where[:-1])} and {where[-1]}"
    return f"which the loader finds nowhere (searched {listed}: {fix})"


def unloadable(found: search.Found) -> str:
    return (f"which the loader cannot load: the first file by that name it finds, {found.path}: {found.why} (the "
        "search stops there)")


class Walk:
    """One walk of a process's closure: ``Walk(finder, process, read).run(roots)``."""

    def __init__(self, finder: search.Search, process: Process, read: Reader) -> None:
        self._finder = finder
        self._process = process
        self._read = read
        self._known = set(process.known)
        self._linked: dict[Key, Linked] = {}
        self._kind: dict[Key, str] = {}
        self._needs: dict[Key, Needs] = {}
        self._edges: dict[Key, list[Edge]] = {}
        self._from_shim: dict[Key, bool] = {}
        self._missing: dict[Key, list[tuple[str, str]]] = {}
        self._unloaded_filtees: dict[Key, set[str]] = {}
        self._unseen_of: dict[Key, list[str]] = {}
        self._aliases: dict[Key, set[str]] = {}
        self._unseen: list[tuple[str, str, str]] = []
        self._found: list[Key] = []
        self._unreadable: set[Key] = set()  # found, no dynamic section
        self._named: dict[str, Key] = {}  # the machine's libraries by each of their names
        self._machine: list[Key | Linked] = []
        self._images: list[ElfImage] = []
        # (library, the needers that brought it in nearest first, reached from a shim?)
        self._queue: deque[tuple[Key, tuple[search.Needer, ...], bool]] = deque()
        self._program: search.Needer | None = None
        self._facts_used: set[str] = set()
        self._libc: str | None = None

    def run(self, roots: Sequence[Root]) -> Closure:
        self._program = next((r.needs.needer for r in roots if r.program and r.needs is not None), None)
        # The program is there before anything; every other checked library from when it loads
        # (a need by its soname before then is searched for, as the loader searches).
        self._known.update(r.needs.soname for r in roots if r.program and r.needs is not None and r.needs.soname)
        for root in roots:
            self._linked[root.key] = root.linked
            self._kind[root.key] = CHECKED
            if root.needs is not None:
                self._needs[root.key] = root.needs
                if root.needs.soname:
                    self._known.add(root.needs.soname)
            self._queue.append((root.key, (), root.shim))
            self._drain()
        self._every_process_has()
        self._drain()
        return self._closure()

    def _drain(self) -> None:
        while self._queue:
            key, loaders, from_shim = self._queue.popleft()
            self._from_shim.setdefault(key, from_shim)
            needs = self._needs.get(key)
            if needs is not None:
                for name in needs.names:
                    if name not in self._known:
                        self._need(key, name, needs, loaders, from_shim)

    def _need(self, key: Key, name: str, needs: Needs, loaders: tuple[search.Needer, ...], from_shim: bool) -> None:
        """One DT_NEEDED entry of ``key``, looked up and followed."""
        system = self._linked[key].role == SYSTEM
        # The loader takes a file of its own class and machine, whatever the needer's: a foreign
        # library's needs are looked up as the process's (it does not load either way).
        needer, header = needs.needer, self._process.header
        if header is not None and needer.header is not None and needer.header != header:
            needer = needer._replace(header=header)
        where = self._finder.find(name, needer, loaders, self._program)
        if not system and not search.GLIBC_LIBRARY.fullmatch(name):
            # (The machine's own libraries' needs are the machine's either way; glibc's own
            # libraries, which nearly every library needs, are the libc fact.)
            self._facts_used.update(where.facts)
        edges = self._edges.setdefault(key, [])
        if where.how == search.UNSEEN:
            self._unseen_of.setdefault(key, []).append(name)
            if not system:
                self._unseen.append((self._linked[key].display, name, where.via))
        elif where.how in (search.MISSING, search.FAILED) and system:
            pass  # the machine's own: not judged
        elif where.how in (search.MISSING, search.FAILED) and name in needs.optional:
            # An auxiliary filtee that does not load: glibc uses the filter's own definitions.
            self._unloaded_filtees.setdefault(key, set()).add(name)
        elif where.how == search.MISSING:
            why = searched(needs.needer, self._process.fix, self._finder.paths)
            self._missing.setdefault(key, []).append((name, why))
        elif where.how == search.FAILED:
            self._missing.setdefault(key, []).append((name, unloadable(where)))
        else:
            target = self._follow(name, where, system, (needs.needer, *loaders), from_shim)
            edges.append(Edge(name, where, target))
            return
        edges.append(Edge(name, where))

    def _follow(
        self, name: str, where: search.Found, system: bool, loaders: tuple[search.Needer, ...], from_shim: bool
    ) -> Key | None:
        """The library a found name is: a checked one, a reference, the machine's, or one
        read from the deployment's folders (its closure queued)."""
        checked_keys = self._process.checked
        checked = where.path if where.path is not None and where.path in checked_keys else None
        real = os.path.realpath(where.path or "")
        if checked is None and real in checked_keys:
            checked = real
        if checked is not None:
            self._aliases.setdefault(checked, set()).add(name)
            self._known.add(name)
            return checked
        if real in self._process.references:
            self._known.add(name)
            return None
        if where.how == search.SYSTEM or system:
            # The machine's own (libc, libstdc++): no shim names, its imports its own.
            self._known.add(name)
            if self._machine_library(real, name) is not None:
                self._known.update(self._linked[real].names)
                if real not in self._found:
                    self._found.append(real)
                return real
            return None
        if real not in self._linked and real not in self._unreadable:
            read = self._read(search.absolute(where.path or ""), real)
            if read is None:
                self._unreadable.add(real)
                return None
            linked, needs = read
            self._linked[real] = dataclasses.replace(linked, role=DEPENDENCY, names=linked.names | {name})
            if needs.soname:
                self._known.add(needs.soname)
            self._kind[real] = DEPENDENCY_NODE
            self._needs[real] = needs
            self._found.append(real)
            self._queue.append((real, loaders, from_shim))
        self._known.add(name)
        return real if real in self._linked else None

    def _machine_library(self, path: str, name: str) -> Key | None:
        """A library of the machine (or a reference's dependency), read once: its exports
        and needs; its own imports are not asked about."""
        real = os.path.realpath(path)
        if real in self._linked:  # one file is one library
            return real
        try:
            image = ElfImage(real)
        except InputError:
            return None  # unreadable: it defines nothing the check can tell
        self._images.append(image)
        linked = Linked.of_image(image, SYSTEM, imports=False)
        linked = dataclasses.replace(linked, names=linked.names | {name})
        self._linked[real] = linked
        self._kind[real] = MACHINE
        for n in linked.names:
            self._named.setdefault(n, real)
        if image.has_dynsym:
            rpath, runpath = image.search_paths
            needer = search.Needer(
                os.path.dirname(search.absolute(path)),
                rpath=rpath,
                runpath=runpath,
                nodeflib=image.nodeflib,
                header=(image.elf_class, image.big_endian, image.machine),
            )
            self._needs[real] = Needs(needer, tuple(image.needed))
            self._queue.append((real, (), False))
        return real

    def _every_process_has(self) -> None:
        """libc (and its dynamic linker), the references' own dependencies, the GPU driver
        of a CUDA process: global before everything."""
        header = self._process.header
        libc = self._finder.find("libc.so.6", search.Needer(None, header=header))
        if libc.how in (search.SYSTEM, search.FILE) and libc.path is not None:
            real = os.path.realpath(libc.path)
            if "libc.so.6" in self._known:
                host = real if self._kind.get(real) == MACHINE else None
            else:
                host = self._machine_library(real, "libc.so.6")
            if host is not None:
                self._machine.append(host)
                self._known.update(self._linked[host].names)
            self._libc = real
        for ref in self._process.reference_images:
            if ref.has_dynsym:
                self._references_needs(ref)
        # A CUDA process has the GPU driver loaded, needed or not: read where this machine has
        # it, else unknown (it may define whatever a blob that records no DT_NEEDED for it
        # imports, cuLaunchKernel...).
        if any(search.CUDA_RUNTIME_LIBRARY.fullmatch(n) for n in self._known) and "libcuda.so.1" not in self._named:
            driver = self._finder.find("libcuda.so.1", search.Needer(None, header=header))
            found = driver.path is not None and driver.how in (search.SYSTEM, search.FILE)
            key = self._machine_library(driver.path, "libcuda.so.1") if found and driver.path is not None else None
            if key is None:
                self._machine.append(Linked("libcuda.so.1", SYSTEM, frozenset(), unseen=("libcuda.so.1",)))
            elif self._kind[key] == MACHINE:  # (one the checked libraries need loads as their dependency)
                self._machine.append(key)

    def _references_needs(self, ref: ElfImage) -> None:
        """A reference's own dependencies load global with it: what they define counts as
        bound. One this machine lacks stands in as unknown (it may define anything)."""
        rpath, runpath = ref.search_paths
        needer = search.Needer(os.path.dirname(os.path.realpath(ref.path)), rpath=rpath, runpath=runpath,
                               nodeflib=ref.nodeflib, header=(ref.elf_class, ref.big_endian, ref.machine))
        for name in ref.needed:
            if name in self._named:  # a checked library's need too: global with the references
                if self._named[name] not in self._machine:
                    self._machine.append(self._named[name])
                continue
            if name in self._known:
                continue
            where = self._finder.find(name, needer)
            real = os.path.realpath(where.path) if where.path else None
            if real is not None and real in self._process.references:
                continue
            key = (
                self._machine_library(real, name)
                if real is not None and where.how in (search.SYSTEM, search.FILE)
                else None
            )
            if key is not None and self._kind[key] != MACHINE:
                continue  # a checked library or a dependency: it loads as that
            if key is not None:
                self._known.update(self._linked[key].names)
            self._known.add(name)
            self._machine.append(key if key is not None else Linked(name, SYSTEM, frozenset(), unseen=(name,)))

    def _closure(self) -> Closure:
        nodes = {}
        for key, linked in self._linked.items():
            node = Node(
                key,
                linked,
                self._kind[key],
                tuple(self._edges.get(key, ())),
                self._from_shim.get(key, False),
                tuple(self._missing.get(key, ())),
                tuple(self._unseen_of.get(key, ())),
                frozenset(self._aliases.get(key, ())),
                frozenset(self._unloaded_filtees.get(key, ())),
            )
            said = node.said_of(linked)
            nodes[key] = node if said is linked else dataclasses.replace(node, linked=said)
        return Closure(
            nodes=nodes,
            found=tuple(nodes[k].linked for k in self._found),
            unseen=tuple(self._unseen),
            machine=tuple(m if isinstance(m, Linked) else nodes[m].linked for m in self._machine),
            images=tuple(self._images),
            facts_used=frozenset(self._facts_used) | ({search.LIBC_FACT} if self._libc else frozenset()),
            libc=self._libc,
        )


def process_header(headers: Iterable[tuple[int, bool, int] | None]) -> tuple[int, bool, int] | None:
    """The first known header: the process's machine."""
    return next((h for h in headers if h), None)
