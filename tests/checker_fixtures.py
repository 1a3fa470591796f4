"""Build the checker's fixture libraries from fixtures/checker/ with the system compiler."""

from __future__ import annotations

import zipfile
from pathlib import Path

from compile_support import compile_shared
from wheel_support import make_wheel

REPO = Path(__file__).resolve().parents[1]
SOURCES = REPO / "fixtures" / "checker"

# name -> (source, extra flags)
LIBRARIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "clean_shim": ("clean_shim.c", ()),
    "unprefixed_shim": ("unprefixed_shim.c", ()),
    "half_prefixed_shim": ("half_prefixed_shim.c", ()),
    "model": ("model.c", ()),
    "good_model": ("good_model.c", ()),
    "second_registry": ("second_registry.c", ()),
    "unique_export": ("unique_export.cpp", ()),
    "runtime_reexport": ("runtime_reexport.cpp", ("-static-libstdc++", "-static-libgcc")),
    "weak_std_instances": ("weak_std_instances.cpp", ()),
    "unique_tls_a": ("unique_tls.cpp", ("-DUSER=a",)),
    "unique_tls_b": ("unique_tls.cpp", ("-DUSER=b",)),
    "stable_abi_extension": ("stable_abi_extension.c", ()),
    "cuda_runtime_reexport": ("cuda_runtime_reexport.cpp", ()),
}


def build_fixtures(out: Path) -> dict[str, Path]:
    """Compile every fixture into ``out``; also a wheel holding the clean shim and good model."""
    out.mkdir(parents=True, exist_ok=True)
    built: dict[str, Path] = {}
    for name, (source, flags) in LIBRARIES.items():
        target = out / f"lib{name}.so"
        compile_shared(SOURCES / source, target, flags)
        built[name] = target
    built["wheel"] = make_wheel(out / "fixture_pkg-1.0-cp311-cp311-linux_x86_64.whl", {
        "fixture_pkg/lib/libclean_shim.so": built["clean_shim"],
        "fixture_pkg/models/model.so": built["good_model"],
        "fixture_pkg/__init__.py": "",
        "fixture_pkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: fixture-pkg\nVersion: 1.0\n",
    }, compression=zipfile.ZIP_DEFLATED)
    return built
