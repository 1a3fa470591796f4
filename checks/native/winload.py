"""The Windows loader's binding of a PE image's shim-ABI imports, as the check models it.

Every import names its DLL (the import directory, ``IMAGE_IMPORT_DESCRIPTOR.Name``, and the
delay-load directory alike; Microsoft's "PE Format"): the loader binds it in the module of
that name and nowhere else, matching names without regard to case ("Dynamic-Link Library
Search Order": a module of the same name already loaded is used). So a shim-ABI import from
``torch_cpu.dll`` binds to libtorch whatever the runtime loads, and a prefixed import binds
only if the DLL it names is a checked shim DLL exporting it. The first loaded module of a
name wins: two distributions shipping one DLL name collide (scan's, not check's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from aoti_shim.checks.abi import prefix as prefixes
from aoti_shim.checks.native.binding import Binding, Loaded, by_name, named_binding
from aoti_shim.checks.native.image import NativeImage

# torch's Windows DLLs (torch/lib/ of its wheels), lower case.
TORCH_DLLS = frozenset(
    f"{n}.dll" for n in ("torch", "torch_cpu", "torch_cuda", "torch_python", "torch_global_deps", "c10", "c10_cuda",
                         "shm")
)


def bind(importer: NativeImage, images: list[Loaded]) -> Iterator[Binding]:
    """Where each shim-ABI import of ``importer`` binds: in the DLL it names, or nowhere. An
    import by ordinal is the name of that ordinal in the DLL it names, when the check has
    read that DLL (a checked image or a reference); otherwise its name cannot be known."""
    for imp in importer.imports:
        if imp.ordinal is not None:
            found = by_name(images, imp.library, TORCH_DLLS)
            name = dict(found.ordinals).get(imp.ordinal) if isinstance(found, Loaded) else None
            if name is None:
                continue
            imp = dataclasses.replace(imp, name=name)
        if prefixes.is_shim_name(imp.name):
            yield named_binding(importer, imp, images, TORCH_DLLS)
