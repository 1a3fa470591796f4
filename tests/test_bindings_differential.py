"""The checker against the real loader, on generated processes (issue 23 §2).

A hypothesis generator builds random coalesced processes in C: libtorch stand-ins,
shim libraries and blobs with random names drawn from the shim-ABI list (what torch's
shim headers declare), prefixes right, missing, wrong or partial, symbol kinds GLOBAL,
WEAK, GNU_UNIQUE, IFUNC, protected and TLS, version scripts (a hidden old version too),
-Bsymbolic, DT_NEEDED chains (a blob linked against a shim, or against a link-time stub
of it that has another version, or against the libtorch stand-in, or needing a dependency
of its own; a blob needing a dependency that only its RUNPATH finds, importing shim names
(issue 33 §1); a shim needing a dependency that only its RUNPATH finds, exporting shim names;
a shim or blob needing a library that is gone), and a shim of a foreign machine (an
e_machine patched copy: this machine has no 32-bit toolchain),
a shim that is a filter (-F, -f) of a dependency, libraries linked -z nodlopen, and patched .dynsym entries: a blob's
import the loader
never looks up or binds to the blob itself (STB_LOCAL, hidden, protected), a definition
its lookup passes over (value 0, STT_SECTION); a blob or a shim importing a name that is no
shim ABI (a function or data, weak or not) that its own dependency (found by its RUNPATH
only) may or may not define, or a reference, a shim or dep0; or libc's (every process has
libc global, though no generated library needs it).

The file search is a dimension of its own (issue 33 §3): libraries built without a soname
(needed by their file name, so the loader searches for them); the run path's form
(``$ORIGIN``, ``${ORIGIN}``, ``$ORIGIN/$LIB``, ``${ORIGIN}/${PLATFORM}``, or a literal
folder named ``$ORIGIN_x``: folders that lead back to the libraries' own); blobs (and
some of their dependencies) loaded through symlinks in another folder; a run-path
dependency whose real copy is in a ``glibc-hwcaps/<level>`` subfolder with an empty one
beside it; a file by a searched-for name earlier in the path that is no ELF, a folder, ``ET_REL``,
of a foreign OSABI, machine or class; and run-path dependencies importing shim names
(prefixed and defined by a shim, prefixed and defined nowhere, unprefixed: libtorch's,
or a name the stand-in lacks). For those imports only what the loader decides (what
loads, which file, where an import binds) is compared: the rules' judgement of a
dependency is issue 33 §1's.

The process's program is a dimension too: the Python child, or a C host program (given to
the check as the program hosting the blobs) whose ``DT_RPATH`` (or, less often,
``DT_RUNPATH``) names a folder beside it; then each library's own run path is a
``DT_RUNPATH`` (which ignores the program's ``DT_RPATH``), a ``DT_RPATH`` or none, and some
run-path dependencies live only in the program's folder.

Every library of a batch of cases is compiled in one ``gcc -c`` call and linked with
``ld``; one child process forks once per case and loads it the way the process under
test would (references and shims ``RTLD_GLOBAL`` in order, then each blob
``RTLD_LOCAL | RTLD_NOW``) under ``LD_DEBUG=bindings``, and calls each shim's functions
once (their PLT imports bind lazily, at the first call). Then:

- a shim-ABI import bound to a reference, or a library that fails to load, must be a
  blocking finding;
- a clean load whose every shim-ABI import bound to a shim library must give no
  blocking finding of the rules that judge bindings (the spelling rules, such as an
  unprefixed export nobody imports, may still block by policy);
- for every shim-ABI import of every library that loaded, the binding model names the
  library the loader bound it to (or none, for a weak import left unresolved); so it does
  for the imports of other names;
- a library that failed to load (or a shim whose call failed) on a name that is no shim ABI
  gets LOAD_FAILURE naming that symbol; when every call returned, the model says no first
  call fails.

``AOTI_SHIM_DIFF_BATCHES`` sets the number of batches (of ``CASES_PER_BATCH`` cases);
CI runs a derandomized set. The longer runs are recorded in docs/reference.md ("What OK
means", the binding model's differential test).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from aoti_shim.checks import CheckSettings
from aoti_shim.checks.abi.prefix import is_shim_name
from aoti_shim.checks.check.run import checking
from aoti_shim.checks.report.model import BLOCKING, Finding
from aoti_shim.torch_names import shipped_names
from c_library_support import loader_hwcaps_levels, loader_lib, loader_platform
from summary_support import summary_line

PREFIX = "myrt_"
SPELLINGS = {"right": PREFIX, "missing": "", "wrong": "zz_", "partial": "myrt"}
CASES_PER_BATCH = 8
BATCHES = int(os.environ.get("AOTI_SHIM_DIFF_BATCHES", "30"))
# The rules that judge bindings; the others judge spelling and state by policy.
BINDING_RULES = frozenset(
    {"UNPREFIXED_IMPORT", "UNSATISFIED_IMPORT", "PREFIX_MISMATCH", "BINDS_OUTSIDE_SHIMS", "LOAD_FAILURE"}
)
# Kinds of definitions, per class of symbol (an import and its definers agree on the class).
KINDS = {
    "func": ("global", "weak", "ifunc", "protected"),
    "data": ("global", "weak", "unique", "protected"),
    "tls": ("global", "weak"),
}
EM_AARCH64 = 183
# ld.so says "protected symbol" for a reference of protected visibility.
_BINDING = re.compile(
    r"^\s*(\d+):\s+binding file (.+?) \[\d+\] to (.+?) \[\d+\]: (?:normal|protected) symbol `([^']+)'"
)
SHIM_NAMES = sorted(n for n in shipped_names().names if re.fullmatch(r"[A-Za-z0-9_]+", n))
counted = {
    "cases": 0,
    "bindings": 0,
    "blocking": 0,
    "clean": 0,
    "disagreements": 0,
    "gone": 0,
    "sdep": 0,
    "bdep": 0,
    "torch": 0,
    "helpers": 0,
    "helper_bindings": 0,
    "helper_failures": 0,
    "sonameless": 0,
    "symlinked": 0,
    "hwcaps": 0,
    "shadowed": 0,
    "dep_shim_imports": 0,
    "dep_bindings": 0,
    "program rpath": 0,
    "program runpath": 0,
    "own rpath": 0,
    "no run path": 0,
    "at program": 0,
    "via program": 0,
    **{f"form {f}": 0 for f in ("$ORIGIN", "${ORIGIN}", "$ORIGIN/$LIB", "${ORIGIN}/${PLATFORM}", "$ORIGIN_x")},
}
# The run path's forms: each leads to the folder of the libraries (issue 33 §3).
RPATH_FORMS = ("$ORIGIN", "${ORIGIN}", "$ORIGIN/$LIB", "${ORIGIN}/${PLATFORM}", "$ORIGIN_x")
# A file by a searched-for name, earlier in the path: the loader fails on the first four,
# skips the others.
SHADOWS = ("text", "folder", "relocatable", "osabi", "machine", "class")
HWCAPS_LEVELS = loader_hwcaps_levels()


@dataclass
class Def:
    base: str
    spelling: str
    kind: str
    version: str | None = None  # its node in the library's version script
    old: bool = False  # also a hidden old version, name@MYRT_0


@dataclass
class Imp:
    base: str
    spelling: str
    weak: bool


@dataclass
class Lib:
    key: str
    role: str  # ref, shim, blob, dep, stub
    defs: list[Def] = field(default_factory=list)
    imps: list[Imp] = field(default_factory=list)
    needed: list[str] = field(default_factory=list)
    versioned: bool = False
    symbolic: bool = False
    foreign: bool = False
    noopen: bool = False  # linked -z nodlopen
    filter: str | None = None  # "-F" / "-f": a standard / auxiliary filter of dep0 (not its DT_NEEDED)
    # (name, how) .dynsym entries patched after the link: local / hidden / protected (an
    # import), value0 / section (a definition).
    patches: list[tuple[str, str]] = field(default_factory=list)
    soname: bool = True  # built with -soname; without, others need it by its file name
    symlinked: bool = False  # loaded (or found) through a symlink in the case's links folder
    hwcaps: bool = False  # its real copy in glibc-hwcaps/<level>/, an empty one beside it
    shadow: str | None = None  # a file by its name earlier in the run path (SHADOWS)
    # Its own run path (RUN_PATH_TAGS): DT_RUNPATH, DT_RPATH (--disable-new-dtags) or none.
    tags: str = "runpath"
    at_program: bool = False  # its file only in the program's run-path folder


@dataclass
class Case:
    classes: dict[str, str]  # base name -> func / data / tls
    libs: list[Lib]
    form: str = "$ORIGIN"  # every library's run path (RPATH_FORMS)
    # The process's program: None (the Python child), or a C host whose run path is a
    # DT_RPATH ("rpath") or a DT_RUNPATH ("runpath").
    program: str | None = None


def name_of(base: str, spelling: str) -> str:
    return SPELLINGS[spelling] + base


@st.composite
def cases(draw: st.DrawFn) -> Case:
    bases = draw(st.lists(st.sampled_from(SHIM_NAMES), min_size=1, max_size=4, unique=True))
    classes = {b: draw(st.sampled_from(("func", "func", "data", "tls"))) for b in bases}
    spelling = st.sampled_from(("right",) * 7 + ("missing", "wrong", "partial"))
    libs: list[Lib] = []
    # libtorch stand-ins: the first exports every unprefixed name, as libtorch does; a second
    # may export a prefixed one (a reference that is another runtime's build).
    libs.append(Lib("ref0", "ref", [Def(b, "missing", "global") for b in bases]))
    if draw(st.integers(0, 3)) == 0:
        some = draw(st.lists(st.sampled_from(bases), min_size=1, max_size=2, unique=True))
        libs.append(Lib("ref1", "ref", [Def(b, draw(st.sampled_from(("right", "missing"))), "global") for b in some]))
    n_shims = draw(st.integers(1, 2))
    for i in range(n_shims):
        # Half the time the first shim defines every name (a complete runtime), else some.
        complete = i == 0 and draw(st.booleans())
        some = (
            bases if complete else draw(st.lists(st.sampled_from(bases), min_size=0, max_size=len(bases), unique=True))
        )
        versioned = draw(st.booleans())
        defs = [
            Def(b, draw(spelling), draw(st.sampled_from(KINDS[classes[b]])), "MYRT_1" if versioned else None)
            for b in some
        ]
        if versioned and defs and classes[defs[0].base] == "func" and draw(st.booleans()):
            defs[0].old = True
            defs[0].kind = "global"
        imps = [
            Imp(b, draw(spelling), draw(st.integers(0, 3)) == 0)
            for b in draw(st.lists(st.sampled_from(bases), max_size=2, unique=True))
        ]
        # A shim does not import a name it defines in the same spelling (that is a definition).
        imps = [m for m in imps if (m.base, m.spelling) not in {(d.base, d.spelling) for d in defs}]
        libs.append(Lib(f"shim{i}", "shim", defs, imps, versioned=versioned, symbolic=draw(st.booleans())))
    if draw(st.integers(0, 3)) == 0:
        some = draw(st.lists(st.sampled_from(bases), min_size=1, max_size=2, unique=True))
        libs.append(Lib("dep0", "dep", [Def(b, draw(st.sampled_from(("right", "missing"))), "global") for b in some]))
    if draw(st.integers(0, 5)) == 0:
        # A shim's own dependency, found by its RUNPATH only (never given to the check, never
        # dlopen'ed by itself): it joins the global scope with the shim.
        some = draw(st.lists(st.sampled_from(bases), min_size=1, max_size=2, unique=True))
        libs.append(Lib("sdep0", "sdep", [Def(b, draw(st.sampled_from(("right", "missing"))), "global") for b in some]))
        libs[[lib.key for lib in libs].index("shim0")].needed.append("sdep0")
    has_dep = any(lib.role == "dep" for lib in libs)
    if has_dep and draw(st.integers(0, 2)) == 0:
        shim0 = libs[[lib.key for lib in libs].index("shim0")]
        how = draw(st.sampled_from(("needed", "needed", "-F", "-f")))
        if how == "needed":
            shim0.needed.append("dep0")
        else:
            shim0.filter = how
    # The program (issue 33 §2): the Python child, or a C host with a DT_RPATH or a DT_RUNPATH.
    program = draw(st.sampled_from(("rpath", "rpath", "runpath"))) if draw(st.integers(0, 4)) == 0 else None
    _blobs(draw, bases, spelling, libs, has_dep, program is not None and draw(st.booleans()))
    if draw(st.integers(0, 7)) == 0:
        # A library that was there at link time and is gone: whoever needs it cannot load.
        draw(st.sampled_from([lib for lib in libs if lib.role in ("shim", "blob")])).needed.append("gone")
        libs.append(Lib("gone", "gone"))
    if draw(st.integers(0, 7)) == 0:
        shims = [lib for lib in libs if lib.role == "shim"]
        draw(st.sampled_from(shims)).foreign = True
    if draw(st.booleans()):
        _helper(draw, classes, libs)
    form = _search_shapes(draw, classes, libs)
    _run_paths(draw, libs, program)
    loaded = [lib for lib in libs if lib.role in ("shim", "blob", "dep")]
    if draw(st.integers(0, 11)) == 0:
        # (An auxiliary filtee that dlopen refuses: left out, glibc's answer is not modelled.)
        aux = any(lib.filter == "-f" for lib in libs)
        draw(st.sampled_from([lib for lib in loaded if not (aux and lib.key == "dep0")])).noopen = True
    if draw(st.integers(0, 5)) == 0:
        lib = draw(st.sampled_from(loaded))
        if lib.role == "blob":  # RTLD_NOW, never called: a patched import is only bound
            m = draw(st.sampled_from(lib.imps))
            lib.patches.append((name_of(m.base, m.spelling), draw(st.sampled_from(("local", "hidden", "protected")))))
        elif any(not d.old and d.base != HELPER for d in lib.defs):  # one .dynsym entry by that name
            # (Not the helper's: a checked library's definition of a name that is no shim
            # ABI is taken as defined; the check reads no more of it.)
            d = draw(st.sampled_from([d for d in lib.defs if not d.old and d.base != HELPER]))
            lib.patches.append((name_of(d.base, d.spelling), draw(st.sampled_from(("value0", "section")))))
    return Case(classes, libs, form, program)


# A library's own run path: the one every library has (DT_RUNPATH), DT_RPATH or none.
RUN_PATH_TAGS = ("runpath", "runpath", "rpath", "none")


def _run_paths(draw: st.DrawFn, libs: list[Lib], program: str | None) -> None:
    """With a host program, whose DT_RPATH serves every library without a DT_RUNPATH (a
    DT_RUNPATH of its own serves nobody else): each library's own run path drawn, some
    run-path dependencies only in the program's folder."""
    if program is None:
        return
    for lib in libs:
        if lib.role in ("shim", "blob", "dep", "sdep", "hdep", "bdep"):
            lib.tags = draw(st.sampled_from(RUN_PATH_TAGS))
        if lib.role in ("sdep", "hdep", "bdep") and draw(st.booleans()):
            lib.at_program = True


def _search_shapes(draw: st.DrawFn, classes: dict[str, str], libs: list[Lib]) -> str:
    """The file search's dimensions: sonames, symlinks, hwcaps, shadows, the run path's
    form, and run-path dependencies importing shim names. Returns the form."""
    for lib in libs:
        # (The references keep theirs: torch's libraries have sonames.)
        if lib.role in ("shim", "blob", "dep", "sdep", "hdep") and draw(st.integers(0, 15)) == 0:
            lib.soname = False
    if draw(st.integers(0, 5)) == 0:
        blobs = [lib for lib in libs if lib.role == "blob"]
        for lib in draw(st.lists(st.sampled_from(blobs), min_size=1, unique_by=lambda x: x.key)):
            lib.symlinked = True
        # Some of the libraries they need have symlinks beside them (the others are not found there).
        for lib in libs:
            if lib.role in ("dep", "sdep", "hdep", "shim") and draw(st.booleans()):
                lib.symlinked = True
    searched = [lib for lib in libs if lib.role in ("sdep", "hdep")]
    if HWCAPS_LEVELS and searched and draw(st.integers(0, 3)) == 0:
        draw(st.sampled_from(searched)).hwcaps = True
    candidates = [lib for lib in libs if lib.role in ("sdep", "hdep", "dep") or (lib.role == "shim" and not lib.soname)]
    if candidates and draw(st.integers(0, 5)) == 0:
        draw(st.sampled_from(candidates)).shadow = draw(st.sampled_from(SHADOWS))
    for lib in searched:
        if draw(st.integers(0, 2)) == 0:
            # A shim name it imports: prefixed (a shim may define it, or none), or unprefixed
            # (libtorch's, or one the stand-in lacks).
            how = draw(st.sampled_from(("prefixed", "prefixed", "unprefixed", "absent")))
            base = draw(st.sampled_from([b for b in classes if b not in (HELPER, *LIBC_NAMES.values())]))
            if how == "absent":
                base = next(n for n in SHIM_NAMES if n not in classes)
                classes[base] = "func"
            imp = Imp(base, "right" if how == "prefixed" else "missing", False)
            if (imp.base, imp.spelling) not in {(d.base, d.spelling) for d in lib.defs}:  # (else a definition)
                lib.imps.append(imp)
    return draw(st.sampled_from(RPATH_FORMS[:1] * 4 + RPATH_FORMS))


def _blobs(
    draw: st.DrawFn, bases: list[str], spelling: st.SearchStrategy[str], libs: list[Lib], has_dep: bool, bdep: bool
) -> None:
    """One or two blobs, each importing some names and maybe needing a shim, a stub of it, dep0 or the libtorch
    stand-in; blob0 its own run-path dependency sometimes (always when ``bdep``)."""
    for i in range(draw(st.integers(1, 2))):
        imps = [
            Imp(b, draw(spelling), draw(st.integers(0, 4)) == 0)
            for b in draw(st.lists(st.sampled_from(bases), min_size=1, max_size=4, unique=True))
        ]
        needed = []
        link = draw(st.sampled_from(("none", "none", "shim0", "stub", "dep0", "ref0")))
        if link == "dep0" and not has_dep:
            link = "none"
        if link != "none":
            needed.append(link)
        libs.append(Lib(f"blob{i}", "blob", [], imps, needed, symbolic=draw(st.integers(0, 3)) == 0))
    if bdep or draw(st.integers(0, 5)) == 0:
        # A blob's own dependency (a kernel library that its RUNPATH finds, never given to the
        # check) importing shim-ABI names: judged as the blob's own imports are (issue 33 §1).
        imps = [
            Imp(b, draw(spelling), draw(st.integers(0, 4)) == 0)
            for b in draw(st.lists(st.sampled_from(bases), min_size=1, max_size=2, unique=True))
        ]
        libs.append(Lib("bdep0", "bdep", [], imps))
        libs[[lib.key for lib in libs].index("blob0")].needed.append("bdep0")
    if any("stub" in lib.needed for lib in libs):
        # Linked against a stub of shim0 (its soname) that has every name, in version MYRT_2:
        # the blob asks for a version the loaded shim0 may lack.
        libs.append(
            Lib("stub", "stub", [Def(b, sp, "global", "MYRT_2") for b in bases for sp in SPELLINGS], versioned=True)
        )


# Names that are no shim ABI: a helper some library may define, and libc's own (every
# process has libc global, though no generated library needs it).
HELPER = "helper0"
LIBC_NAMES = {"func": "getpid", "data": "error_message_count"}


def _helper(draw: st.DrawFn, classes: dict[str, str], libs: list[Lib]) -> None:
    """A blob or a shim imports a name that is no shim ABI (a function, or data, which a
    global library binds at load), maybe weak; its own dependency (found by its RUNPATH
    only) may or may not define it, and so may a reference, a shim or dep0; or it is
    libc's."""
    cls = draw(st.sampled_from(("func", "func", "data")))
    importer = draw(st.sampled_from([lib for lib in libs if lib.role in ("shim", "blob")]))
    if draw(st.integers(0, 5)) == 0:
        base = LIBC_NAMES[cls]
        classes[base] = cls
        importer.imps.append(Imp(base, "missing", False))
        return
    classes[HELPER] = cls
    importer.imps.append(Imp(HELPER, "missing", draw(st.integers(0, 5)) == 0))
    definers = draw(
        st.lists(st.sampled_from(("hdep", "hdep", "ref0", "shim", "dep0", "none")), max_size=2, unique=True)
    )
    kind = draw(st.sampled_from(("global", "global", "weak")))
    if draw(st.booleans()) or "hdep" in definers:
        # Its own dependency: linked in, and defining the helper or not (one built for
        # another release, found where the deployment's folder is).
        defs = [Def(HELPER, "missing", kind)] if "hdep" in definers else []
        libs.append(Lib("hdep", "hdep", defs))
        importer.needed.append("hdep")
    for lib in libs:
        if lib.key == "ref0" and "ref0" in definers:
            lib.defs.append(Def(HELPER, "missing", "global"))
        if lib.key == "dep0" and "dep0" in definers:
            lib.defs.append(Def(HELPER, "missing", kind))
    if "shim" in definers:
        others = [lib for lib in libs if lib.role == "shim" and lib is not importer]
        if others:
            draw(st.sampled_from(others)).defs.append(Def(HELPER, "missing", kind))


# -- C sources --------------------------------------------------------------------------

_EXPORT = '__attribute__((visibility("default")))'


def _define(d: Def, cls: str, n: int) -> str:
    name = name_of(d.base, d.spelling)
    vis = '__attribute__((visibility("protected")))' if d.kind == "protected" else _EXPORT
    weak = " __attribute__((weak))" if d.kind == "weak" else ""
    if d.old:
        # name@MYRT_0 (hidden, an old version) beside name@@MYRT_1 (the default).
        return (
            f"{_EXPORT} int impl_old_{n}(void) {{ return 10; }}\n{_EXPORT} int impl_new_{n}(void) {{ return 11; }}\n"
            f'__asm__(".symver impl_old_{n}, {name}@MYRT_0");\n__asm__(".symver impl_new_{n}, {name}@@MYRT_1");\n'
        )
    if cls == "func":
        if d.kind == "ifunc":
            return (f"static int impl_{n}(void) {{ return 3; }}\nstatic void *resolve_{n}(void) "
                f"{{ return (void *)impl_{n}; }}\n{_EXPORT} int {name}(void) "
                f"__attribute__((ifunc(\"resolve_{n}\")));\n")
        return f"{vis}{weak} int {name}(void) {{ return 1; }}\n"
    if cls == "tls":
        return f"{vis}{weak} __thread int {name} = 2;\n"
    if d.kind == "unique":
        return (
            f'__asm__(".pushsection .data\\n.globl {name}\\n.type {name}, @gnu_unique_object\\n'
            f'.size {name}, 4\\n{name}:\\n.long 4\\n.popsection\\n");\n'
        )
    return f"{vis}{weak} int {name} = 5;\n"


def _refer(m: Imp, cls: str, n: int) -> str:
    name = name_of(m.base, m.spelling)
    weak = " __attribute__((weak))" if m.weak else ""
    if cls == "func":
        use = f"({name} ? {name}() : 0)" if m.weak else f"{name}()"
        return f"extern int {name}(void){weak};\n{_EXPORT} int use_{n}(void) {{ return {use}; }}\n"
    tls = "__thread " if cls == "tls" else ""
    use = f"(&{name} ? {name} : 0)" if m.weak else name
    return f"extern {tls}int {name}{weak};\n{_EXPORT} int use_{n}(void) {{ return {use}; }}\n"


def source(case: Case, lib: Lib) -> str:
    parts = []
    for n, d in enumerate(lib.defs):
        parts.append(_define(d, case.classes[d.base], n))
    for n, m in enumerate(lib.imps):
        parts.append(_refer(m, case.classes[m.base], n))
    if lib.role == "blob":
        parts.append(f"{_EXPORT} int AOTInductorModelContainerRun(void) {{ return 0; }}\n")
    if not parts:
        parts.append(f"{_EXPORT} int {lib.key}_placeholder(void) {{ return 0; }}\n")
    return "".join(parts)


def version_script(case: Case, lib: Lib) -> str:
    names = sorted({name_of(d.base, d.spelling) for d in lib.defs})
    olds = sorted({name_of(d.base, d.spelling) for d in lib.defs if d.old})
    node = "MYRT_2" if lib.role == "stub" else "MYRT_1"
    text = ""
    if olds:
        text += "MYRT_0 { global: " + " ".join(f"{n};" for n in olds) + " };\n"
    return text + f"{node} {{ global: " + " ".join(f"{n};" for n in names) + " use_*; local: *; };\n"


# -- building ---------------------------------------------------------------------------


@dataclass
class Built:
    case: Case
    paths: dict[str, Path]  # key -> the library file (the stub's is link-time only)
    program: Path | None = None  # the C host, for a case that has one


# The C host program: argv[1] the result file, then G<path> (dlopen RTLD_GLOBAL | RTLD_LAZY),
# L<path> (RTLD_LOCAL | RTLD_NOW), C<n>:<path> (call use_<n> of a loaded one), as the
# Python child does. Its run path, $ORIGIN/prog, is the case's program folder.
HOST = r'''
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void trying(const char *result, const char *what) {
    char name[4096];
    snprintf(name, sizeof name, "%s.trying", result);
    FILE *f = fopen(name, "w");
    fputs(what, f);
    fclose(f);
}
static void quoted(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
    }
    fputc('"', f);
}
int main(int argc, char **argv) {
    const char *result = argv[1], *paths[64];
    void *handles[64];
    int n = 0, failures = 0;
    char name[4096], done[4096];
    snprintf(done, sizeof done, "%s.failed", result);
    FILE *failed = fopen(done, "w");
    fputc('{', failed);
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i];
        if (arg[0] == 'C') {
            const char *path = strchr(arg, ':') + 1;
            for (int h = 0; h < n; h++) {
                if (strcmp(paths[h], path) != 0) continue;
                char sym[32];
                snprintf(sym, sizeof sym, "use_%d", atoi(arg + 1));
                snprintf(name, sizeof name, "call:%d:%s", atoi(arg + 1), path);
                trying(result, name);
                ((int (*)(void))dlsym(handles[h], sym))();
            }
            continue;
        }
        trying(result, arg + 1);
        void *handle = dlopen(arg + 1, arg[0] == 'G' ? RTLD_GLOBAL | RTLD_LAZY : RTLD_LOCAL | RTLD_NOW);
        if (handle) {
            paths[n] = arg + 1;
            handles[n++] = handle;
        } else {
            fputs(failures++ ? ", " : "", failed);
            quoted(failed, arg + 1);
            fputs(": ", failed);
            quoted(failed, dlerror());
        }
    }
    fputc('}', failed);
    fclose(failed);
    return rename(done, result) != 0;
}
'''


def _host(out: Path, c: int, program: str | None) -> Path | None:
    """Case ``c``'s host program (linked from the batch's host.o), its run path a DT_RPATH or
    a DT_RUNPATH naming its folder's ``prog``; None for the Python child."""
    if program is None:
        return None
    host = out / f"c{c}_bin" / "host"
    (host.parent / "prog").mkdir(parents=True)
    dtags = "--disable-new-dtags" if program == "rpath" else "--enable-new-dtags"
    subprocess.run(
        ["gcc", "-o", str(host), str(out / "host.o"), f"-Wl,{dtags},-rpath,$ORIGIN/prog", "-ldl"],
        check=True,
        capture_output=True,
    )
    return host


def build_batch(batch: list[Case], out: Path) -> list[Built]:
    out.mkdir(parents=True, exist_ok=True)
    sources: list[tuple[int, Lib, Path]] = []
    for c, case in enumerate(batch):
        for lib in case.libs:
            src = out / f"c{c}_{lib.key}.c"
            src.write_text(source(case, lib))
            sources.append((c, lib, src))
    # One gcc call compiles every library of the batch; ld links each.
    (out / "empty.c").write_text("")
    (out / "host.c").write_text(HOST)
    subprocess.run(
        ["gcc", "-c", "-fPIC", "-O1", "empty.c", "host.c", *[s.name for _, _, s in sources]],
        cwd=out,
        check=True,
        capture_output=True,
    )
    _run_path_folders(out)
    built = [Built(case, {}, _host(out, c, case.program)) for c, case in enumerate(batch)]
    order = {"stub": 0, "gone": 0, "dep": 1, "sdep": 1, "hdep": 1, "bdep": 1, "ref": 2, "shim": 3, "blob": 4}
    for c, lib, src in sorted(sources, key=lambda t: (t[0], order[t[1].role])):
        case = batch[c]
        soname = f"libc{c}_{'shim0' if lib.role == 'stub' else lib.key}.so"
        target = out / ("stub" if lib.role == "stub" else "") / soname
        target.parent.mkdir(exist_ok=True)
        run_path = f"$ORIGIN/c{c}_sh:" + (f"{out}/$ORIGIN_x" if case.form == "$ORIGIN_x" else case.form)
        named = ["-soname", soname] if lib.soname or lib.role == "stub" else []
        args = ["ld", "-shared", *named, "-o", str(target), str(src.with_suffix(".o"))]
        if lib.tags != "none":
            args += ["-rpath", run_path, *(["--disable-new-dtags"] if lib.tags == "rpath" else [])]
        if lib.versioned:
            script = src.with_suffix(".map")
            script.write_text(version_script(case, lib))
            args += ["--version-script", str(script)]
        if lib.symbolic:
            args.append("-Bsymbolic")
        if lib.noopen:
            args += ["-z", "nodlopen"]
        if lib.filter:
            args += [lib.filter, f"libc{c}_dep0.so"]
        for dep in lib.needed:
            # -L -l: the need is the soname, or the file's name (a path given to ld would be a path).
            need = built[c].paths["stub" if dep == "stub" else dep]
            args += ["-L", str(need.parent), f"-l:{need.name}"]
        done = subprocess.run(args, capture_output=True, text=True, check=False)
        assert done.returncode == 0, (args, done.stderr, src.read_text())
        built[c].paths[lib.key] = target
    for c, lib, _ in sources:
        if lib.role == "gone":
            built[c].paths[lib.key].unlink()
    # The foreign machine and the patches last: what links against a library links first.
    for c, lib, _ in sources:
        target = built[c].paths[lib.key]
        if lib.patches:
            _patch(target, lib.patches)
        if lib.foreign:
            data = bytearray(target.read_bytes())
            data[18:20] = EM_AARCH64.to_bytes(2, "little")
            target.write_bytes(bytes(data))
    for c, lib, _ in sources:
        if lib.role not in ("gone", "stub"):
            _search_shape(out, c, lib, built[c])
    return built


def _run_path_folders(out: Path) -> None:
    """The folders the run path's forms name, each leading back to ``out``: ``$LIB`` and
    ``$PLATFORM`` as this machine's loader expands them, and one literally named ``$ORIGIN_x``."""
    for name in (loader_lib(), loader_platform(), "$ORIGIN_x"):
        link = out / name
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to("../" * name.count("/") or ".")


def _search_shape(out: Path, c: int, lib: Lib, b: Built) -> None:
    """Moves the real copy to glibc-hwcaps/<level>/ (an empty library in its place), puts a
    shadow earlier in the run path, links it into the case's links folder."""
    target = b.paths[lib.key]
    if lib.at_program and b.program is not None:
        # Only the program's run-path folder has it.
        moved = b.program.parent / "prog" / target.name
        os.replace(target, moved)
        b.paths[lib.key] = target = moved
    if lib.hwcaps:
        real = target.parent / "glibc-hwcaps" / HWCAPS_LEVELS[0] / target.name
        real.parent.mkdir(parents=True, exist_ok=True)
        os.replace(target, real)
        named = ["-soname", target.name] if lib.soname else []
        subprocess.run(
            ["ld", "-shared", *named, "-o", str(target), str(out / "empty.o")], check=True, capture_output=True
        )
        b.paths[lib.key] = target = real
    if lib.shadow:
        _shadow(lib.shadow, target, out / f"c{c}_sh" / target.name, out)
    if lib.symlinked:
        link = out / f"c{c}_links" / target.name
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(target)
        if lib.role == "blob":  # loaded (and checked) through the link
            b.paths[lib.key] = link


def _shadow(kind: str, real: Path, shadow: Path, out: Path) -> None:
    shadow.parent.mkdir(exist_ok=True)
    if kind == "folder":
        shadow.mkdir()
    elif kind == "text":
        shadow.write_text("INPUT(-lfoo)\n")  # a linker script, as /usr/lib's libc.so is
    elif kind == "relocatable":
        shutil.copyfile(out / "empty.o", shadow)
    else:
        data = bytearray(real.read_bytes())
        at, value = {"osabi": (7, b"\x61"), "machine": (18, EM_AARCH64.to_bytes(2, "little")), "class": (4, b"\x01")}[
            kind
        ]
        data[at : at + len(value)] = value
        shadow.write_bytes(bytes(data))


def _patch(target: Path, patches: list[tuple[str, str]]) -> None:
    """Each named .dynsym entry changed in place (ELF64 little-endian): st_value 0, type
    STT_SECTION, binding STB_LOCAL, or visibility hidden or protected."""
    data = bytearray(target.read_bytes())
    with target.open("rb") as f:
        dynsym = ELFFile(f).get_section_by_name(".dynsym")
        at = {sym.name: dynsym["sh_offset"] + i * dynsym["sh_entsize"] for i, sym in enumerate(dynsym.iter_symbols())}
    for name, how in patches:
        o = at[name]
        if how == "value0":
            data[o + 8 : o + 16] = bytes(8)
        elif how == "section":
            data[o + 4] = data[o + 4] & 0xF0 | 3
        elif how == "local":
            data[o + 4] &= 0x0F
        else:
            data[o + 5] = 2 if how == "hidden" else 3
    target.write_bytes(bytes(data))


# -- loading ------------------------------------------------------------------------------

CHILD = r"""
import ctypes, json, os, sys
# libc's dlopen, not ctypes.CDLL's (which adds RTLD_NOW): global libraries bind their
# function imports lazily, as a C host's dlopen(RTLD_GLOBAL) does.
libc = ctypes.CDLL(None)
libc.dlopen.restype, libc.dlopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int]
libc.dlsym.restype, libc.dlsym.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p]
libc.dlerror.restype = ctypes.c_char_p
cases = json.load(sys.stdin)
out = {}
for case in cases:
    pid = os.fork()
    if pid == 0 and case["program"]:
        os.execv(case["program"][0], case["program"])
    if pid == 0:
        failed = {}
        handles = {}
        steps = [(p, os.RTLD_GLOBAL | os.RTLD_LAZY) for p in case["global"]]
        steps += [(p, os.RTLD_LOCAL | os.RTLD_NOW) for p in case["local"]]
        for path, mode in steps:
            # Said before it is tried: ld.so may end the process (an inconsistency it asserts on).
            with open(case["result"] + ".trying", "w") as f:
                f.write(path)
            handle = libc.dlopen(path.encode(), mode)
            if handle:
                handles[path] = handle
            else:
                failed[path] = libc.dlerror().decode(errors="replace")
        # Call each use_<n> of the global libraries once, everything loaded, as the runtime
        # would: their lazy imports bind then (an unbound one ends the process).
        for path in case["global"]:
            for n in range(case["uses"].get(path, 0)):
                if path in handles:
                    with open(case["result"] + ".trying", "w") as f:
                        f.write(f"call:{n}:" + path)
                    ctypes.CFUNCTYPE(ctypes.c_int)(libc.dlsym(handles[path], f"use_{n}".encode()))()
        with open(case["result"], "w") as f:
            json.dump(failed, f)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    out[case["result"]] = [pid, status]
print(json.dumps(out))
"""


def roles(b: Built, role: str) -> list[str]:
    return [str(b.paths[lib.key]) for lib in b.case.libs if lib.role == role]


def load_batch(built: list[Built], out: Path) -> list[tuple[dict[str, str], list[tuple[str, str, str]]]]:
    """Per case: the libraries that failed to load (path -> error) and the bindings (importer, definer, symbol)."""
    jobs = []
    for i, b in enumerate(built):
        uses = {str(b.paths[lib.key]): len(lib.imps) for lib in b.case.libs if lib.role == "shim"}
        jobs.append({"global": roles(b, "ref") + roles(b, "shim"), "local": roles(b, "blob") + roles(b, "dep"),
                     "result": str(out / f"result{i}.json"), "uses": uses, "program": None})
        if b.program is not None:
            # The C host does as the Python child does, by its arguments.
            job = jobs[-1]
            steps = [f"G{p}" for p in job["global"]] + [f"L{p}" for p in job["local"]]
            steps += [f"C{n}:{p}" for p in job["global"] for n in range(uses.get(p, 0))]
            job["program"] = [str(b.program), job["result"], *steps]
    debug = out / "ld"
    env = dict(os.environ, LD_DEBUG="bindings", LD_DEBUG_OUTPUT=str(debug))
    env.pop("LD_BIND_NOW", None)
    done = subprocess.run(
        [sys.executable, "-c", CHILD], input=json.dumps(jobs), capture_output=True, text=True, env=env, check=True
    )
    pids = json.loads(done.stdout)
    lines: dict[int, list[tuple[str, str, str]]] = {}
    for log in out.glob("ld.*"):
        for line in log.read_text(errors="replace").splitlines():
            m = _BINDING.match(line)
            if m:
                importer, definer = os.path.realpath(m.group(2)), os.path.realpath(m.group(3))
                lines.setdefault(int(m.group(1)), []).append((importer, definer, m.group(4)))
        log.unlink()
    results = []
    for job, b in zip(jobs, built):
        pid, status = pids[job["result"]]
        if status != 0:
            # ld.so ended the process while loading this library, or calling it: an import
            # that binds to nothing when first called, or an inconsistency ld.so asserts on.
            trying = Path(job["result"] + ".trying").read_text()
            if trying.startswith("call:"):
                n, path = trying[5:].split(":", 1)
                lib = next(lib for lib in b.case.libs if str(b.paths[lib.key]) == path)
                m = lib.imps[int(n)]
                failed = {
                    path: f"ld.so ended the process calling it (wait status {status}): undefined symbol: "
                        f"{name_of(m.base, m.spelling)}"
                }
            else:
                failed = {trying: f"ld.so ended the process (wait status {status})"}
        else:
            failed = json.loads(Path(job["result"]).read_text())
        results.append((failed, lines.get(pid, [])))
    return results


# -- judging ------------------------------------------------------------------------------


def judge(b: Built, failed: dict[str, str], bindings: list[tuple[str, str, str]]) -> None:
    try:
        _judge(b, failed, bindings)
    except AssertionError:
        counted["disagreements"] += 1
        raise


def _judge(b: Built, failed: dict[str, str], bindings: list[tuple[str, str, str]]) -> None:
    case = b.case
    by_path = {str(p): lib for lib in case.libs if lib.role != "stub" for k, p in b.paths.items() if k == lib.key}
    refs = set(roles(b, "ref"))
    shims = set(roles(b, "shim"))
    checked = [str(b.paths[lib.key]) for lib in case.libs if lib.role in ("shim", "blob", "dep")]
    # What the loader bound, for the shim-ABI imports of the generated libraries (by real
    # path: a blob loaded through a symlink is its file).
    real = {str(b.paths[lib.key]): os.path.realpath(b.paths[lib.key]) for lib in case.libs if lib.key in b.paths}
    imports = {
        (real[str(b.paths[lib.key])], name_of(m.base, m.spelling))
        for lib in case.libs
        if lib.role in ("shim", "blob", "dep", "bdep")
        for m in lib.imps
    }
    # The run-path dependencies' imports of shim names: only where they bind is compared.
    dep_imports = {
        (real[str(b.paths[lib.key])], name_of(m.base, m.spelling))
        for lib in case.libs
        if lib.role in ("sdep", "hdep")
        for m in lib.imps
        if is_shim_name(m.base)
    }
    loader: dict[tuple[str, str], str] = {}
    for importer, definer, symbol in bindings:
        if (importer, symbol) in imports or (importer, symbol) in dep_imports:
            loader[(importer, symbol)] = definer
    # A library that failed: and every one whose load it was part of (a blob needing it).
    failures = {p for p in failed if p in by_path}
    bad = bool(failures) or any(d in refs for (i, s), d in loader.items() if is_shim_name(s) and (i, s) in imports)
    loaded = [real[p] for p in checked if p not in failures and not _failed_by_need(b, p, failures)]
    # A blob's own dependency is loaded when the blob is.
    loaded += [
        real[str(b.paths[d.key])]
        for d in case.libs
        if d.role == "bdep" and any(real[str(b.paths[n.key])] in loaded for n in case.libs if d.key in n.needed)
    ]
    real_shims = {real[p] for p in shims}
    # (A dependency's shim-ABI import bound outside the shims is the rules' to judge (issue 33 §1): not clean.)
    clean = not failures and all(loader.get(key) in real_shims for key in imports | dep_imports if is_shim_name(key[1]))
    # A blob's shim-ABI import bound to the blob itself (a protected reference) or to nothing
    # though not weak (a local or hidden one): it loaded, and no call of it reaches a shim. (A
    # patched import of a name that is no shim ABI, the helper's, is no shim call.)
    strong = {
        (real[str(b.paths[lib.key])], name_of(m.base, m.spelling))
        for lib in case.libs if lib.role == "blob" for m in lib.imps if not m.weak and is_shim_name(m.base)
    }
    bad = bad or any(k[0] in loaded and not failed and loader.get(k, k[0]) == k[0] for k in strong)

    findings, model, model_failed, model_calls, others = _ask_model(b, imports, dep_imports)
    blocking = [f for f in findings if f.severity == BLOCKING]
    story = (f"case: {case}\nfailed: {failed}\nloader: {loader}\nmodel: {model}\nfindings: "
        f"{[(f.rule, f.artifact, f.symbol) for f in findings]}")
    if bad:
        assert blocking, (
            "the loader bound a shim-ABI import to a reference or failed a load; the check blocked nothing\n" + story
        )
    if clean:
        # (The given prefix carried by no shim is a PREFIX_MISMATCH about the prefix, not a binding.)
        judged = [f for f in blocking if f.rule in BINDING_RULES and not f.symbol.endswith("*")]
        assert not judged, "a clean load, but a binding rule blocked\n" + story
    # The model's load failures are the loader's, but for undefined symbols under RTLD_NOW:
    # those are imports bound to nothing (UNSATISFIED_IMPORT, PREFIX_MISMATCH), compared below.
    structural = {p for p in failures if "undefined symbol" not in failed[p]}
    if any("calling it" in why for why in failed.values()):
        pass  # a lazy import bound to nothing: the import rules must say so (below); it loaded
    elif any("ended the process" in why for why in failed.values()):
        # Nothing after it was tried: the model must fail that one (what follows is moot).
        assert structural <= model_failed, "ld.so ended the process; the model loads the library\n" + story
    else:
        assert model_failed == failures, "the model and the loader disagree on what loads\n" + story
    for p in failures - structural:
        culprit = p if "calling it" in failed[p] else failed[p].split(": undefined symbol")[0]  # p, or what p needs
        symbol = failed[p].split("undefined symbol: ", 1)[1].split(",")[0].strip()
        if os.path.realpath(culprit) not in {real[c] for c in checked} | {
            real[str(b.paths[lib.key])] for lib in case.libs if lib.role == "bdep"
        }:
            continue  # a run-path dependency's import: what fails is compared above, the rules' word is §1's
        if not is_shim_name(symbol):
            # A name that is no shim ABI: LOAD_FAILURE names it, on the library whose load
            # (or, for a global one, whose call) failed.
            assert any(f.rule == "LOAD_FAILURE" and f.artifact == p and f.symbol == symbol for f in blocking), (
                f"{p} failed on '{symbol}', bound to nothing, and LOAD_FAILURE does not say so\n" + story
            )
            continue
        # (By real path: the loader names a library by the path it found it by.)
        assert any(
            os.path.realpath(f.artifact) == os.path.realpath(culprit)
            and f.rule in ("UNSATISFIED_IMPORT", "PREFIX_MISMATCH")
            for f in blocking
        ), "a library failed on an undefined symbol and no import rule says so\n" + story
    died = any("ended the process" in why for why in failed.values())
    if not died:
        # Every call of the global libraries returned: none of their lazy imports is unbound.
        assert not model_calls, "every call returned; the model says a first call fails\n" + story
        _compare_bindings(imports, dep_imports, set(loaded), loader, model, others, story)
    _count(case, blocking, clean, bool(dep_imports))


def _ask_model(
    b: Built, imports: set[tuple[str, str]], dep_imports: set[tuple[str, str]]
) -> tuple[list[Finding], dict[tuple[str, str], str | None], set[str], set[str], dict[tuple[str, str], str | None]]:
    """The check's findings, its shim-ABI bindings (by real path), the libraries it fails to
    load, those whose first call fails, and where it binds the other imports asked."""
    settings_ = CheckSettings(
        shims=tuple(roles(b, "shim")),
        # (The host program, a file given: the program hosting the blobs, its DT_RPATH theirs.)
        models=tuple(([str(b.program)] if b.program is not None else []) + roles(b, "blob") + roles(b, "dep")),
        against=tuple(roles(b, "ref")),
        prefix=PREFIX,
    )
    with checking(settings_) as run:
        ctx = run.context
        findings = list(run.findings())
        model = {
            (os.path.realpath(bd.importer.display), bd.name): (
                os.path.realpath(bd.definer.display) if bd.definer else None
            )
            for lib in ctx.bindings.values()
            for bd in lib
        }
        model_failed = {f.library.display for f in ctx.process.load_failures()}
        model_calls = {f.library.display for f in ctx.process.call_failures()}
        # Where the model binds each import of a name that is no shim ABI, and the
        # dependencies' (asked while the machine's libraries it read are open).
        others: dict[tuple[str, str], str | None] = {}
        linked_of = {os.path.realpath(k): v for k, v in ctx.linked_of.items()}
        for importer, name in imports | dep_imports:
            linked = linked_of.get(importer)
            entry = next((e for e in linked.imports if e.symbol.name == name), None) if linked is not None else None
            if entry is not None and (not is_shim_name(name) or (importer, name) in dep_imports):
                bound = ctx.process.bind(linked, entry)
                others[(importer, name)] = (
                    os.path.realpath(bound.definer.display) if bound.definer is not None else None
                )
    return findings, model, model_failed, model_calls, others


def _compare_bindings(
    imports: set[tuple[str, str]],
    dep_imports: set[tuple[str, str]],
    loaded: set[str],
    loader: dict[tuple[str, str], str],
    model: dict[tuple[str, str], str | None],
    others: dict[tuple[str, str], str | None],
    story: str,
) -> None:
    """Every import of a library that loaded binds where the loader bound it."""
    for importer, name in sorted(dep_imports):
        # Where the loader bound a dependency's shim-ABI import, the model binds it there (a
        # global library's lazy function import the loader may never bind: not asked).
        if (importer, name) in loader:
            counted["dep_bindings"] += 1
            assert others.get((importer, name), "(not asked)") == loader[(importer, name)], (
                f"{importer}: {name}: the model binds it to {others.get((importer, name), '(not asked)')}, the loader "
                f"to {loader[(importer, name)]}\n"
                + story
            )
    for importer, name in sorted(imports):
        if importer not in loaded:
            continue
        if not is_shim_name(name):
            counted["helper_bindings"] += 1
            assert others.get((importer, name), "(not asked)") == loader.get((importer, name)), (
                f"{importer}: {name}: the model binds it to {others.get((importer, name))}, the loader to "
                f"{loader.get((importer, name))}\n"
                + story
            )
            continue
        counted["bindings"] += 1
        assert model.get((importer, name), "(not asked)") == loader.get((importer, name)), (
            f"{importer}: {name}: the model binds it to {model.get((importer, name))}, the loader to "
            f"{loader.get((importer, name))}\n"
            + story
        )


def _count(case: Case, blocking: list[Finding], clean: bool, dep_imports: bool) -> None:
    """The shapes reached, so the summary shows the generator reaches them."""
    counted["cases"] += 1
    counted["gone"] += any(lib.role == "gone" for lib in case.libs)
    counted["sdep"] += any(lib.role == "sdep" for lib in case.libs)
    counted["bdep"] += any(lib.role == "bdep" for lib in case.libs)
    counted["torch"] += any("ref0" in lib.needed for lib in case.libs)
    counted["helpers"] += any(m.base == HELPER or m.base in LIBC_NAMES.values() for lib in case.libs for m in lib.imps)
    counted["helper_failures"] += any(
        f.rule == "LOAD_FAILURE" and f.symbol and not is_shim_name(f.symbol) for f in blocking
    )
    counted["blocking"] += bool(blocking)
    counted["clean"] += clean
    counted["sonameless"] += any(not lib.soname for lib in case.libs)
    counted["symlinked"] += any(lib.symlinked for lib in case.libs)
    counted["hwcaps"] += any(lib.hwcaps for lib in case.libs)
    counted["shadowed"] += any(lib.shadow for lib in case.libs)
    counted["dep_shim_imports"] += dep_imports
    counted[f"form {case.form}"] += 1
    if case.program is not None:
        counted[f"program {case.program}"] += 1
        counted["own rpath"] += any(lib.tags == "rpath" for lib in case.libs)
        counted["no run path"] += any(lib.tags == "none" for lib in case.libs)
        counted["at program"] += any(lib.at_program for lib in case.libs)
        # Needed by a library without DT_RUNPATH: only the program's DT_RPATH finds it.
        counted["via program"] += case.program == "rpath" and any(
            d.at_program and d.key in n.needed and n.tags != "runpath" for d in case.libs for n in case.libs
        )


def _failed_by_need(b: Built, path: str, failures: set[str]) -> bool:
    lib = next(lib for lib in b.case.libs if str(b.paths.get(lib.key)) == path)
    needs = [*lib.needed, *(["dep0"] if lib.filter == "-F" else [])]
    return any(str(b.paths[n]) in failures for n in needs if n in b.paths and n != "stub") or (
        "stub" in lib.needed and str(b.paths["shim0"]) in failures
    )


@pytest.fixture(scope="module")
def report_count(request: pytest.FixtureRequest):
    yield
    line = (
        f"binding differential: {counted['cases']} cases, {counted['bindings']} shim-ABI bindings compared with ld.so, "
        f"{counted['blocking']} blocked, {counted['clean']} clean loads, {counted['disagreements']} disagreements "
        f"({counted['gone']} needing a library that is gone, {counted['sdep']} with a shim's run-path dependency, "
        f"{counted['bdep']} with a blob's run-path dependency importing shim ABI, "
        f"{counted['torch']} with a blob needing the libtorch stand-in, {counted['helpers']} importing a name that is "
        "no "
        f"shim ABI: {counted['helper_bindings']} such bindings compared, {counted['helper_failures']} LOAD_FAILUREs "
        "of one; "
        f"the search: {counted['sonameless']} with a library without soname, {counted['symlinked']} loading through "
        "symlinks, "
        f"{counted['hwcaps']} with a glibc-hwcaps copy, {counted['shadowed']} with a shadow earlier in the path, "
        f"{counted['dep_shim_imports']} with a dependency importing shim names ({counted['dep_bindings']} such "
        "bindings compared), "
        f"run paths: {', '.join(f'{counted[k]} {k[5:]}' for k in counted if k.startswith('form '))}; "
        f"a host program: {counted['program rpath']} with a DT_RPATH, {counted['program runpath']} with a DT_RUNPATH, "
        f"{counted['own rpath']} of them with a library's own DT_RPATH, {counted['no run path']} with a library "
        f"without run path, {counted['at program']} with a dependency only in the program's folder, "
        f"{counted['via program']} of them needed by a library the program's DT_RPATH serves)"
    )
    # In the run's closing summary: a fixture's own output is captured and never reaches CI's log.
    summary_line(request.config, line)


# No shrinking: a batch is seconds of gcc, and the failure message names the case whole.
@settings(max_examples=BATCHES, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck), database=None,
          phases=[Phase.explicit, Phase.generate])
@given(batch=st.lists(cases(), min_size=CASES_PER_BATCH, max_size=CASES_PER_BATCH))
def test_the_check_agrees_with_the_loader(
    batch: list[Case], tmp_path_factory: pytest.TempPathFactory, report_count: None
) -> None:
    out = tmp_path_factory.mktemp("diff")
    built = build_batch(batch, out)
    for b, (failed, bindings) in zip(built, load_batch(built, out)):
        judge(b, failed, bindings)
