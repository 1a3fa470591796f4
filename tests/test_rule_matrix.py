"""Every rule in RULES, on every role and on every symbol kind the loader tells apart.

One small library per symbol kind exports the same probe names with that kind: GLOBAL,
WEAK, GNU_UNIQUE (one instance per process), TLS (one copy per thread and library), and
one that only refers to them as undefined WEAK (resolved to NULL when absent). Every
such library is also a shim (it exports ``myrt_aoti_torch_base``) and an AOTInductor
model (it exports ``AOTInductorModelContainerRun``), so that one library can be checked
as a shim, as a model, or as both. A *bare* library is neither.

A cell is (role, library). The roles are shim, model, both (one file given as --shim and
--model) and twice (the library and a copy of it as two shims: two definers of each name).
The checker runs on the library in that role, next to a
*provider* shim (which exports the one prefixed name the models import and may find)
and against a *reference* that exports every probe name, as libtorch would. EXPECT has
one row per rule: for each cell, the exact multiset of symbols that rule reports on the
cell's library, or a ``Why`` saying why the rule has nothing to say there. A new rule is
a new row; a rule without a row, or a cell without an entry, fails
test_every_rule_has_a_row_covering_every_cell.

The libraries are compiled once per session, one gcc call each (about a second in all).
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from aoti_shim.checks import CheckSettings, run_check
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.elf.layout import STB_GLOBAL, STB_GNU_UNIQUE, STB_WEAK, STT_TLS
from aoti_shim.checks.elf.symbols import Symbol
from aoti_shim.checks.loader.bindings import Linked
from aoti_shim.checks.rules.table import ELF_RULES as RULES  # the Mach-O rule's: tests/test_native_judge.py
from aoti_shim.checks.rules.table import Library
from compile_support import compile_shared

PREFIX = "myrt_"
# The probe names each kind's library defines with that kind.
P = "myrt_aoti_torch_p"  # a prefixed shim name
U = "aoti_torch_u"  # an unprefixed shim name
S = "plain_state"  # no shim name at all
R1 = "__cxa_probe"  # a name only the C++ runtime defines
R2 = "_ZNSt5probeEv"  # a std:: name: the runtime's, or any C++ library's template instance (WEAK)
C = "cudaProbeMalloc"  # a CUDA runtime API name
K = "cudastate"  # starts like one, but is not one
PROBES = (P, U, S, R1, R2, C, K)
# Holds the marker behind a prefix the check was not given: not a shim name of this
# check's (only thread-local state makes it one for DUPLICATE_DEFINER). Not in the reference.
O = "third_aoti_torch_state"  # noqa: E741 - the matrix names its libraries by one letter
# What every library but the bare one exports, as GLOBAL functions.
BASE = "myrt_aoti_torch_base"
ENTRY = "AOTInductorModelContainerRun"
# Imports: unprefixed, prefixed and provided by nobody, prefixed and provided by the provider
# shim, and prefixed with a prefix no shim carries (a blob built for other shims).
IU = "aoti_torch_iu"
IM = "myrt_aoti_torch_imissing"
IP = "myrt_aoti_torch_iprovided"
IF = "other_aoti_torch_iforeign"
IF2 = "other_aoti_torch_two_aoti_torch_x"  # the same foreign prefix: its first marker ends it
IMPORTS = (IU, IM, IP, IF, IF2)

# A C++-mangled name holding a shim name (a shim defined without extern "C"): every defined kind exports one.
M = "_Z20myrt_aoti_torch_mangv"
# A GPU driver library's name that no machine has (libcuda.so.1 is there on a GPU machine):
# the bare library needs it.
DRIVER = "libnvidia-aoti-shim-probe.so.1"
DEFINED_KINDS = ("GLOBAL", "WEAK", "GNU_UNIQUE", "TLS")
KINDS = (*DEFINED_KINDS, "UNDEF_WEAK")
# FOREIGN is the GLOBAL library with another e_machine (AArch64): it reads the same, and cannot load.
LIBRARIES = (*KINDS, "BARE", "FOREIGN")
FOREIGN_MACHINE = 183
# "both": the same file as --shim and --model; "twice": the library and a copy of it (another
# file, the same names) as two --shim libraries, so that every name has two definers.
ROLES = ("shim", "model", "both", "twice")
CELLS = [(role, lib) for role in ROLES for lib in LIBRARIES]

_EXPORT = '__attribute__((visibility("default")))'


def _define(kind: str, name: str) -> str:
    if kind == "GLOBAL":
        return f"{_EXPORT} int {name}(void) {{ return 1; }}\n"
    if kind == "WEAK":
        return f"{_EXPORT} __attribute__((weak)) int {name}(void) {{ return 2; }}\n"
    if kind == "TLS":
        return f"{_EXPORT} __thread int {name} = 3;\n"
    # No C spelling gives an arbitrary name GNU_UNIQUE binding (g++ does it for the static
    # locals of inline functions, under mangled names); the assembler's type does it as well.
    assert kind == "GNU_UNIQUE"
    return (
        f'__asm__(".pushsection .data\\n.globl {name}\\n.type {name}, @gnu_unique_object\\n'
        f'.size {name}, 4\\n{name}:\\n.long 4\\n.popsection\\n");\n'
    )


def _refer(names: tuple[str, ...], weak: bool) -> str:
    """Undefined references to ``names`` (WEAK ones, or plain ones), kept by a use."""
    attr = " __attribute__((weak))" if weak else ""
    decls = "".join(f"extern int {n}(void){attr};\n" for n in names)
    uses = " + ".join(f"({n} ? {n}() : 0)" if weak else f"{n}()" for n in names)
    return decls + f"{_EXPORT} int use_imports(void) {{ return {uses}; }}\n"


def library_source(lib: str) -> str:
    if lib == "BARE":
        # Neither a shim nor a model: a library that only uses torch's names (a stable-ABI extension, say).
        return _define("GLOBAL", "plain_func") + _refer((IU,), weak=False)
    base = _define("GLOBAL", BASE) + _define("GLOBAL", ENTRY)
    if lib == "UNDEF_WEAK":
        return base + _refer((*PROBES, *IMPORTS), weak=True)
    # The GLOBAL library also holds the plain (undefined GLOBAL) imports.
    imports = _refer(IMPORTS, weak=False) if lib == "GLOBAL" else ""
    return base + "".join(_define(lib, n) for n in (*PROBES, O, M)) + imports


@dataclass(frozen=True)
class Built:
    libs: dict[str, Path]
    copies: dict[str, Path]  # the same bytes at another path: another definer
    provider: Path
    reference: Path


@pytest.fixture(scope="session")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Built:
    out = tmp_path_factory.mktemp("rule-matrix")
    sources = {f"lib{lib.lower()}": library_source(lib) for lib in LIBRARIES if lib != "FOREIGN"}
    sources["libprovider"] = _define("GLOBAL", IP)
    sources["libreference"] = "".join(_define("GLOBAL", n) for n in PROBES)
    built = {}
    # The bare library needs a GPU driver library that is gone since the link (UNSEEN_DEPENDENCY).
    driver = out / "driver" / DRIVER
    compile_shared(Path(os.devnull), driver, (f"-Wl,-soname,{DRIVER}",), language="c")
    for name, text in sources.items():
        (out / f"{name}.c").write_text(text)
        built[name] = out / f"{name}.so"
        compile_shared(out / f"{name}.c", built[name], ("-Wl,--no-as-needed", str(driver)) if name == "libbare" else ())
    driver.unlink()
    # e_machine is the half-word at offset 18 of the ELF header.
    foreign = bytearray(built["libglobal"].read_bytes())
    foreign[18:20] = FOREIGN_MACHINE.to_bytes(2, "little")
    built["libforeign"] = out / "libforeign.so"
    built["libforeign"].write_bytes(bytes(foreign))
    copies = {}
    for lib in LIBRARIES:
        copies[lib] = out / "copy" / built[f"lib{lib.lower()}"].name
        copies[lib].parent.mkdir(exist_ok=True)
        shutil.copyfile(built[f"lib{lib.lower()}"], copies[lib])
    return Built(
        libs={lib: built[f"lib{lib.lower()}"] for lib in LIBRARIES},
        copies=copies,
        provider=built["libprovider"],
        reference=built["libreference"],
    )


@dataclass(frozen=True)
class Why:
    """No finding in this cell, by design; the reason says which."""

    reason: str


NO_MODEL = Why("no library is checked as a model")
NO_SHIM_ROLE = Why("the library is not checked as a shim; the provider shim has no such name")
UNDEFINED = Why("undefined references are not definitions: the library exports none of the probes")
EXPORTS_NO_PROBE = Why("the library only defines the probes; it imports no shim name")


def _cells(
    value: object, roles: tuple[str, ...] = ROLES, libs: tuple[str, ...] = LIBRARIES
) -> dict[tuple[str, str], object]:
    return {(role, lib): value for role in roles for lib in libs}


def _per_kind(values: dict[str, object], roles: tuple[str, ...]) -> dict[tuple[str, str], object]:
    return {(role, lib): value for role in roles for lib, value in values.items()}


SHIM_ROLES = ("shim", "both", "twice")
MODEL_ROLES = ("model", "both")
RUNTIME_SKIPPED = (P, U, S, K)  # the runtime names are REEXPORTED_(CUDA_)RUNTIME's, never COLLISION's


def _twice(values: dict[str, object]) -> dict[str, object]:
    """A per-library finding, for the library and its copy."""
    return {lib: v if isinstance(v, Why) else (*v, *v) for lib, v in values.items()}

EXPECT: dict[str, dict[tuple[str, str], tuple[str, ...] | Why]] = {
    "NOT_AN_AOTI_MODEL": {
        **_cells(NO_MODEL, ("shim", "twice")),
        **_per_kind({lib: Why(f"it exports the entry point {ENTRY}") for lib in KINDS}, MODEL_ROLES),
        **_per_kind({"BARE": ("",)}, MODEL_ROLES),
    },
    "NOT_A_SHIM": {
        **_per_kind({lib: Why(f"it exports {BASE}") for lib in KINDS}, SHIM_ROLES),
        **_per_kind({"BARE": ("",)}, ("shim", "both")),
        **_per_kind({"BARE": ("", "")}, ("twice",)),
        **_cells(Why("the library is not checked as a shim, and the provider exports a shim name"), ("model",)),
    },
    "COLLISION": {
        **_per_kind({kind: RUNTIME_SKIPPED for kind in DEFINED_KINDS}, ("shim", "both")),
        **_per_kind(_twice({kind: RUNTIME_SKIPPED for kind in DEFINED_KINDS}), ("twice",)),
        **_per_kind({"UNDEF_WEAK": UNDEFINED, "BARE": Why("plain_func is not in the reference")}, SHIM_ROLES),
        **_cells(
            Why("models are not checked against references (MODEL_DEFINES_SHIM covers their shim names)"), ("model",)
        ),
    },
    "UNPREFIXED_EXPORT": {
        **_per_kind({kind: (U,) for kind in DEFINED_KINDS}, ("shim", "both")),
        **_per_kind({kind: (U, U) for kind in DEFINED_KINDS}, ("twice",)),
        **_per_kind({"UNDEF_WEAK": UNDEFINED, "BARE": Why("it exports no aoti_torch_ name")}, SHIM_ROLES),
        **_cells(NO_SHIM_ROLE, ("model",)),
    },
    "UNPREFIXED_IMPORT": {
        # Every library's imports count, the shims' own included: a shim's own call of an
        # unprefixed name binds to libtorch as a blob's does.
        **_per_kind(
            {
                "GLOBAL": (IU,),
                "WEAK": EXPORTS_NO_PROBE,
                "GNU_UNIQUE": EXPORTS_NO_PROBE,
                "TLS": EXPORTS_NO_PROBE,
                # A WEAK reference still binds to libtorch's definition when libtorch is global.
                "UNDEF_WEAK": (IU, U),
                # Checked as a shim, its imports are a shim's own (only a model can be a stable-ABI extension).
                "BARE": (IU,),
            },
            ("shim", "both"),
        ),
        **_per_kind(
            _twice(
                {
                    "GLOBAL": (IU,),
                    "WEAK": EXPORTS_NO_PROBE,
                    "GNU_UNIQUE": EXPORTS_NO_PROBE,
                    "TLS": EXPORTS_NO_PROBE,
                    "UNDEF_WEAK": (IU, U),
                    "BARE": (IU,),
                }
            ),
            ("twice",),
        ),
        **_per_kind(
            {
                "GLOBAL": (IU,),
                "WEAK": EXPORTS_NO_PROBE,
                "GNU_UNIQUE": EXPORTS_NO_PROBE,
                "TLS": EXPORTS_NO_PROBE,
                "UNDEF_WEAK": (IU, U),
                "BARE": Why(
                    "not an AOTInductor model: its unprefixed imports are meant for libtorch (NOT_AN_AOTI_MODEL says "
                    "so)"
                ),
            },
            ("model",),
        ),
    },
    "UNSATISFIED_IMPORT": {
        **_per_kind(
            {
                # IP is the provider's; IU is unprefixed (UNPREFIXED_IMPORT's), IF foreign (PREFIX_MISMATCH's).
                "GLOBAL": (IM,),
                "WEAK": EXPORTS_NO_PROBE,
                "GNU_UNIQUE": EXPORTS_NO_PROBE,
                "TLS": EXPORTS_NO_PROBE,
                # A WEAK reference to a missing shim resolves to NULL: still unsatisfied. (Its P binds
                # to the reference, which exports it: BINDS_OUTSIDE_SHIMS says so.)
                "UNDEF_WEAK": (IM,),
                "BARE": Why("it imports no prefixed name"),
                "FOREIGN": Why("it cannot load at all (LOAD_FAILURE says so)"),
            },
            ("model",),
        ),
        **_per_kind(
            {
                "GLOBAL": (IM,),
                "WEAK": EXPORTS_NO_PROBE,
                "GNU_UNIQUE": EXPORTS_NO_PROBE,
                "TLS": EXPORTS_NO_PROBE,
                # As a shim it loads before the provider: its address-taken (GLOB_DAT) WEAK reference
                # to IP binds then, to nothing, and stays NULL. (GLOBAL's IP is a PLT call: bound later.)
                "UNDEF_WEAK": (IM, IP),
                "BARE": Why("it imports no prefixed name"),
                "FOREIGN": Why("it cannot load at all (LOAD_FAILURE says so)"),
            },
            ("shim", "both"),
        ),
        **_per_kind(
            _twice(
                {
                    "GLOBAL": (IM,),
                    "WEAK": EXPORTS_NO_PROBE,
                    "GNU_UNIQUE": EXPORTS_NO_PROBE,
                    "TLS": EXPORTS_NO_PROBE,
                    "UNDEF_WEAK": (IM, IP),
                    "BARE": Why("it imports no prefixed name"),
                    "FOREIGN": Why("it cannot load at all (LOAD_FAILURE says so)"),
                }
            ),
            ("twice",),
        ),
    },
    "PREFIX_MISMATCH": {
        **_per_kind(
            {
                # One finding per library and foreign prefix, naming its first import.
                "GLOBAL": (IF,),
                "WEAK": EXPORTS_NO_PROBE,
                "GNU_UNIQUE": EXPORTS_NO_PROBE,
                "TLS": EXPORTS_NO_PROBE,
                "UNDEF_WEAK": (IF,),
                "BARE": Why("it imports no shim name with another prefix"),
                "FOREIGN": Why("it cannot load at all (LOAD_FAILURE says so)"),
            },
            ("shim", "model", "both"),
        ),
        **_per_kind(
            _twice(
                {
                    "GLOBAL": (IF,),
                    "WEAK": EXPORTS_NO_PROBE,
                    "GNU_UNIQUE": EXPORTS_NO_PROBE,
                    "TLS": EXPORTS_NO_PROBE,
                    "UNDEF_WEAK": (IF,),
                    "BARE": Why("it imports no shim name with another prefix"),
                    "FOREIGN": Why("it cannot load at all (LOAD_FAILURE says so)"),
                }
            ),
            ("twice",),
        ),
    },
    "BINDS_OUTSIDE_SHIMS": {
        # The reference exports every probe, the prefixed P too: a weak import of P binds to it.
        **_per_kind({"UNDEF_WEAK": (P,)}, ("shim", "model", "both")),
        **_per_kind({"UNDEF_WEAK": (P, P)}, ("twice",)),
        **_per_kind(
            {
                **{
                    kind: Why("its prefixed imports bind to the provider shim or to nothing")
                    for kind in (*DEFINED_KINDS, "FOREIGN")
                },
                "BARE": Why("it imports no prefixed name"),
            },
            ROLES,
        ),
    },
    "LOAD_FAILURE": {
        **_per_kind({"FOREIGN": ("",)}, ("shim", "model", "both")),
        **_per_kind({"FOREIGN": ("", "")}, ("twice",)),
        **_cells(Why("it is ELF64 x86-64, as the reference is"), ROLES, (*KINDS, "BARE")),
    },
    "UNSEEN_DEPENDENCY": {
        **_cells(Why("it needs nothing this machine lacks (the C library alone)"), ROLES, (*KINDS, "FOREIGN")),
        **_per_kind({"BARE": (DRIVER,)}, ("shim", "model", "both")),
        **_per_kind({"BARE": (DRIVER, DRIVER)}, ("twice",)),
    },
    "MANGLED_SHIM": {
        **_per_kind({kind: (M,) for kind in (*DEFINED_KINDS, "FOREIGN")}, ("shim", "model", "both")),
        **_per_kind({kind: (M, M) for kind in (*DEFINED_KINDS, "FOREIGN")}, ("twice",)),
        **_cells(Why("it defines no C++-mangled shim name"), ROLES, ("UNDEF_WEAK", "BARE")),
    },
    "MODEL_DEFINES_SHIM": {
        **_cells(NO_MODEL, ("shim", "twice")),
        **_per_kind(
            {
                **{kind: (BASE, P, U) for kind in DEFINED_KINDS},
                "UNDEF_WEAK": (BASE,),
                "BARE": Why("it defines no shim name"),
            },
            MODEL_ROLES,
        ),
    },
    "DUPLICATE_DEFINER": {
        **_cells(Why("each name has one definer: the library and the provider share none"), ("shim", "model")),
        **_cells(Why("one file given as --shim and --model is one definer"), ("both",)),
        # Twice: the copy is a second definer of every shim name and thread-local...
        **_per_kind(
            {
                "GLOBAL": (BASE, P, U),
                "WEAK": (BASE, P, U),
                # ...except GNU_UNIQUE ones: the loader keeps one instance per process.
                "GNU_UNIQUE": (BASE,),
                # ...and a thread-local is state whatever its name.
                "TLS": (BASE, P, U, S, R1, R2, C, K, O, M),
                "UNDEF_WEAK": (BASE,),
                "BARE": Why("it defines no shim name and no thread-local"),
            },
            ("twice",),
        ),
    },
    "REEXPORTED_RUNTIME": {
        # One finding per library, naming the first runtime symbol; checked in every role.
        **_per_kind(
            {
                "GLOBAL": (R2,),
                # A WEAK std:: name is any C++ library's template instance; __cxa_ is the runtime's alone.
                "WEAK": (R1,),
                "GNU_UNIQUE": (R2,),
                "TLS": (R2,),
                "UNDEF_WEAK": UNDEFINED,
                "BARE": Why("it exports no C++ runtime name"),
            },
            ("shim", "model", "both"),  # one file in both roles is one library: said once
        ),
        # The library and its copy: reported for each.
        **_per_kind(
            _twice(
                {
                    "GLOBAL": (R2,),
                    "WEAK": (R1,),
                    "GNU_UNIQUE": (R2,),
                    "TLS": (R2,),
                    "UNDEF_WEAK": UNDEFINED,
                    "BARE": Why("it exports no C++ runtime name"),
                }
            ),
            ("twice",),
        ),
    },
    "REEXPORTED_CUDA_RUNTIME": {
        # Any binding: a WEAK cudaMalloc interposes libcudart as well.
        **_per_kind(
            {
                **{kind: (C,) for kind in DEFINED_KINDS},
                "UNDEF_WEAK": UNDEFINED,
                "BARE": Why("it exports no CUDA runtime name"),
            },
            ("shim", "model", "both"),
        ),
        **_per_kind(
            _twice(
                {
                    **{kind: (C,) for kind in DEFINED_KINDS},
                    "UNDEF_WEAK": UNDEFINED,
                    "BARE": Why("it exports no CUDA runtime name"),
                }
            ),
            ("twice",),
        ),
    },
}


# FOREIGN reads as the GLOBAL library does: where a row does not say otherwise, it finds the same.
for _row in EXPECT.values():
    for _role in ROLES:
        _row.setdefault((_role, "FOREIGN"), _row[(_role, "GLOBAL")])


def _settings(built: Built, role: str, lib: str, **extra: object) -> CheckSettings:
    subject = str(built.libs[lib])
    shims = (subject, str(built.provider)) if role in SHIM_ROLES else (str(built.provider),)
    if role == "twice":
        shims = (subject, str(built.copies[lib]), str(built.provider))
    models = (subject,) if role in MODEL_ROLES else ()
    return CheckSettings(shims=shims, models=models, against=(str(built.reference),), prefix=PREFIX, **extra)


def test_every_rule_has_a_row_covering_every_cell() -> None:
    assert set(EXPECT) == {rule.id for rule in RULES}, "a rule without a row (or a row without a rule)"
    for rule, row in EXPECT.items():
        assert set(row) == set(CELLS), f"{rule}: cells without an entry: {sorted(set(CELLS) - set(row))}"
        # Each rule reports something somewhere, and says why it is silent everywhere else.
        assert any(not isinstance(v, Why) for v in row.values()), rule
        assert all(v.reason for v in row.values() if isinstance(v, Why)), rule


def test_the_libraries_have_the_kinds_they_are_named_for(matrix: Built) -> None:
    """pyelftools' reading is checked elsewhere; here our reader confirms what each library holds."""
    binds = {"GLOBAL": STB_GLOBAL, "WEAK": STB_WEAK, "GNU_UNIQUE": STB_GNU_UNIQUE, "TLS": STB_GLOBAL}
    for kind in DEFINED_KINDS:
        with ElfImage(matrix.libs[kind]) as image:
            exports = image.exports()
            for name in PROBES:
                assert exports[name].bind == binds[kind], (kind, name, exports[name].bind_name)
                assert (exports[name].type == STT_TLS) == (kind == "TLS"), (kind, name)
            assert {BASE, ENTRY} <= set(exports)
    with ElfImage(matrix.libs["UNDEF_WEAK"]) as image:
        imports = image.imports()
        assert all(imports[name].bind == STB_WEAK for name in (*PROBES, *IMPORTS))
        assert not set(PROBES) & set(image.exports())
    with ElfImage(matrix.libs["GLOBAL"]) as image:
        assert all(image.imports()[name].bind == STB_GLOBAL for name in IMPORTS)


@pytest.mark.parametrize(("role", "lib"), CELLS, ids=[f"{role}-{lib}" for role, lib in CELLS])
def test_cell(matrix: Built, role: str, lib: str) -> None:
    report = run_check(_settings(matrix, role, lib))
    subjects = {str(matrix.libs[lib]), str(matrix.copies[lib])}
    assert {f.artifact for f in report.findings} <= subjects, "a finding about the provider or the reference"
    got = Counter((f.rule, f.symbol) for f in report.findings)
    want: Counter[tuple[str, str]] = Counter()
    for rule, row in EXPECT.items():
        expected = row[(role, lib)]
        if not isinstance(expected, Why):
            want.update((rule, symbol) for symbol in expected)
    assert got == want, f"unexpected: {dict(got - want)}; missing: {dict(want - got)}"
    # A duplicate names the first definer it duplicates.
    assert all(f.related == str(matrix.libs[lib]) for f in report.findings if f.rule == "DUPLICATE_DEFINER")
    for rule in {r for r, _ in got}:
        (severity,) = {rule_.severity for rule_ in RULES if rule_.id == rule}
        assert all(f.severity == severity for f in report.findings if f.rule == rule)


# -- suppressions: scoped by rule, symbol and artifact, matching and not ----------------

# The GLOBAL library as a shim finds COLLISION P, U, S, K; UNPREFIXED_EXPORT U; REEXPORTED_RUNTIME R2;
# REEXPORTED_CUDA_RUNTIME C; and of its own imports UNPREFIXED_IMPORT IU, UNSATISFIED_IMPORT IM,
# PREFIX_MISMATCH IF; MANGLED_SHIM M.
SUPPRESSION_CASES = {
    "rule": ({"rule": "COLLISION"}, {("COLLISION", P), ("COLLISION", U), ("COLLISION", S), ("COLLISION", K)}),
    "any-rule-one-symbol": ({"rule": "*", "symbol": U}, {("COLLISION", U), ("UNPREFIXED_EXPORT", U)}),
    "rule-and-symbol": ({"rule": "COLLISION", "symbol": "aoti_torch_*"}, {("COLLISION", U)}),
    "rule-and-artifact-by-name": (
        {"rule": "UNPREFIXED_EXPORT", "artifact": "libglobal.so"},
        {("UNPREFIXED_EXPORT", U)},
    ),
    "rule-and-artifact-by-path": (
        {"rule": "REEXPORTED_RUNTIME", "artifact": "*/libglobal.*"},
        {("REEXPORTED_RUNTIME", R2)},
    ),
    "all-three": ({"rule": "COLLISION", "symbol": "plain_*", "artifact": "lib*.so"}, {("COLLISION", S)}),
    "symbol-not-matching": ({"rule": "COLLISION", "symbol": "nothing_*"}, set()),
    "artifact-not-matching": ({"rule": "COLLISION", "artifact": "libprovider.so"}, set()),
    "rule-not-matching": ({"rule": "UNPREFIXED_IMPORT", "symbol": U}, set()),
    "symbol-is-exact-not-a-prefix": ({"rule": "COLLISION", "symbol": "aoti_torch"}, set()),
}


@pytest.mark.parametrize("case", sorted(SUPPRESSION_CASES))
def test_suppression_scope(matrix: Built, case: str) -> None:
    entry, suppressed = SUPPRESSION_CASES[case]
    base = run_check(_settings(matrix, "shim", "GLOBAL"))
    everything = {(f.rule, f.symbol) for f in base.findings}
    assert everything == {
        ("COLLISION", P), ("COLLISION", U), ("COLLISION", S), ("COLLISION", K), ("UNPREFIXED_EXPORT", U),
        ("REEXPORTED_RUNTIME", R2), ("REEXPORTED_CUDA_RUNTIME", C), ("UNPREFIXED_IMPORT", IU),
        ("UNSATISFIED_IMPORT", IM), ("PREFIX_MISMATCH", IF), ("MANGLED_SHIM", M),
    }
    report = run_check(_settings(matrix, "shim", "GLOBAL", inline_suppressions=({**entry, "reason": case},)))
    assert {(s.finding.rule, s.finding.symbol) for s in report.suppressed} == suppressed
    assert {(f.rule, f.symbol) for f in report.findings} == everything - suppressed
    assert all(s.reason == case for s in report.suppressed)
    # A suppression that matches nothing is reported as unused, so it cannot go stale silently.
    assert len(report.unused_suppressions) == (0 if suppressed else 1)


# -- what each rule says: the message a user reads, whole ---------------------------------

# (case, rule, symbol, message): a case is a cell (role-library) or a named setting;
# {lib}, {copy}, {ref} stand for the cell's paths.
MESSAGES: list[tuple[str, str, str, str]] = [
    ("shim-GLOBAL", "COLLISION", U, "GLOBAL FUNC 'aoti_torch_u' is also exported by {ref}"),
    ("shim-TLS", "COLLISION", S, "GLOBAL TLS 'plain_state' is also exported by {ref}"),
    (
        "shim-GLOBAL-two-references",
        "COLLISION",
        P,
        "GLOBAL FUNC 'myrt_aoti_torch_p' is also exported by {ref} (and 1 more)",
    ),
    # aoti_torch_u is in no torch header: a runtime's own name that no rename list held.
    (
        "shim-GLOBAL",
        "UNPREFIXED_EXPORT",
        U,
        "exports 'aoti_torch_u' without the prefix (expected 'myrt_aoti_torch_u'): no rename list holds this name "
        "(a runtime's own shim, not in torch's headers); add it with NAMES_FROM in CMake, `names-from` in "
        "[tool.aoti-shim], or `aoti-shim rename-header --shim-include DIR`",
    ),
    (
        "shim-GLOBAL",
        "UNPREFIXED_IMPORT",
        IU,
        "imports 'aoti_torch_iu' itself (its own code calls the unprefixed name), which binds to no library of this "
        "process (its first call fails: undefined symbol), and to libtorch whenever libtorch is global",
    ),
    (
        "model-UNDEF_WEAK",
        "BINDS_OUTSIDE_SHIMS",
        P,
        "imports 'myrt_aoti_torch_p', which binds to {ref} (a reference library) in the process, not to the shims",
    ),
    (
        "shim-FOREIGN",
        "LOAD_FAILURE",
        "",
        "cannot be loaded next to the others: it is ELF64 little-endian AArch64, the process ELF64 little-endian "
        "x86-64: it cannot load",
    ),
    (
        "shim-GLOBAL",
        "MANGLED_SHIM",
        M,
        "exports 1 C++-mangled shim name(s), e.g. '_Z20myrt_aoti_torch_mangv': the shims are defined without "
        'extern "C", so no blob can bind to them; declare them extern "C" (include torch\'s shim headers, or wrap '
        'the definitions in an extern "C" block)',
    ),
    # fixtures/checker's unprefixed shim: no prefix given, none to infer.
    (
        "unprefixed-shim-no-prefix",
        "UNPREFIXED_EXPORT",
        "aoti_torch_get_data_ptr",
        "exports 'aoti_torch_get_data_ptr' without the prefix (expected a prefixed name)",
    ),
    (
        "shim-GLOBAL",
        "REEXPORTED_RUNTIME",
        R2,
        "re-exports 2 C++ runtime symbol(s), e.g. '_ZNSt5probeEv'; loaded RTLD_GLOBAL they interpose the process's "
        "C++ runtime",
    ),
    (
        "shim-GLOBAL",
        "REEXPORTED_CUDA_RUNTIME",
        C,
        "exports 1 CUDA runtime symbol(s), e.g. 'cudaProbeMalloc'; loaded RTLD_GLOBAL they interpose libcudart for the "
        "whole process (link the runtime with hidden visibility)",
    ),
    ("shim-BARE", "NOT_A_SHIM", "", "exports no aoti_torch_* name, prefixed or not: not a shim library"),
    (
        "model-GLOBAL",
        "UNPREFIXED_IMPORT",
        IU,
        "imports 'aoti_torch_iu', which binds to no library of this process (the load fails: undefined symbol), and to "
        "libtorch whenever libtorch is global",
    ),
    (
        "model-GLOBAL",
        "UNSATISFIED_IMPORT",
        IM,
        "imports 'myrt_aoti_torch_imissing', which no shim library exports (it fails when first called)",
    ),
    (
        "model-GLOBAL",
        "PREFIX_MISMATCH",
        IF,
        "imports 2 shim name(s) with prefix 'other_' (e.g. 'other_aoti_torch_iforeign'), but the shims carry 'myrt_': "
        "blob and shims were built with different prefixes, so it cannot load",
    ),
    (
        "bare-shim-given-prefix",
        "PREFIX_MISMATCH",
        "myrt_aoti_torch_*",
        "the given prefix 'myrt_' is exported by no shim library; the shims carry no prefix at all",
    ),
    (
        "provider-given-other-prefix",
        "PREFIX_MISMATCH",
        "zz_aoti_torch_*",
        "the given prefix 'zz_' is exported by no shim library; the shims carry 'myrt_'",
    ),
    ("model-GLOBAL", "MODEL_DEFINES_SHIM", U, "defines shim 'aoti_torch_u' itself; shims belong in the shim library"),
    (
        "model-BARE",
        "NOT_AN_AOTI_MODEL",
        "",
        "exports no AOTInductorModelContainer* entry point: not an AOTInductor model; its 1 unprefixed aoti_torch_* "
        "import(s) bind to libtorch by design (a stable-ABI extension?) and are not reported",
    ),
    ("twice-GLOBAL", "DUPLICATE_DEFINER", U, "'aoti_torch_u' is also defined by {lib}; each copy has its own state"),
    (
        "shim-BARE",
        "UNSEEN_DEPENDENCY",
        DRIVER,
        f"needs {DRIVER}, a GPU driver library (the driver installs it, no wheel does): not on this machine, so not "
        "checked; the process it runs in must have it",
    ),
]


def _message_settings(built: Built, checker_libs: dict[str, Path], case: str) -> CheckSettings:
    name = case
    if name == "shim-GLOBAL-two-references":
        return CheckSettings(
            shims=(str(built.libs["GLOBAL"]),), against=(str(built.reference), str(built.libs["TLS"])), prefix=PREFIX
        )
    if name == "unprefixed-shim-no-prefix":
        return CheckSettings(shims=(str(checker_libs["unprefixed_shim"]),))
    if name == "bare-shim-given-prefix":
        return CheckSettings(shims=(str(built.libs["BARE"]),), prefix=PREFIX)
    if name == "provider-given-other-prefix":
        return CheckSettings(shims=(str(built.provider),), prefix="zz_")
    role, lib = name.split("-")
    return _settings(built, role, lib)


@pytest.mark.parametrize(("case", "rule", "symbol", "template"), MESSAGES, ids=[f"{m[1]}:{m[0]}" for m in MESSAGES])
def test_message(
    matrix: Built, checker_libs: dict[str, Path], case: str, rule: str, symbol: str, template: str
) -> None:
    parts = case.split("-")
    lib = parts[1] if len(parts) > 1 and parts[1] in LIBRARIES else "GLOBAL"
    expected = template.format(lib=matrix.libs[lib], copy=matrix.copies[lib], ref=matrix.reference)
    report = run_check(_message_settings(matrix, checker_libs, case))
    said = [f.message for f in report.findings if f.rule == rule and f.symbol == symbol]
    assert said == [expected]


def test_every_rule_has_a_message_case() -> None:
    assert {m[1] for m in MESSAGES} == {rule.id for rule in RULES}


def test_a_consumer_of_the_prefixed_abi_alone_is_not_called_a_non_model(matrix: Built) -> None:
    # No entry point and no unprefixed import (a runtime's backend): nothing needs saying.
    report = run_check(
        CheckSettings(shims=(str(matrix.libs["GLOBAL"]),), models=(str(matrix.provider),), prefix=PREFIX)
    )
    assert [f for f in report.findings if f.rule == "NOT_AN_AOTI_MODEL"] == []


def _found(report, rule: str) -> set[tuple[str, str]]:
    return {(Path(f.artifact).name, f.symbol) for f in report.findings if f.rule == rule}


@pytest.mark.parametrize("order", ["bare-first", "bare-last"])
def test_each_model_is_judged_whatever_comes_before_it(matrix: Built, order: str) -> None:
    models = [str(matrix.libs["GLOBAL"]), str(matrix.provider), str(matrix.libs["BARE"])]
    if order == "bare-first":
        models.reverse()
    report = run_check(CheckSettings(shims=(str(matrix.provider),), models=tuple(models), prefix=PREFIX))
    assert _found(report, "NOT_AN_AOTI_MODEL") == {("libbare.so", "")}
    assert _found(report, "UNPREFIXED_IMPORT") == {("libglobal.so", IU)}


def test_gnu_unique_definers_count_once_next_to_other_definers(matrix: Built) -> None:
    unique, copy, plain = (
        str(p) for p in (matrix.libs["GNU_UNIQUE"], matrix.copies["GNU_UNIQUE"], matrix.libs["GLOBAL"])
    )
    # One unique instance and one GLOBAL copy: two copies of the state.
    report = run_check(CheckSettings(shims=(unique, plain), prefix=PREFIX))
    assert _found(report, "DUPLICATE_DEFINER") == {("libglobal.so", BASE), ("libglobal.so", P), ("libglobal.so", U)}
    # Two unique definers are one instance; the GLOBAL one after them is still a second copy.
    report = run_check(CheckSettings(shims=(unique, copy, plain), prefix=PREFIX))
    dups = Counter((Path(f.artifact).name, f.symbol) for f in report.findings if f.rule == "DUPLICATE_DEFINER")
    assert dups == Counter(
        {("libgnu_unique.so", BASE): 1, ("libglobal.so", BASE): 1, ("libglobal.so", P): 1, ("libglobal.so", U): 1}
    )


def test_one_file_in_both_roles_is_one_definer_but_a_copy_after_it_is_another(matrix: Built) -> None:
    lib, copy = str(matrix.libs["GLOBAL"]), str(matrix.copies["GLOBAL"])
    report = run_check(CheckSettings(shims=(lib,), models=(lib, copy), prefix=PREFIX))
    assert {s for _, s in _found(report, "DUPLICATE_DEFINER")} == {BASE, P, U}
    assert {f.artifact for f in report.findings if f.rule == "DUPLICATE_DEFINER"} == {copy}


def test_a_library_with_another_loader_view_keeps_what_its_tables_gave() -> None:
    # The run gives each library its dependency search's view after the prefix was read from
    # its names: a 75k-name library's sort and shim-name scan are not done twice.
    exports = {n: Symbol(n, STB_GLOBAL, 2, 0, True, False) for n in ("b_aoti_torch_x", "memcpy", "a_aoti_torch_y")}
    lib = Library(display="libx.so", role="shim", exports=exports, imports={})
    marked = lib.marked_exports
    assert marked == ["a_aoti_torch_y", "b_aoti_torch_x"]
    view = Linked("libx.so", "shim", frozenset({"libx.so"}))
    moved = lib.with_linked(view)
    assert moved.linked is view and lib.linked is None
    assert moved.marked_exports is marked and moved.sorted_exports is lib.sorted_exports


def test_the_shim_names_a_reader_picked_are_the_marked_exports_sorted() -> None:
    exports = {n: Symbol(n, STB_GLOBAL, 2, 0, True, False) for n in ("b_aoti_torch_x", "memcpy", "a_aoti_torch_y")}
    shims = ["b_aoti_torch_x", "a_aoti_torch_y"]
    picked = Library(display="libx.so", role="shim", exports=exports, imports={}, shim_exports=shims)
    assert picked.marked_exports == Library(display="libx.so", role="shim", exports=exports, imports={}).marked_exports
    assert "sorted_exports" not in picked.__dict__  # the prefix is read without sorting every export
