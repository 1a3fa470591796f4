"""checks/loader/lineage.py on libraries described by hand: the DT_NEEDED chain a finding
names, and which libraries live in a CPython process (their Py* imports are the
interpreter's). On compiled libraries: tests/test_check_process_judged.py."""

from __future__ import annotations

from typing import Any

from aoti_shim.checks.elf.layout import STB_GLOBAL, STT_FUNC, STV_DEFAULT
from aoti_shim.checks.elf.symbols import Symbol
from aoti_shim.checks.elf.versions import DynamicEntry
from aoti_shim.checks.loader.bindings import DEPENDENCY, MODEL, SHIM, Linked
from aoti_shim.checks.loader.lineage import TORCH_PYTHON, chain, python_hosted


def lib(name: str, role: str = DEPENDENCY, **kw: Any) -> Linked:
    return Linked(display=name, role=role, names=frozenset({name}), **kw)


def by_name(*libs: Linked) -> dict[str, Linked]:
    return {n: x for x in libs for n in x.names}


def closure_of(libs: dict[str, Linked]) -> Any:
    def closure(root: Linked) -> list[Linked]:
        order, at = [root], 0
        while at < len(order):
            for name in order[at].needed:
                dep = libs.get(name)
                if dep is not None and dep not in order:
                    order.append(dep)
            at += 1
        return order

    return closure


def test_the_chain_runs_from_the_first_root_that_reaches_the_library() -> None:
    kern = lib("libkern.so")
    mid = lib("libmid.so", needed=("libkern.so",))
    shim = lib("libshim.so", SHIM, needed=("libmid.so",))
    blob = lib("blob.so", MODEL, needed=("libkern.so",))
    names = by_name(kern, mid, shim, blob)
    assert chain([blob, shim], kern, names) == [blob, kern]
    assert chain([shim, blob], kern, names) == [shim, mid, kern]
    # Breadth first: the shortest way down, as the loader maps the closure.
    wide = lib("libwide.so", SHIM, needed=("libmid.so", "libkern.so"))
    assert chain([wide], kern, by_name(kern, mid, wide)) == [wide, kern]


def test_a_library_no_root_reaches_is_its_own_chain() -> None:
    alone, root = lib("libalone.so"), lib("libroot.so", SHIM, needed=("libother.so",))
    assert chain([root], alone, by_name(alone, root)) == [alone]
    assert chain([root], root, by_name(root)) == [root]


def test_a_filtee_counts_as_a_step_of_the_chain() -> None:
    filtee = lib("libimpl.so")
    filt = lib("libfilter.so", SHIM, filtees=("libimpl.so",))
    assert chain([filt], filtee, by_name(filt, filtee)) == [filt, filtee]


def _init(name: str) -> DynamicEntry:
    return DynamicEntry(Symbol(name, STB_GLOBAL, STT_FUNC, STV_DEFAULT, True, False), 1, 1, None)


def test_an_extension_module_and_its_closure_live_in_cpython() -> None:
    dep = lib("libdep.so")
    ext = lib("_ops.cpython-311-x86_64-linux-gnu.so", MODEL, needed=("libdep.so",),
              lookup=lambda name: [_init(name)] if name == "PyInit__ops" else [])
    other = lib("libother.so", SHIM)
    libs = by_name(dep, ext, other)
    assert ext.python_extension and not other.python_extension
    assert python_hosted([ext, other], closure_of(libs)) == frozenset({id(ext), id(dep)})


def test_a_library_needing_torchs_python_bindings_lives_in_cpython_with_its_closure() -> None:
    # (Its own dependency loads into the same interpreter: libdep.so's Py* imports bind there
    # whoever else needs it; test_check_process_judged.py asks the real loader.)
    torch_python = lib(TORCH_PYTHON)
    dep = lib("libdep.so")
    user = lib("libuser.so", SHIM, needed=("libdep.so", TORCH_PYTHON))
    through = lib("libthrough.so", SHIM, needed=("libuser.so",))
    plain = lib("libplain.so", SHIM, needed=("libdep.so",))
    other = lib("libother.so", SHIM)
    libs = by_name(torch_python, dep, user, through, plain, other)
    hosted = python_hosted([user, through, plain, other], closure_of(libs))
    assert hosted == frozenset({id(user), id(through), id(dep), id(torch_python)})
    # Named in DT_NEEDED but found nowhere still says so.
    lone = lib("liblone.so", SHIM, needed=(TORCH_PYTHON,))
    assert python_hosted([lone], closure_of(by_name(lone))) == frozenset({id(lone)})
