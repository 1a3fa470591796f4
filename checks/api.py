"""Run the checker: read the inputs, decide the prefix, evaluate the rules."""

from __future__ import annotations

import dataclasses
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from aoti_shim.checks import prefix as prefix_rules
from aoti_shim.checks import suppressions as suppression_file
from aoti_shim.checks.bindings import DEPENDENCY, Linked
from aoti_shim.checks.elf import ElfImage
from aoti_shim.checks.inputs import DEFAULT_MEMBER_LIMIT, Artifact, Workspace, collect
from aoti_shim.checks.references import close_all, open_references
from aoti_shim.checks.report import AgainstSource, CheckedArtifact, Finding, FindingBatch, Header, Report, Tally, assemble, findings_of
from aoti_shim.checks.rules import RULES_BY_ID, Context, Library, evaluate
from aoti_shim.checks.suppressions import Suppression
from aoti_shim.errors import UsageError


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


def _identity(art: Artifact) -> object:
    """What makes two inputs one library: the file, or the wheel member (each is a fresh temp copy)."""
    if art.path != art.display:
        return art.display
    try:
        st = os.stat(art.path)
    except OSError:
        return art.path
    return st.st_dev, st.st_ino


def _read(art: Artifact, role: str) -> Library:
    identity = _identity(art)
    executable = art.kind == "executable"
    with art.open() as image:
        if not image.has_dynsym:
            return Library(display=art.display, role=role, exports={}, imports={}, identity=identity, executable=executable)
        # The tables hold packed ints, not the mapping: they outlive the image.
        exports, imports = image.exports(), image.imports()
        # The loader's view for the binding model: only shim-ABI imports are asked about, and
        # the relocation tables (which say which bind lazily) are read only for a library that
        # has some (libtorch_cpu's .rela.dyn is megabytes, its shim-ABI imports none).
        shim_imports = any(prefix_rules.is_shim_name(n) for n in imports)
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
            import_filter=prefix_rules.is_shim_name,
            lazy=image.lazy_symbol_indexes() if shim_imports else frozenset(),
            local_references=image.local_references(),
            unseen=image.unseen_definitions(exports, (n for n in exports if prefix_rules.is_shim_name(n))),
        )
        # A program's copies of shim data (R_*_COPY) are the one instance, not a definition of its own.
        at = image.copy_relocated_indexes() if executable else frozenset()
        copied = frozenset(n for n in exports if exports.entry(n, image.versions()).index in at) if at else frozenset()
        return Library(
            display=art.display, role=role, exports=exports, imports=imports, identity=identity, linked=linked,
            executable=executable, copied=copied,
        )  # fmt: skip


def _dependencies(pairs: list[tuple[Artifact, Library]], known: set[str], checked: frozenset[str]) -> list[Linked]:
    """The libraries the checked ones' DT_NEEDED entries name that no input provides, found
    where their DT_RUNPATH / DT_RPATH sends the loader ($ORIGIN expanded), breadth first.

    A shim's dependency joins the global scope with it, a blob's its local scope: one that
    defines a shim name can take a blob's import ahead of the shims, so it must be in the
    process the rules judge. Only folders the file itself names are searched (the system's
    are the deployment's; libc and the C++ runtime define no shim names)."""
    found: list[Linked] = []
    seen = set(checked)
    todo = [(a.path, a.open) for a, lib in pairs if a.image is None and lib.linked is not None]
    while todo:
        path, opener = todo.pop(0)
        with opener() as image:
            if not image.has_dynsym:
                continue
            origin = os.path.dirname(os.path.realpath(path))
            folders = [d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin) for d in image.runpath]
            wanted = [n for n in (*image.needed, *image.filtees) if n not in known and "/" not in n]
        for name in wanted:
            for folder in folders:
                candidate = os.path.realpath(os.path.join(folder, name))
                if not os.path.isfile(candidate):
                    continue
                known.add(name)
                if candidate not in seen:
                    seen.add(candidate)
                    dep = _read(Artifact(candidate, candidate), "model").linked
                    if dep is not None:
                        found.append(dataclasses.replace(dep, role=DEPENDENCY))
                        known.update(dep.names)
                        todo.append((candidate, lambda c=candidate: ElfImage(c, display=c)))
                break
    return found


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


@contextmanager
def checking(settings: CheckSettings) -> Iterator[CheckRun]:
    """Read the inputs and references, decide the prefix; the references stay open (and
    wheel members on disk) until the block ends, so findings can stream to the output."""
    if not settings.shims and not settings.models:
        raise UsageError("nothing to check: give --shim and/or --model inputs")
    sups: tuple[Suppression, ...] = ()
    if settings.suppressions:
        sups = suppression_file.load(settings.suppressions, RULES_BY_ID)
    if settings.inline_suppressions:
        sups = sups + suppression_file.parse(settings.inline_suppressions, "pyproject.toml", RULES_BY_ID)
    with Workspace() as ws:
        shim_arts = _named_from(collect(settings.shims, ws, member_limit=settings.member_limit), settings.display_root)
        model_arts = _named_from(collect(settings.models, ws, member_limit=settings.member_limit), settings.display_root)
        shims = [_read(a, "shim") for a in shim_arts]
        models = [_read(a, "model") for a in model_arts]
        ignored = tuple(ws.ignored)
        if settings.shims and not shims:
            raise UsageError(f"--shim {' '.join(settings.shims)}: no ELF file found")
        if settings.models and not models:
            raise UsageError(f"--model {' '.join(settings.models)}: no ELF file found")
        inferred_from = ""
        # Only names holding the marker can carry a prefix: a cheap filter before the regexes.
        mark = prefix_rules.SHIM_MARK
        shim_names = [n for lib in shims for n in lib.marked_exports]
        if settings.prefix is not None:
            prefix, source = prefix_rules.validate(settings.prefix), "given"
        else:
            inferred, inferred_from = prefix_rules.infer(shim_names), "shims"
            if inferred is None and not shims:
                inferred, inferred_from = (
                    prefix_rules.infer(n for lib in models for n in lib.imports if mark in n),
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
        dependencies = _dependencies([*zip(shim_arts, shims), *zip(model_arts, models)], known, checked)
        try:
            ctx = Context(
                prefix=prefix,
                shims=shims,
                models=models,
                references=refs,
                prefix_source=source,
                shim_prefixes=frozenset(prefix_rules.carried(shim_names)),
                dependencies=tuple(dependencies),
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


def run_check(settings: CheckSettings) -> Report:
    """The whole report, findings in memory (the command streams them instead)."""
    with checking(settings) as run:
        findings = tuple(run.findings())
    return assemble(run.header, findings, run.tally)
