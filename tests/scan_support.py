"""Fixture distributions for ``scan``: libraries compiled from fixtures/scan/ with the system
compiler, packed into wheels of our own, and pip-installed (offline, no deps) into real venvs.

The venvs have no pip of their own: the test environment's pip installs into them
(``pip --python``), which is how a job's environment is filled, minus the index.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from compile_support import compile_shared
from torch_support import torch_package
from wheel_support import make_wheel

REPO = Path(__file__).resolve().parents[1]
SOURCES = REPO / "fixtures" / "scan"
EXT_SUFFIX = ".cpython-311-x86_64-linux-gnu.so"
WHEEL_TAG = "py3-none-linux_x86_64"


def compile_libraries(out: Path) -> dict[str, Path]:
    """name -> library: two runtimes with one prefix, their blob, an unprefixed runtime, two
    stable-ABI consumers (one for the wheel, one for the editable source tree)."""
    out.mkdir(parents=True, exist_ok=True)
    plan = {
        "rta_shims": ("prefixed_runtime.c", ()),
        "rtb_shims": ("prefixed_runtime.c", ("-DSECOND_RUNTIME",)),
        "rta_model": ("prefixed_blob.c", ()),
        "vendor_shims": ("unprefixed_runtime.c", ()),
        "ext": ("stable_abi_consumer.c", ("-DEXTENSION_OP=ext_y_op",)),
        "edit": ("stable_abi_consumer.c", ("-DEXTENSION_OP=edit_z_op",)),
        "stray": ("stable_abi_consumer.c", ("-DEXTENSION_OP=stray_op",)),
    }
    built = {}
    for name, (source, flags) in plan.items():
        target = out / f"lib{name}.so"
        # Undefined shim names are the point: they bind at load time, to whoever defines them first.
        compile_shared(SOURCES / source, target, flags)
        built[name] = target
    return built


def make_wheels(libs: dict[str, Path], dest: Path) -> dict[str, Path]:
    """The fixture distributions: rt-a (prefixed runtime and its blob), rt-b (another runtime
    with rt-a's prefix), vendor-x (an unprefixed runtime), ext-y (a stable-ABI extension)."""
    read = {name: path.read_bytes() for name, path in libs.items()}
    contents = {
        ("rt-a", "1.0"): {
            "rt_a/__init__.py": b"",
            "rt_a/librta_shims.so": read["rta_shims"],
            "rt_a/model.so": read["rta_model"],
        },
        ("rt-b", "2.1"): {"rt_b/librtb_shims.so": read["rtb_shims"]},
        ("vendor-x", "0.9"): {"vendor_x/libvendor_shims.so": read["vendor_shims"]},
        ("ext-y", "1.2"): {"ext_y/__init__.py": b"", f"ext_y/_ops{EXT_SUFFIX}": read["ext"]},
    }
    return {
        name: make_wheel(
            dest / f"{name.replace('-', '_')}-{version}-{WHEEL_TAG}.whl",
            members,
            name=name,
            compression=zipfile.ZIP_DEFLATED,
        )
        for (name, version), members in contents.items()
    }


@dataclass(frozen=True)
class Venv:
    root: Path
    python: Path
    site: Path


def make_venv(root: Path) -> Venv:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, capture_output=True)
    python = root / "bin" / "python"
    out = subprocess.run(
        [str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    )
    return Venv(root, python, Path(out.stdout.strip()))


def pip_install(venv: Venv, *args: str) -> None:
    """The test environment's pip, installing into ``venv`` offline and without dependencies."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv.python), "install", "--no-index", "--no-deps", *args],
        capture_output=True, text=True, env=env, check=False, timeout=300,
    )
    assert done.returncode == 0, f"pip install {args} failed:\n{done.stdout}{done.stderr}"


@dataclass(frozen=True)
class ScanEnvs:
    libs: dict[str, Path]
    wheels: dict[str, Path]
    clean: Venv  # torch (through a .pth), rt-a, ext-y
    dirty: Venv  # rt-a, rt-b, vendor-x, ext-y, edit-z (editable), a stray library in a .pth folder
    editable_source: Path
    stray_folder: Path


def build_envs(out: Path) -> ScanEnvs:
    libs = compile_libraries(out / "libs")
    wheels = make_wheels(libs, out / "wheels")
    clean = make_venv(out / "clean")
    # torch reaches this venv the way layered environments share it: a .pth naming another site folder.
    (clean.site / "shared_torch.pth").write_text(f"{torch_package().parent}\n")
    pip_install(clean, str(wheels["rt-a"]), str(wheels["ext-y"]))

    dirty = make_venv(out / "dirty")
    pip_install(dirty, *(str(wheels[n]) for n in ("rt-a", "rt-b", "vendor-x", "ext-y")))
    source = out / "edit-z-src"
    shutil.copytree(SOURCES / "editable", source)
    (source / "edit_z").mkdir()
    shutil.copyfile(libs["edit"], source / "edit_z" / f"_core{EXT_SUFFIX}")
    pip_install(dirty, "-e", str(source))
    stray = out / "stray-folder"
    stray.mkdir()
    shutil.copyfile(libs["stray"], stray / "libstray.so")
    (dirty.site / "stray.pth").write_text(f"{stray}\n")
    return ScanEnvs(libs, wheels, clean, dirty, source, stray)


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime_ns) of every file below ``root``: nothing may be written into a scanned environment."""
    state = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            state[path] = (st.st_size, st.st_mtime_ns)
    return state
