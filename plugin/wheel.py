"""``build_wheel`` and ``build_editable``: plan, build privately, check, then publish.

scikit-build-core builds the wheel into a private folder; it reaches pip's
``wheel_directory`` only after the check passed, by a rename. Whatever stops the
build (a blocking finding, an error, Ctrl-C, SIGTERM) removes the private folder, and
a SIGKILL leaves at most that folder in the temp directory: never an unchecked wheel
where pip or an upload step looks.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aoti_shim.errors import AotiShimError
from aoti_shim.plugin import console, cuda
from aoti_shim.plugin.boundary import pep517_boundary
from aoti_shim.plugin.config_settings import Prepared, load_pyproject, prepare
from aoti_shim.plugin.gate import check_wheel
from aoti_shim.plugin.prefix import EffectivePrefix, effective_prefix
from aoti_shim.plugin.settings import CMAKE_VAR
from aoti_shim.plugin.target_env import find_torch
from aoti_shim.signals import sigterm_deferred
from aoti_shim.torch_location import TORCH_ENV_VAR, TorchLocation

State = Literal["wheel", "editable"]


@dataclass(frozen=True)
class Plan:
    """What scikit-build-core will do, as its own settings reader resolves it."""

    prefix: EffectivePrefix
    editable_mode: str
    rebuild_on_import: bool
    rebuild_dir: str


def plan(prepared: Prepared, state: State) -> Plan:
    # The one import of scikit-build-core's internal settings reader: it resolves
    # overrides, env-bound defines and cmake.args exactly as the build will.
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
    return Plan(effective, editable.mode, rebuild, editable.rebuild_dir)


def _report_prefix(effective: EffectivePrefix) -> None:
    if effective.choice.value is None:
        console.info(
            "prefix: not set by the build settings; the CMake project decides "
            "(aoti_shim_prefix(<target> PREFIX p)) and the check reads it from the built shims"
        )
    else:
        console.info(f"prefix: {effective.choice.value} (from {effective.choice.source})")
    for warning in effective.warnings:
        console.warn(warning)


# How aoti_shim_check()'s POST_BUILD step appears in the generated build files.
_CHECK_COMMAND = re.compile(r"(?:-m aoti_shim|aoti-shim)\S*\s+check\s[^\n]*")
BuildCheck = Literal["none", "prefixes only", "against references"]


def build_runs_check(build_dir: Path) -> BuildCheck:
    """Whether the configured build (Ninja or Makefiles) runs the checker after linking, and
    whether that check has a reference to find collisions in (an ``--against``)."""
    files = [build_dir / "build.ninja", *sorted(build_dir.glob("CMakeFiles/*.dir/build.make"))]
    found: BuildCheck = "none"
    for path in files:
        try:
            commands = _CHECK_COMMAND.findall(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if any(" --against " in command for command in commands):
            return "against references"
        if commands:
            found = "prefixes only"
    return found


def note_inplace(build_dir: Path) -> None:
    """Say what gates an inplace editable build (whose wheel carries no binaries)."""
    runs = build_runs_check(build_dir)
    if runs == "against references":
        console.info(
            "editable.mode = inplace: the editable wheel carries no binaries; this build runs "
            "aoti_shim_check() in CMake after linking, and that gates it"
        )
        return
    if runs == "prefixes only":
        # A check with no reference finds no collision: that is no gate against libtorch.
        console.info("editable.mode = inplace: the editable wheel carries no binaries, so this backend checks nothing")
        console.warn(
            "this inplace build runs aoti_shim_check() with no reference (AGAINST, or [tool.aoti-shim] against = []): "
            "it checks prefixes only, not collisions with libtorch; give it a reference or use editable.mode = redirect"
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


AGAINST_ENV_VAR = "AOTI_SHIM_AGAINST"


def children_against(against: tuple[str, ...], project_dir: Path) -> str:
    """The backend's references as aoti_shim_check() without AGAINST takes them (a CMake list):
    a project-relative path made absolute (CMake checks in the build folder), a snapshot's
    name and ``torch`` as they are (``$AOTI_SHIM_TORCH`` says which torch)."""
    return ";".join(str(project_dir / item) if (project_dir / item).exists() else item for item in against)


@contextlib.contextmanager
def _for_children(where: TorchLocation | None, against: str) -> Iterator[None]:
    """Tell CMake-side checks (aoti_shim_check) what this build checks against and where the
    target env's torch is, for this build only."""
    # Absolute even when the user's value was relative: CMake runs its checks in the build folder.
    values = {AGAINST_ENV_VAR: against, **({TORCH_ENV_VAR: str(where.site)} if where is not None else {})}
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


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


@contextlib.contextmanager
def private_folder() -> Iterator[Path]:
    """A folder only this build sees, removed however the build ends.

    It is also the temp folder of everything this process makes during the build (the
    gate's extracted members, the checker's workspace), so one removal, shielded from
    a second SIGTERM, takes all of it.
    """
    folder = Path(tempfile.mkdtemp(prefix="aoti-shim-unchecked-"))
    before = tempfile.tempdir
    tempfile.tempdir = str(folder / "tmp")
    os.mkdir(tempfile.tempdir, 0o700)
    try:
        yield folder
    finally:
        with sigterm_deferred():
            tempfile.tempdir = before
            shutil.rmtree(folder, ignore_errors=True)


def publish(built: Path, wheel_directory: Path) -> Path:
    """Move a checked wheel into ``wheel_directory`` in one rename."""
    target = wheel_directory / built.name
    try:
        os.replace(built, target)
        return target
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise AotiShimError(f"{target}: cannot publish the checked wheel: {e.strerror or e}") from None
    # Another file system: copy under a name no installer or upload glob takes for a
    # wheel, then rename it in place.
    fd, part = tempfile.mkstemp(dir=wheel_directory, prefix=f".{built.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out, open(built, "rb") as src:
            shutil.copyfileobj(src, out, 1 << 20)
        os.chmod(part, 0o644)
        os.replace(part, target)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(part)
        if isinstance(e, OSError):
            raise AotiShimError(f"{target}: cannot publish the checked wheel: {e.strerror or e}") from None
        raise
    return target


def build(
    state: State,
    wheel_directory: str,
    config_settings: dict[str, Any] | None,
    metadata_directory: str | None,
) -> str:
    from scikit_build_core import build as skbuild

    with pep517_boundary():
        pyproject = load_pyproject()
        prepared, cuda_line = cuda.with_cuda(prepare(pyproject, config_settings), pyproject, os.environ)
        if cuda_line is not None:
            console.info(cuda_line)
        the_plan = plan(prepared, state)
        _report_prefix(the_plan.prefix)
        if state == "editable" and the_plan.rebuild_on_import:
            console.warn(
                "editable rebuild-on-import: rebuilds on import bypass this backend and are not checked; "
                "add aoti_shim_check(<target>) in CMake"
            )
        if state == "editable" and the_plan.rebuild_dir:
            console.warn(
                f"editable.rebuild-dir = {the_plan.rebuild_dir}: the compiled libraries are installed there, "
                "not into the editable wheel, so this backend cannot check them; add aoti_shim_check(<target>) in CMake"
            )
        inplace = state == "editable" and the_plan.editable_mode == "inplace"
        torch = _locate_torch(prepared, required=not inplace)
        hook = skbuild.build_editable if state == "editable" else skbuild.build_wheel
        with private_folder() as private:
            # scikit-build-core reports its own failures (CMake errors) and exits.
            with _for_children(torch, children_against(prepared.gate.against, Path.cwd())):
                try:
                    name = hook(str(private), prepared.skbuild_settings, metadata_directory)
                except SystemExit as e:
                    # A CUDA project without the key and without a compiler: say what fixes it.
                    hint = cuda.missing_key_hint(prepared.gate.cuda, prepared.skbuild_settings, os.environ)
                    if e.code not in (0, None) and hint is not None:
                        console.error(hint)
                    raise
            if inplace:
                # Inplace builds use the source tree as the build tree.
                note_inplace(Path.cwd())
            else:
                check_wheel(
                    private / name,
                    the_plan.prefix.choice,
                    prepared.gate,
                    Path.cwd(),
                    torch,
                    against_source=prepared.source("against"),
                )
            publish(private / name, Path(wheel_directory))
    return name
