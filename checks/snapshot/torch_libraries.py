"""Which of torch's libraries make "torch" as a reference: the set ``import torch`` loads.

The references (``--against torch``, a torch ``lib/`` folder or wheel) and the snapshots
(``aoti-shim snapshot``) both take this set, so it has one home, importing nothing of
theirs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

# What "torch" means as a reference: the libraries of torch/lib/ that `import torch` loads.
# They are derived, not listed: torch/__init__.py loads libtorch_global_deps.so by name, and
# torch/_C*.so needs libtorch_python.so and nothing else of lib/; the set is those two plus
# everything of lib/ their DT_NEEDED entries reach (for 2.13.0 CPU: libc10, libgomp.so.1,
# libshm, libtorch, libtorch_cpu, libtorch_global_deps, libtorch_python; a CUDA build adds
# libtorch_cuda and libc10_cuda the same way). A DT_NEEDED closure follows torch across
# versions with no list to keep up to date, and leaves out what torch only dlopens on demand
# or never (the test libraries below, which an ordinary process never loads).
TORCH_IMPORT_ROOTS = ("libtorch_python.so", "libtorch_global_deps.so")
# The test libraries torch ships in lib/; used only where no DT_NEEDED can be read (an old
# snapshot, a lib/ folder without the roots), and named in the docs.
TORCH_TEST_LIBRARIES = frozenset(
    {"libaoti_custom_ops.so", "libbackend_with_compiler.so", "libjitbackend_test.so", "libtorchbind_test.so"}
)


def import_closure(available: Iterable[str], needed_of: Callable[[str], Iterable[str]]) -> list[str] | None:
    """The names among ``available`` (file names in a torch ``lib/``) that ``import torch``
    loads: TORCH_IMPORT_ROOTS and what their DT_NEEDED entries reach, in load order.
    None when no root is there (not a torch lib/ as we know it)."""
    present = set(available)
    queue = [name for name in TORCH_IMPORT_ROOTS if name in present]
    if not queue:
        return None
    seen = set(queue)
    order: list[str] = []
    while queue:
        name = queue.pop(0)
        order.append(name)
        for dep in needed_of(name):
            if dep in present and dep not in seen:
                seen.add(dep)
                queue.append(dep)
    return order


def is_torch_lib_dir(path: str | os.PathLike[str]) -> bool:
    """A folder holding torch's libraries (libc10.so, libtorch_cpu.so)."""
    return os.path.isfile(os.path.join(path, "libc10.so")) and os.path.isfile(os.path.join(path, "libtorch_cpu.so"))
