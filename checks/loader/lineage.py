"""Who brought a library into the process, and which libraries live in a CPython process.

The binding model asks both of its libraries' ``DT_NEEDED`` graph: the chain a finding names
(``blob.so → libkern.so``), and whether a library's ``Py*`` imports are the interpreter's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aoti_shim.checks.loader.bindings import Linked

# Only an interpreter loads torch's Python bindings: whatever needs them lives in CPython.
TORCH_PYTHON = "libtorch_python.so"


def chain(roots: Sequence[Linked], lib: Linked, by_name: Mapping[str, Linked]) -> list[Linked]:
    """The first of ``roots`` (in load order) whose DT_NEEDED closure reaches ``lib``, then each
    DT_NEEDED step down to ``lib``, breadth first as the loader maps it; ``[lib]`` when none does."""
    for root in roots:
        parent: dict[int, Linked | None] = {id(root): None}
        todo = [root]
        while todo and id(lib) not in parent:
            at = todo.pop(0)
            for name in (*at.filtees, *at.needed):
                dep = by_name.get(name)
                if dep is not None and id(dep) not in parent:
                    parent[id(dep)] = at
                    todo.append(dep)
        if id(lib) in parent:
            path: list[Linked] = [lib]
            while (up := parent[id(path[-1])]) is not None:
                path.append(up)
            return path[::-1]
    return [lib]


def python_hosted(libraries: Iterable[Linked], closure: Callable[[Linked], list[Linked]]) -> frozenset[int]:
    """The ids of the libraries that live in a CPython process: an extension module (it defines
    ``PyInit_<name>``) and a library whose closure needs libtorch_python.so, each with the
    closure it needs (a blob's own dependency loads into the same interpreter). Their
    ``Py*``/``_Py*`` imports bind to the interpreter."""
    hosted: set[int] = set()
    for lib in libraries:
        reached = closure(lib)
        if lib.python_extension or any(TORCH_PYTHON in x.names or TORCH_PYTHON in x.needed for x in reached):
            hosted.update(id(x) for x in reached)
    return frozenset(hosted)
