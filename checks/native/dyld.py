"""dyld's binding of a Mach-O image's shim-ABI imports, as the check models it.

The rules followed (``man dyld``; ``<mach-o/loader.h>``: ``MH_TWOLEVEL``, ``LC_LOAD_DYLIB``;
``<mach-o/loader.h>``'s ``BIND_SPECIAL_DYLIB_*`` ordinals):

- A two-level import (an image with ``MH_TWOLEVEL``, a bind to library ordinal N > 0) binds
  only in the image of its N-th ``LC_LOAD_DYLIB``'s install name, matched here by its last
  component (``@rpath``, ``@loader_path`` expand on the deployment's machine): an import of a
  shim name from ``@rpath/libtorch_cpu.dylib`` binds to libtorch, whatever else is loaded.
- A flat lookup (``-undefined dynamic_lookup``, ordinal -2, or any import of an image without
  ``MH_TWOLEVEL``) searches every image loaded globally, in load order; in a Python process
  that imported torch, libtorch is loaded first, so it captures an unprefixed shim name.
- A weak lookup (ordinal -3) is coalesced: every image binds to the first loaded weak
  definition of the name, so two images' weak definitions are one.
- ``self`` (0) and ``main_executable`` (-1) bind in the image itself or in the program
  (python): neither is judged.

Load order here: the references (libtorch), the shims, then the models, each in the order
given. Nothing here runs dyld: a dylib that is not checked nor a reference is UNKNOWN.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator

from aoti_shim.checks.abi import prefix as prefixes
from aoti_shim.checks.macho.facts import TWO_LEVEL
from aoti_shim.checks.native.binding import NOTHING, Binding, Loaded, named_binding
from aoti_shim.checks.native.image import NativeImage, NativeImport

# torch's macOS libraries (torch/lib/ of its wheels), matched by install name's last component.
TORCH_DYLIBS = frozenset(
    f"lib{n}.dylib" for n in ("torch", "torch_cpu", "torch_python", "torch_global_deps", "c10", "shm", "torch_mps")
)
# Where a Mac's own libraries live: an absolute install name there is how Apple's are linked.
SYSTEM_FOLDERS = ("/usr/lib/", "/System/Library/")


def bind(importer: NativeImage, images: list[Loaded]) -> Iterator[Binding]:
    """Where each shim-ABI import of ``importer`` binds in the process ``images`` (load order)."""
    for imp in importer.imports:
        if not prefixes.is_shim_name(imp.name):
            continue
        if imp.lookup == TWO_LEVEL:
            yield named_binding(importer, imp, images, TORCH_DYLIBS)
        elif imp.searches_all:
            yield _first_definer(importer, imp, images)


def _first_definer(importer: NativeImage, imp: NativeImport, images: list[Loaded]) -> Binding:
    found = next((i for i in images if imp.name in i.exports), None)
    if found is None:
        return Binding(importer, imp, None, NOTHING)
    return Binding(importer, imp, found.display, found.kind)


def absolute_loads(image: NativeImage) -> Iterable[tuple[str, int]]:
    """Each dependency named by an absolute path outside the system's folders, with how many
    of the image's imports bind to it (0: loaded for nothing)."""
    for name, _kind in image.dependencies:
        if posixpath.isabs(name) and not name.startswith(SYSTEM_FOLDERS):
            yield name, sum(1 for i in image.imports if i.lookup == TWO_LEVEL and i.library == name)
