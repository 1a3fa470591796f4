"""Build the checker's fixture libraries from fixtures/checker/ with the system compiler."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

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
}


def build_fixtures(out: Path) -> dict[str, Path]:
    """Compile every fixture into ``out``; also a wheel holding the clean shim and good model."""
    out.mkdir(parents=True, exist_ok=True)
    built: dict[str, Path] = {}
    for name, (source, flags) in LIBRARIES.items():
        compiler = shutil.which("g++" if source.endswith(".cpp") else "gcc")
        assert compiler, "a C/C++ compiler is needed to build the fixtures"
        target = out / f"lib{name}.so"
        subprocess.run(
            [compiler, "-shared", "-fPIC", "-O1", "-o", str(target), str(SOURCES / source), *flags],
            check=True,
        )
        built[name] = target
    wheel = out / "fixture_pkg-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(built["clean_shim"], "fixture_pkg/lib/libclean_shim.so")
        zf.write(built["good_model"], "fixture_pkg/models/model.so")
        zf.writestr("fixture_pkg/__init__.py", "")
        zf.writestr("fixture_pkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: fixture-pkg\nVersion: 1.0\n")
    built["wheel"] = wheel
    return built
