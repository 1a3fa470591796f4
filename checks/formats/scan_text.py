"""``scan``'s text report, for people: the verdict, then the findings grouped by the
distribution that causes them, each class with what to do, then the providers table; the
environment's listing only with ``-v``.

Paths are shortened to the distribution and its member (a wheel's ``/long/path.whl!member``
reads ``member`` under its distribution's name; an editable install's file, or one no
distribution lists, reads relative to the scanned folder holding it) and lines wrap to the
terminal's width.
The other formats keep every full path; this one is for reading at a glance.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from aoti_shim.checks.formats.escape import printable
from aoti_shim.checks.formats.layout import plural, terminal_width, wrap, wrap_list
from aoti_shim.checks.report.model import BLOCKING, Finding
from aoti_shim.checks.scan.judge import NOBODY, Hijack, LibraryFacts, NativeFacts
from aoti_shim.checks.scan.run import ScanReport

_RED, _YELLOW, _GREEN, _RESET = "\033[31m", "\033[33m", "\033[32m", "\033[0m"
# Findings shown per library and rule (the machine formats list them all).
SAMPLE = 5
HIJACK = "HIJACK"

# What to do about each finding class but HIJACK (whose advice names its distributions).
ADVICE = {
    "COLLISION": "fix: give each runtime's shims a private prefix of its own (aoti-shim builds them so), "
    "or keep the two distributions out of one process",
    "PREFIX_CLASH": "fix: rebuild one of the runtimes with a prefix no other runtime uses "
    "(tool.aoti-shim.prefix, or aoti_shim_prefix(... PREFIX p_))",
    "UNPREFIXED_PROVIDER": "fix: rebuild its shims with a private prefix (aoti-shim's rename header, "
    "aoti_shim_prefix() or the aoti_shim.build backend)",
    "RUNTIME_COLLISION": "fix: stop re-exporting the runtime (link it as a shared library, or hide "
    "its symbols: -Wl,--exclude-libs,ALL), or keep the two out of one process",
    "DLL_COLLISION": "fix: name each runtime's shim DLL after the runtime (myrt_aoti_shims.dll), or keep the two "
    "out of one process",
}


def short(display: str, folders: Sequence[str] = ()) -> str:
    """A library's name under its distribution: a wheel's member; a file read by its whole
    path (an editable install's, one no distribution lists) relative to the deepest scanned
    folder holding it (a site folder, or one a ``.pth`` or an editable finder adds), else its
    folder and name; else the path as read (relative to its site folder already)."""
    if ".whl!" in display:
        return display.rsplit("!", 1)[-1]
    if not display.startswith("/"):
        return display
    holding = [f for f in folders if display.startswith(f.rstrip("/") + "/")]
    if holding:
        return display[len(max(holding, key=len).rstrip("/")) + 1 :]
    return "/".join(display.rsplit("/", 2)[-2:])


def verdict(report: ScanReport) -> tuple[str, str]:
    summary = f"{report.blocking} blocking, {report.warnings} warning(s), {len(report.suppressed)} suppressed"
    if report.blocking:
        return f"FAILED: {summary}", _RED
    if report.warnings:
        return f"WARNINGS: {summary}", _YELLOW
    if not report.scanned.libraries and not report.scanned.native:
        # An OK over nothing read is no answer: say so in the verdict itself (issue 35).
        return f"OK: {summary}; nothing was judged: no shared library in what was scanned", _GREEN
    return f"OK: {summary}", _GREEN


@dataclass
class _Page:
    report: ScanReport
    width: int
    color: bool

    def __post_init__(self) -> None:
        self.lines: list[str] = []
        self.by_display = {lib.display: lib for lib in self.report.scanned.libraries}
        # Mach-O and PE libraries are no LibraryFacts (HIJACK and DLL_COLLISION name them): their owners only.
        self.native = {lib.display: lib for lib in self.report.scanned.native}
        self.dll_owners = {display: lib.owner for display, lib in self.native.items()}
        self.folders = tuple(os.path.normpath(f) for f in self.report.scanned.site_folders)

    def paint(self, text: str, code: str) -> str:
        return f"{code}{text}{_RESET}" if self.color else text

    def add(self, text: str, indent: str = "", hanging: str | None = None) -> None:
        self.lines += wrap(text, self.width, indent, hanging)

    def owner(self, display: str) -> str:
        lib = self.by_display.get(display)
        return lib.owner if lib is not None else self.dll_owners.get(display, NOBODY)

    def is_torch(self, display: str | None) -> bool:
        lib = self.by_display.get(display or "")
        return lib is not None and lib.is_torch

    def name(self, display: str) -> str:
        """A library as the text names it: its member, its distribution said elsewhere."""
        return printable(short(display, self.folders))

    def shorten(self, message: str) -> str:
        """A finding's message with every library's full path shortened."""
        message = printable(message)
        for display in self.by_display:
            shown = printable(display)
            if shown in message:
                message = message.replace(shown, self.name(display))
        return message


# -- the findings ---------------------------------------------------------------------------


def _causes(report: ScanReport, page: _Page) -> dict[str, dict[str, list[Finding]]]:
    """Findings by the distribution that causes them (the flagged library's), then by rule;
    distributions with a blocking finding first."""
    groups: dict[str, dict[str, list[Finding]]] = {}
    for x in report.findings:
        owner = page.owner(x.artifact)
        key = owner if owner != NOBODY else f"{NOBODY} {x.artifact}"
        groups.setdefault(key, {}).setdefault(x.rule, []).append(x)
    blocking = [k for k, rules in groups.items() if any(f.severity == BLOCKING for fs in rules.values() for f in fs)]
    return {k: groups[k] for k in (*blocking, *(k for k in groups if k not in blocking))}


def _head(page: _Page, rule: str, found: Sequence[Finding], what: str) -> None:
    severity = found[0].severity
    count = plural(len(found), "warning") if severity != BLOCKING else f"{len(found)} blocking"
    code = _RED if severity == BLOCKING else _YELLOW
    lines = wrap(f"{rule} ({count}): {what}", page.width)
    page.lines += [page.paint(lines[0], code), *lines[1:]]


def _hijack(page: _Page, cause: str, found: Sequence[Finding]) -> None:
    """One block per hijacking distribution: its libraries, what each captures, when, the fix."""
    counts = {(h.provider, h.consumer): h for h in page.report.hijacks}
    by_provider: dict[str, list[Hijack]] = {}
    for x in found:
        h = counts.get((x.artifact, x.related or ""))
        if h is not None:
            by_provider.setdefault(x.artifact, []).append(h)
    who = printable(cause)
    _head(page, HIJACK, found, f"{who} captures stable-ABI imports")
    libraries = plural(len(by_provider), "library", "libraries")
    page.add(f"it ships libtorch's shim names unprefixed, in {libraries}; the imports each captures:", "  ")
    captured: list[str] = []
    for provider, hijacks in by_provider.items():
        page.add(f"{page.name(provider)} ({plural(hijacks[0].names, 'name')}):", "  ", "      ")
        by_owner: dict[str, list[Hijack]] = {}
        for h in hijacks:
            by_owner.setdefault(page.owner(h.consumer), []).append(h)
        for owner, hs in by_owner.items():
            items = [f"{page.name(h.consumer)} ({h.imports})" for h in hs]
            page.lines += wrap_list(f"{printable(owner)}:", items, page.width, "    ", "      ")
            if owner not in captured:
                captured.append(owner)
    page.add(
        f"when: {who}'s shims are loaded RTLD_GLOBAL, or with their dependencies promoted to the global scope, "
        "before libtorch: the imports above then run against its tensors, not libtorch's", "  ", "        ")
    others = ", ".join(_owner_words(o) for o in captured) or "these consumers"
    page.add(
        f"fix: {who} ships unprefixed shims: have its runtime rebuilt with a private prefix (aoti-shim is the "
        f"tool: its rename header, aoti_shim_prefix() or the aoti_shim.build backend), or keep it and {others} "
        "out of one process", "  ", "       ")


def _owner_words(owner: str) -> str:
    """A distribution in running text; the libraries no distribution owns, as words."""
    return "the libraries outside any distribution" if owner == NOBODY else printable(owner)


def _owner_tag(owner: str) -> str:
    """A distribution in brackets after a library: NOBODY is bracketed already."""
    return "outside any distribution" if owner == NOBODY else printable(owner)


def _same_cause(page: _Page, rule: str, found: Sequence[Finding], what: str) -> None:
    """Findings about the libraries a HIJACK names, from the same unprefixed names: one
    line, the same fix."""
    _head(page, rule, found, f"{what}; the same cause, the same fix")


def _collision_advice(page: _Page, pairs: Sequence[tuple[str, str]]) -> str:
    """ADVICE's, unless a library of a pair is outside any distribution: then "the two
    distributions" is no pair there is, and the libraries are named instead."""
    if not any(NOBODY in (page.owner(a), page.owner(b)) for a, b in pairs):
        return ADVICE["COLLISION"]
    if len(pairs) == 1:
        keep = f"{page.name(pairs[0][0])} and {page.name(pairs[0][1])}"
    else:
        keep = "the two libraries of each pair above"
    return ADVICE["COLLISION"].replace("the two distributions", keep)


def _collision(page: _Page, found: Sequence[Finding]) -> list[tuple[str, str]]:
    """Each pair of libraries once, with the names both export; the pairs."""
    pairs: dict[tuple[str, str], list[str]] = {}
    for x in found:
        pairs.setdefault((x.artifact, x.related or ""), []).append(x.symbol)
    for (artifact, other), names in pairs.items():
        shown = [repr(printable(n)) for n in names[:SAMPLE]] + (
            [f"{len(names) - SAMPLE} more"] if len(names) > SAMPLE else []
        )
        head = (
            f"{page.name(artifact)} and {page.name(other)} ({_owner_tag(page.owner(other))}) both export "
            f"{plural(len(names), 'shim name')}:"
        )
        page.lines += wrap_list(head, shown, page.width, "  ", "    ")
    return list(pairs)


def _generic(page: _Page, rule: str, cause: str, found: Sequence[Finding]) -> None:
    _head(page, rule, found, printable(cause))
    if rule == "COLLISION":
        page.add(_collision_advice(page, _collision(page, found)), "  ", "       ")
        return
    by_library: dict[str, list[Finding]] = {}
    for x in found:
        by_library.setdefault(x.artifact, []).append(x)
    for artifact, xs in by_library.items():
        page.add(f"{page.name(artifact)}:", "  ", "    ")
        for x in xs[:SAMPLE]:
            page.add(page.shorten(x.message), "    ", "      ")
        if len(xs) > SAMPLE:
            page.add(f"... and {len(xs) - SAMPLE} more (--format json, sarif or junit lists them all)", "    ")
    if rule in ADVICE:
        page.add(ADVICE[rule], "  ", "       ")


def _findings(page: _Page) -> None:
    for cause, by_rule in _causes(page.report, page).items():
        page.lines.append("")
        shown_cause = cause if not cause.startswith(NOBODY + " ") else page.name(cause[len(NOBODY) + 1 :])
        for rule, found in by_rule.items():
            if rule == HIJACK:
                _hijack(page, shown_cause, found)
            elif rule == "UNPREFIXED_PROVIDER" and HIJACK in by_rule:
                names = sum(
                    len(lib.unprefixed_exports)
                    for lib in (page.by_display.get(a) or page.native.get(a) for a in {x.artifact for x in found})
                    if lib
                )
                _same_cause(page, rule, found, f"the same libraries export {plural(names, 'unprefixed shim name')}")
            elif rule == "COLLISION" and HIJACK in by_rule and all(page.is_torch(x.related) for x in found):
                _same_cause(
                    page, rule, found, f"the same libraries export {plural(len(found), 'name')} libtorch exports"
                )
            else:
                _generic(page, rule, shown_cause, found)


def _suppressions(page: _Page) -> None:
    report = page.report
    for sup in report.suppressed[:20]:
        x = sup.finding
        page.add(
            f"suppressed: {x.rule} {printable(x.symbol)} in {page.name(x.artifact)} ({printable(sup.reason)})", "", "  "
        )
    if len(report.suppressed) > 20:
        page.lines.append(f"suppressed: ... and {len(report.suppressed) - 20} more")
    for desc in report.unused_suppressions:
        page.add(f"unused suppression: {printable(desc)}", "", "  ")


# -- the tables -----------------------------------------------------------------------------


def prefix_text(prefix: str) -> str:
    return prefix if prefix else "(unprefixed)"


def _providers(page: _Page) -> None:
    rows = page.report.providers
    if not rows:
        page.lines.append("shim providers: none")
        return
    page.lines.append("shim providers:")
    table = [
        (printable(r.distribution), page.name(r.library), printable(prefix_text(r.prefix)), str(r.names)) for r in rows
    ]
    heads = ("distribution", "library", "prefix", "names")
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(heads)]
    if 2 + sum(widths) + 2 * (len(widths) - 1) <= page.width:
        for row in (heads, *table):
            page.lines.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        return
    # Too wide for one line a row: each distribution once, its libraries under it.
    last = None
    for dist, library, prefix, names in table:
        if dist != last:
            page.lines.append(f"  {dist}")
            last = dist
        page.lines += wrap_list(
            f"{library}:", [f"{prefix}, {plural(int(names), 'name')}"], page.width, "    ", "      "
        )


def _libraries(libraries: Sequence[LibraryFacts]) -> list[LibraryFacts]:
    """The libraries among what was read: a program judged for its shim ABI (linked -rdynamic,
    it exports symbols) is counted with the programs."""
    return [lib for lib in libraries if lib.kind != "executable"]


def _programs(report: ScanReport) -> str:
    """", N program(s)" for every program the scan read, those judged and the rest; "" for none."""
    s = report.scanned
    n = len(s.libraries) - len(_libraries(s.libraries)) + len(s.programs)
    return f", {plural(n, 'program')}" if n else ""


def counts(report: ScanReport) -> str:
    s = report.scanned
    libs = sum(len(_libraries(d.libraries)) for d in s.distributions)
    with_libs = sum(1 for d in s.distributions if _libraries(d.libraries))
    unowned = len(_libraries(s.unowned))
    return (
        f"{len(s.distributions)} distribution(s), {with_libs} with ELF libraries ({libs} libraries), "
        f"{unowned} librar{'y' if unowned == 1 else 'ies'} outside any distribution{_programs(report)}"
        f"{_native(report)}"
    )


def _brief_counts(report: ScanReport) -> str:
    s = report.scanned
    unowned = len(_libraries(s.unowned))
    outside = f", {unowned} outside any distribution" if unowned else ""
    return (f"{plural(len(s.distributions), 'distribution')}, "
        f"{plural(len(_libraries(s.libraries)), 'ELF library', 'ELF libraries')}{outside}{_programs(report)}"
        f"{_native(report)}")


def _native(report: ScanReport) -> str:
    """", N Mach-O or PE libraries" of a macOS or Windows environment; "" for none (an ELF one's)."""
    n = len(report.scanned.native)
    return f", {plural(n, 'Mach-O or PE library', 'Mach-O or PE libraries')}" if n else ""


def _listing(page: _Page, verbose: bool) -> None:
    """Every distribution, library and skipped file: only with -v (a hint without)."""
    s = page.report.scanned
    if not verbose:
        libraries, programs = len(_libraries(s.libraries)), _programs(page.report)
        if libraries or programs:
            read = plural(libraries, "library", "libraries") + (f" and {programs[2:]}" if programs else "")
            page.lines.append(f"(-v lists the {read} read and what each is)")
        return
    page.lines.append("every distribution read, and what each library is:")
    for folder in s.site_folders:
        page.add(f"site folder: {printable(folder)}", "", "  ")
    for d in s.distributions:
        editable = ", editable" if d.editable else ""
        page.add(f"{printable(d.label)} ({printable(d.location)}{editable})", "", "    ")
        libs: list[LibraryFacts | NativeFacts] = [*d.libraries, *d.native]
        for lib in libs:
            page.add(f"{page.name(lib.display)}: {lib.describe_roles()}", "  ", "      ")
    if s.unowned or s.unowned_native:
        page.lines.append(f"{NOBODY}:")
        unowned: list[LibraryFacts | NativeFacts] = [*s.unowned, *s.unowned_native]
        for lib in unowned:
            page.add(f"{page.name(lib.display)}: {lib.describe_roles()}", "  ", "      ")
    for name, kind in s.ignored:
        page.add(f"not a library ({kind}): {page.name(name)}", "  ", "      ")
    for name in s.programs:
        page.add(f"not a library (a program with no shim-ABI symbol): {page.name(name)}", "  ", "      ")


def render_text(report: ScanReport, *, color: bool = False, verbose: bool = False, width: int | None = None) -> str:
    page = _Page(report, width or terminal_width(), color)
    line, code = verdict(report)
    page.lines.append(page.paint(line, code))
    page.add(f"scanned {printable(report.scanned.description)}: {_brief_counts(report)}", "", "  ")
    _findings(page)
    _suppressions(page)
    page.lines.append("")
    _providers(page)
    _listing(page, verbose)
    return "\n".join(page.lines) + "\n"
