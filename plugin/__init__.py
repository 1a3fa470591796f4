"""``aoti_shim.build``: scikit-build-core's PEP 517 backend with the prefix and the check built in.

A downstream project opts in with::

    [build-system]
    requires = ["scikit-build-core>=1.1,<2", "aoti-shim"]
    build-backend = "aoti_shim.build"

Every hook of ``scikit_build_core.build`` is offered. Each one passes on the
config-settings with our ``-C aoti-shim.*`` keys taken out and the prefix put in as
``cmake.define.AOTI_SHIM_SYMBOL_PREFIX``. ``build_wheel`` and ``build_editable`` then
check the built wheel and delete it on a blocking finding, so pip installs nothing.
An expected failure ends as one red line and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Literal

from scikit_build_core import build as _skbuild

from aoti_shim.plugin import console
from aoti_shim.plugin.config_settings import Prepared, for_skbuild, prepare
from aoti_shim.plugin.prefix import CMAKE_VAR, EffectivePrefix, effective_prefix
from aoti_shim.plugin.target_env import TORCH_ENV_VAR, TorchLocation, find_torch
from aoti_shim.errors import AotiShimError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
]

@contextlib.contextmanager
def _pep517_boundary() -> Iterator[None]:
    """The one place besides the CLI where an AotiShimError becomes an exit status."""
    try:
        yield
    except AotiShimError as e:
        console.error(str(e))
        raise SystemExit(e.exit_code) from None


def _pyproject() -> dict[str, Any]:
    # PEP 517 runs every hook in the project's source tree.
    try:
        with open("pyproject.toml", "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise AotiShimError(f"pyproject.toml: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise AotiShimError(f"pyproject.toml: invalid TOML: not UTF-8 text (byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise AotiShimError(f"pyproject.toml: invalid TOML: {e}") from None


def _passed_on(config_settings: dict[str, Any] | None) -> dict[str, Any]:
    with _pep517_boundary():
        return for_skbuild(_pyproject(), config_settings)


@dataclass(frozen=True)
class _Plan:
    """What scikit-build-core will do, as its own settings reader resolves it."""

    prefix: EffectivePrefix
    editable_mode: str
    rebuild_on_import: bool
    rebuild_dir: str


def _plan(prepared: Prepared, state: Literal["wheel", "editable"]) -> _Plan:
    from scikit_build_core.settings.skbuild_read_settings import SettingsReader

    reader = SettingsReader.from_file("pyproject.toml", prepared.skbuild_settings, state=state)
    settings = reader.settings
    effective = effective_prefix(
        prepared.requested,
        define_value=settings.cmake.define.get(CMAKE_VAR),
        cmake_args=list(settings.cmake.args),
        environ=os.environ,
        raw_source=prepared.raw_define_source,
    )
    editable = settings.editable
    # scikit-build-core turns rebuild-on-import on by default when rebuild-dir is set.
    rebuild = editable.rebuild is True or (editable.rebuild is None and bool(editable.rebuild_dir))
    return _Plan(effective, editable.mode, rebuild, editable.rebuild_dir)


def _report_prefix(effective: EffectivePrefix) -> None:
    if effective.choice.value is None:
        console.info(
            "prefix: not set by the build settings; the CMake project decides "
            "(aoti_shim_prefix(<target> PREFIX p)) and the check infers it from the shims"
        )
    else:
        console.info(f"prefix: {effective.choice.value} (from {effective.choice.source})")
    for warning in effective.warnings:
        console.warn(warning)


# How aoti_shim_check()'s POST_BUILD step appears in the generated build files.
_CHECK_COMMAND = re.compile(r"(?:-m aoti_shim|aoti-shim)\S*\s+check\s")


def _build_runs_check(build_dir: Path) -> bool:
    """Whether the configured build (Ninja or Makefiles) runs the checker after linking."""
    files = [build_dir / "build.ninja", *sorted(build_dir.glob("CMakeFiles/*.dir/build.make"))]
    for path in files:
        try:
            if _CHECK_COMMAND.search(path.read_text(encoding="utf-8", errors="replace")):
                return True
        except OSError:
            continue
    return False


def _note_inplace() -> None:
    # Inplace builds use the source tree as the build tree.
    if _build_runs_check(Path.cwd()):
        console.info(
            "editable.mode = inplace: the editable wheel carries no binaries; this build runs "
            "aoti_shim_check() in CMake after linking, and that gates it"
        )
        return
    console.info(
        "editable.mode = inplace: the editable wheel carries no binaries, so this backend checks nothing; "
        "inplace builds are covered by aoti_shim_check() in CMake"
    )
    console.warn(
        "this inplace build does not run aoti_shim_check(): nothing checks it; "
        "add aoti_shim_check(<target>) to CMakeLists.txt or use editable.mode = redirect"
    )


@contextlib.contextmanager
def _torch_for_children(where: TorchLocation | None) -> Iterator[None]:
    """Tell CMake-side checks (aoti_shim_check) where the target env's torch is, for this build only."""
    if where is None:
        yield
        return
    # Absolute even when the user's value was relative: CMake runs its checks in the build folder.
    before = os.environ.get(TORCH_ENV_VAR)
    os.environ[TORCH_ENV_VAR] = str(where.site)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(TORCH_ENV_VAR, None)
        else:
            os.environ[TORCH_ENV_VAR] = before


def _locate_torch(prepared: Prepared, required: bool) -> TorchLocation | None:
    """Find the reference torch before building: a missing one fails in a second, not after CMake."""
    if "torch" not in prepared.gate.against:
        return None
    try:
        where = find_torch()
    except AotiShimError:
        if required:
            raise
        return None
    console.info(f"against: torch at {where.lib} (found via {where.how})")
    return where


def _build(
    state: Literal["wheel", "editable"],
    wheel_directory: str,
    config_settings: dict[str, Any] | None,
    metadata_directory: str | None,
) -> str:
    with _pep517_boundary():
        prepared = prepare(_pyproject(), config_settings)
        plan = _plan(prepared, state)
        _report_prefix(plan.prefix)
        if state == "editable" and plan.rebuild_on_import:
            console.warn(
                "editable rebuild-on-import: rebuilds on import bypass this backend and are not checked; "
                "add aoti_shim_check(<target>) in CMake"
            )
        if state == "editable" and plan.rebuild_dir:
            console.warn(
                f"editable.rebuild-dir = {plan.rebuild_dir}: the compiled libraries are installed there, "
                "not into the editable wheel, so this backend cannot check them; add aoti_shim_check(<target>) in CMake"
            )
        inplace = state == "editable" and plan.editable_mode == "inplace"
        torch = _locate_torch(prepared, required=not inplace)
    hook = _skbuild.build_editable if state == "editable" else _skbuild.build_wheel
    # scikit-build-core reports its own failures (CMake errors) and exits.
    with _torch_for_children(torch):
        name = hook(wheel_directory, prepared.skbuild_settings, metadata_directory)
    with _pep517_boundary():
        if inplace:
            _note_inplace()
            return name
        from aoti_shim.plugin.gate import check_wheel

        wheel = Path(wheel_directory) / name
        try:
            check_wheel(wheel, plan.prefix.choice, prepared.gate, Path.cwd(), torch)
        except BaseException:
            # Whatever went wrong, an unchecked wheel must not reach the installer.
            wheel.unlink(missing_ok=True)
            raise
    return name


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    return _build("wheel", wheel_directory, config_settings, metadata_directory)


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    return _build("editable", wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    return _skbuild.build_sdist(sdist_directory, _passed_on(config_settings))


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _skbuild.get_requires_for_build_sdist(_passed_on(config_settings))


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _skbuild.get_requires_for_build_wheel(_passed_on(config_settings))


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _skbuild.get_requires_for_build_editable(_passed_on(config_settings))


# scikit-build-core offers the metadata hooks only when its metadata cannot depend on a
# failed build; offer exactly what it offers.
if hasattr(_skbuild, "prepare_metadata_for_build_wheel"):

    def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: dict[str, Any] | None = None) -> str:
        return _skbuild.prepare_metadata_for_build_wheel(metadata_directory, _passed_on(config_settings))

    __all__ += ["prepare_metadata_for_build_wheel"]

if hasattr(_skbuild, "prepare_metadata_for_build_editable"):

    def prepare_metadata_for_build_editable(
        metadata_directory: str, config_settings: dict[str, Any] | None = None
    ) -> str:
        return _skbuild.prepare_metadata_for_build_editable(metadata_directory, _passed_on(config_settings))

    __all__ += ["prepare_metadata_for_build_editable"]
