"""The test environment's torch, found one way by every test: the import system's answer
for the package, without importing it (a test that needs torch loaded imports it itself);
and a stand-in torch include folder holding the declarations a test gives.

torch is in the test extra, so its absence fails a test, it does not skip it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def torch_package() -> Path:
    """The installed torch's package folder (``site-packages/torch``)."""
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.submodule_search_locations, "torch is not installed (pip install '.[test]')"
    return Path(next(iter(spec.submodule_search_locations)))


def torch_lib() -> Path:
    """The installed torch's lib/ folder (libtorch_cpu.so, libc10.so, ...)."""
    return torch_package() / "lib"


def fake_torch_include(root: Path, declarations: str) -> Path:
    """``root`` as a torch include folder whose c/shim.h holds ``declarations``."""
    headers = root / "torch" / "csrc" / "inductor" / "aoti_torch"
    (headers / "c").mkdir(parents=True)
    (headers / "c" / "shim.h").write_text(declarations)
    return root
