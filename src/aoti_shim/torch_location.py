"""Where torch is: the one answer for the checker, the build backend, the rename header,
the smoke's source route and CMake (``aoti-shim --torch-include-dir``).

torch is never imported here (that takes seconds and loads libtorch into the process):
``importlib.util.find_spec`` finds its package folder, and the version is read from
``torch/version.py``. The order, for every caller: ``$AOTI_SHIM_TORCH``, then the caller's
extra search paths (``CheckSettings.torch_search_paths``), then the torch this interpreter
would import. The build backend, whose isolated environment has no torch, searches the
interpreter pip installs for instead (``aoti_shim.plugin.target_env``), with the same type.
"""

from __future__ import annotations

import importlib.util
import os
import re
import stat
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from aoti_shim.errors import InputError

# Names the torch to use when it is not importable here (isolated builds, another venv).
TORCH_ENV_VAR = "AOTI_SHIM_TORCH"
# How a location was found, as reports and messages show it (report.AgainstSource.found_by).
BY_ENV_VAR = f"${TORCH_ENV_VAR}"
BY_SEARCH_PATH = "search path"
# Relative to torch's include folder: the header a model's wrapper needs (CMake checks it too).
SHIM_HEADER = "torch/csrc/inductor/aoti_torch/c/shim.h"

_VERSION_RE = re.compile(r"""^__version__\s*=\s*['"]([^'"\n]+)['"]""", re.M)


class TorchLocation(NamedTuple):
    """A torch installation: ``site`` holds ``torch/``; ``how`` says, for people, how it was found."""

    site: Path
    how: str

    @property
    def package(self) -> Path:
        return self.site / "torch"

    @property
    def lib(self) -> Path:
        return self.package / "lib"

    @property
    def include(self) -> Path:
        return self.package / "include"

    @property
    def version(self) -> str | None:
        """``torch/version.py``'s ``__version__``; None when it cannot be read."""
        return version_in(self.package)


def version_in(package: str | os.PathLike[str]) -> str | None:
    """The ``__version__`` in ``<package>/version.py`` (a torch package folder), if readable."""
    # O_NONBLOCK and a regular-file test: a FIFO (or a device) named version.py would
    # otherwise block the checker forever on open() or read().
    try:
        fd = os.open(os.path.join(package, "version.py"), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, 1 << 16)
    except OSError:
        return None
    finally:
        os.close(fd)
    return version_from_text(data.decode("utf-8", errors="replace"))


def version_from_text(text: str) -> str | None:
    """The ``__version__`` a ``torch/version.py`` text assigns (read from a folder or a wheel)."""
    match = _VERSION_RE.search(text)
    return match.group(1) if match else None


def package_lib(path: str | os.PathLike[str]) -> Path | None:
    """The ``lib/`` folder of a torch package folder (``torch/``, holding ``version.py`` and
    ``lib/``), or None: named as a reference, the package means its libraries, not
    ``_C*.so`` and the rest."""
    lib = Path(path) / "lib"
    return lib if os.path.isfile(Path(path) / "version.py") and os.path.isdir(lib) else None


def _has_lib(site: Path) -> bool:
    # os.path.isdir: False, not PermissionError, for a folder that cannot be searched (a
    # search path or site is probed; Path.is_dir raises EACCES before Python 3.14).
    return os.path.isdir(site / "torch" / "lib")


def explicit_torch_site(value: str) -> Path:
    """The absolute folder holding ``torch/lib`` that an ``$AOTI_SHIM_TORCH`` value names.

    A site-packages folder, a torch package folder or its ``lib/`` folder all name one.
    Resolved here, once: the plugin's gate runs the checker from a temp folder, where a
    relative value would name nothing (or another torch).
    """
    try:
        return _explicit_torch_site(value)
    except OSError as e:  # a folder on the way that cannot be searched (EACCES), an I/O error
        raise InputError(f"{BY_ENV_VAR}={value}: cannot read: {e.strerror or e}") from None


def _explicit_torch_site(value: str) -> Path:
    given = Path(value).expanduser()
    try:
        path = given.resolve()
    except (OSError, RuntimeError) as e:  # RuntimeError: a symlink loop
        raise InputError(f"{BY_ENV_VAR}={value}: cannot resolve: {e}") from None
    if _has_lib(path):
        return path
    if path.name == "torch" and (path / "lib").is_dir():
        return path.parent
    if path.name == "lib" and path.parent.name == "torch" and path.is_dir():
        return path.parent.parent
    # Say what is there instead: a typo'd link and a file look alike in a bare "no torch/lib".
    try:
        os.stat(path / "torch" / "lib")
    except PermissionError as e:  # a torch there, perhaps, behind a folder that cannot be searched
        raise InputError(f"{BY_ENV_VAR}={value}: cannot read {e.filename}: {e.strerror}") from None
    except OSError:
        pass
    if given.is_symlink() and not path.exists():
        what = f" (a dangling symbolic link to {path})"
    elif path.exists() and not path.is_dir():
        what = " (a file, not a folder)"
    elif not path.exists():
        what = " (no such folder)"
    else:
        what = ""
    raise InputError(
        f"{BY_ENV_VAR}={value}: no torch/lib there{what}; "
        "give a site-packages folder, a torch package folder or its lib/ folder"
    )


def from_environment(environ: Mapping[str, str] | None = None) -> TorchLocation | None:
    """The torch ``$AOTI_SHIM_TORCH`` names; None when it is unset or empty."""
    value = (os.environ if environ is None else environ).get(TORCH_ENV_VAR)
    return TorchLocation(explicit_torch_site(value), BY_ENV_VAR) if value else None


def in_sites(sites: Iterable[str | os.PathLike[str]], how: str = BY_SEARCH_PATH) -> TorchLocation | None:
    """The first of ``sites`` (site-packages folders) that holds ``torch/lib``."""
    for site in sites:
        if _has_lib(Path(site)):
            return TorchLocation(Path(site), how)
    return None


def in_process() -> TorchLocation | None:
    """The torch ``import torch`` would load here, found without importing it.

    Its ``lib/`` is not checked: a caller that needs it says what is missing.
    """
    try:
        spec = importlib.util.find_spec("torch")  # finds, never imports
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations)))
    return TorchLocation(package.parent, f"installed torch of {sys.executable}")


def locate(
    search_paths: Iterable[str | os.PathLike[str]] = (), environ: Mapping[str, str] | None = None
) -> TorchLocation | None:
    """``$AOTI_SHIM_TORCH``, else the first search path with torch, else the importable torch.

    None when there is none; a bad ``$AOTI_SHIM_TORCH`` is an InputError, never a fallback
    (it was set to name one torch: another would be checked against silently).
    """
    return from_environment(environ) or in_sites(search_paths) or in_process()


def torch_include_dir(environ: Mapping[str, str] | None = None) -> Path:
    """torch's include folder, for ``aoti-shim --torch-include-dir`` (CMake asks it)."""
    found = locate(environ=environ)
    if found is None:
        raise InputError(
            f"torch is not installed for {sys.executable}; install torch, "
            f"or set {TORCH_ENV_VAR}=<site-packages or torch folder>"
        )
    if not os.path.isdir(found.include):
        raise InputError(f"torch at {found.package} (found by {found.how}) has no include/ folder")
    return found.include
