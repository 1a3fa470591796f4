"""Check a freshly built wheel's libraries; a blocking finding rejects the build.

The libraries are the wheel's ELF members, and its Mach-O or PE members when its platform
tag is macOS's or Windows's (``checks/inputs/collect.py`` takes a native member only of
the wheel's platform): a wheel built on macOS is judged by dyld's lookup rules, one built
on Windows by the loader's, as ``check --wheel`` judges it.

Each member gets a role: a *shim* exports ``aoti_torch_*``-style names (prefixed or
not); a *model* (any consumer of the shim ABI: a blob, a backend, an extension) imports
them without exporting any. ``[tool.aoti-shim] shims/models`` globs over member paths
pin the members they match; the others keep the classification by symbols. Members are
extracted into a private folder and handed to the checker by their member path, so
findings and suppressions name ``pkg/libfoo.so`` rather than a temp file.
"""

from __future__ import annotations

import fnmatch
import os
import tempfile
from pathlib import Path

from aoti_shim.atomic import destination, write_text_atomically
from aoti_shim.checks import CheckSettings, render, run_check
from aoti_shim.checks.abi.prefix import SHIM_MARK as SHIM_ABI_MARK
from aoti_shim.checks.abi.prefix import infer, separator_warning
from aoti_shim.checks.check.native import FORMAT_NAMES
from aoti_shim.checks.check.run import library_folders
from aoti_shim.checks.inputs import collect as inputs
from aoti_shim.checks.loader.roles import Roles, classify_by_symbols, symbol_names
from aoti_shim.checks.references.reference import resolve_snapshot_name, snapshot_hint
from aoti_shim.checks.report.model import Report
from aoti_shim.errors import EXIT_BLOCKING, AotiShimError, InputError, UsageError
from aoti_shim.plugin import console
from aoti_shim.plugin.prefix import PrefixChoice
from aoti_shim.plugin.settings import TABLE, GateSettings
from aoti_shim.torch_location import TorchLocation

# Where the check's report goes when the `report` setting names no file: the project's
# build folder, which pip leaves in place (and which it shows nothing of on success).
DEFAULT_REPORT = "build/aoti-shim-report.txt"


class BuildRejected(AotiShimError):
    """The wheel failed the check; it has been (or must be) deleted."""

    exit_code = EXIT_BLOCKING


def member_format(wheel: Path) -> str:
    """How messages name the wheel's libraries: "Mach-O" or "PE" for a macOS or Windows
    wheel, else "ELF" (a Linux wheel's, and the words an ELF build always printed)."""
    return FORMAT_NAMES[inputs.wheel_platform_format(str(wheel)) or "elf"]


def extract_members(wheel: Path, dest: Path) -> list[str]:
    """Copy the library members of ``wheel`` under ``dest`` by member path; return those paths:
    its ELF members, and its Mach-O or PE ones of the wheel's platform.

    The checker's one wheel reader: unsafe or duplicate member names, too many members and
    too many inflated bytes refuse the wheel (skipping a member would leave it unchecked).
    """
    try:
        return inputs.extract_elf_members(wheel, dest, display=wheel.name, native=True)
    except InputError as e:
        raise InputError(f"{e}; it is not installed") from None


def _by_globs(members: list[str], globs: tuple[str, ...], key: str, what: str) -> list[str]:
    picked = [m for m in members if any(fnmatch.fnmatchcase(m, g) for g in globs)]
    for g in globs:
        if not any(fnmatch.fnmatchcase(m, g) for m in members):
            raise UsageError(
                f"{TABLE} {key}: {g!r} matches no {what} member of the wheel (members: {', '.join(members) or 'none'})"
            )
    return picked


def classify(members: list[str], root: Path, gate: GateSettings, what: str = "ELF") -> Roles:
    """Each member's role: ``shims``/``models`` globs pin the members they match; every other
    member is classified by its symbols, as without globs (a pinned list never leaves a
    shim or a model of the wheel unchecked). ``what`` names the members in errors."""
    shims = _by_globs(members, gate.shims, "shims", what) if gate.shims else []
    models = [m for m in (_by_globs(members, gate.models, "models", what) if gate.models else []) if m not in shims]
    rest = classify_by_symbols([m for m in members if m not in shims and m not in models], root)
    return Roles(tuple(shims) + rest.shims, tuple(models) + rest.models, rest.unchecked, rest.extensions)


def _references(
    gate: GateSettings, project_dir: Path, torch: TorchLocation | None, against_source: str
) -> tuple[str, ...]:
    """The checker's ``against`` list.

    Items: ``torch`` (the target environment's), the name of a snapshot shipped with
    aoti-shim (``torch-2.13.0+cpu``: no torch needed at build time), or a path,
    relative to the project.
    """
    against: list[str] = []
    for item in gate.against:
        if item == "torch":
            if torch is None:
                raise UsageError("against = \"torch\" but no torch location was resolved before the build")
            # The folder found before the build, absolute: the check runs from a temp folder,
            # where $AOTI_SHIM_TORCH (which "torch" would consult first) may name nothing.
            against.append(os.path.abspath(torch.lib))
            continue
        path = Path(item) if os.path.isabs(item) else project_dir / item
        shipped = None if path.exists() else resolve_snapshot_name(item)
        if shipped is not None:
            console.info(f"against: the shipped snapshot {item}")
            against.append(str(shipped))
            continue
        if not path.exists():
            raise UsageError(f"{against_source}: reference {item!r} does not exist ({path}){snapshot_hint(item)}")
        console.info(f"against: {path}")
        against.append(str(path))
    return tuple(against)


def carried_prefix(shims: tuple[str, ...], root: Path) -> str | None:
    """The prefix the built shim libraries really export their ``aoti_torch_*`` names with
    (C names: a Mach-O symbol's leading underscore is not part of it)."""
    try:
        return infer(n for s in shims for n in (symbol_names(root / s, s) or ([], []))[0])
    except UsageError as e:
        raise BuildRejected(f"the built shims: {e}".replace("; pass --prefix", "")) from None


def _settled_prefix(requested: PrefixChoice, carried: str | None, wheel: Path) -> str | None:
    """The prefix to check with: the one the shims carry, which must be the one asked for."""
    if carried is None:
        return requested.value
    if requested.value is None:
        console.info(f"prefix: {carried} (read from the built shims)")
        return carried
    if carried != requested.value:
        raise BuildRejected(
            f"the built shims in {wheel.name} carry the prefix {carried!r}, not {requested.value!r} "
            f"(from {requested.source}): CMake got another prefix (a FORCE'd cache entry from CMAKE_ARGS=\"-C ...\", "
            "or aoti_shim_prefix(<target> PREFIX ...) in CMakeLists.txt); the wheel was deleted; nothing is installed"
        )
    console.info(f"prefix: {carried} (the built shims carry it)")
    return carried


def check_wheel(
    wheel: Path,
    prefix: PrefixChoice,
    gate: GateSettings,
    project_dir: Path,
    torch: TorchLocation | None = None,
    *,
    against_source: str = f"{TABLE} against",
) -> None:
    """Print the check of ``wheel``; raise BuildRejected when it must not be installed.

    ``prefix`` is the one the build asked CMake for (None: the project decides); the
    check uses the prefix the built shims carry, and rejects the wheel when the two
    differ. ``torch`` is the target environment's torch, found before the build
    (needed when ``gate.against`` names ``torch``).
    """
    report_inputs = _report_inputs(wheel, gate, project_dir)
    if gate.report:
        destination(
            _report_path(gate.report, project_dir), what=f"{TABLE} report", inputs=report_inputs
        )  # before the check
    with tempfile.TemporaryDirectory(prefix="aoti-shim-gate-") as tmp:
        root = Path(tmp)
        members = extract_members(wheel, root)
        roles = classify(members, root, gate, member_format(wheel))
        if not _announce(wheel, roles):
            return
        checked_prefix = _settled_prefix(prefix, carried_prefix(roles.shims, root), wheel)
        settings = _check_settings(
            roles, root, checked_prefix, _references(gate, project_dir, torch, against_source), gate, project_dir
        )
        report = run_check(settings)
        console.block(render(report, "text", color=console.use_color()))
        code = report.exit_code(gate.fail_on)
    # The backend warned of it before the build, but pip hides a passing build's output: the
    # verdict, which the report file keeps, says it again.
    warning = (
        separator_warning(checked_prefix, prefix.source if prefix.value else "the built shims")
        if checked_prefix
        else None
    )
    _conclude(wheel, report, code, gate, project_dir, report_inputs, warning)


def _announce(wheel: Path, roles: Roles) -> bool:
    """Say which member plays which role; False when nothing is to be checked (a warning),
    BuildRejected when the members look like shims whose exports were hidden."""
    what = member_format(wheel)
    console.info(f"checking {wheel.name}" + ("" if what == "ELF" else f" ({what} members, by its platform tag)"))
    console.info(f"  shims: {', '.join(roles.shims) or '-'}")
    console.info(f"  models and other shim-ABI consumers: {', '.join(roles.models) or '-'}")
    if roles.extensions:
        console.info(
            f"  not checked (stable-ABI extensions: import libtorch's {SHIM_ABI_MARK}*, no AOTInductor model): "
            f"{', '.join(roles.extensions)}"
        )
    if roles.unchecked:
        console.info(f"  not checked (no {SHIM_ABI_MARK}* names): {', '.join(roles.unchecked)}")
    if roles.shims or roles.models:
        return True
    if roles.unchecked and not roles.extensions:
        # A project built by this backend builds shims: libraries with no shim name at all
        # are most often a shim library whose exports were hidden (it built green before).
        # A DLL exports only what is marked dllexport (or listed in a .def file).
        hidden = (
            "a DLL exports only what is marked; mark each shim function __declspec(dllexport)" if what == "PE" else
            "a shim library compiled with -fvisibility=hidden (or limited by a version script) exports nothing; "
            "mark each shim function __attribute__((visibility(\"default\")))"
        )
        raise BuildRejected(
            f"no {what} member of {wheel.name} exports a shim name ({', '.join(roles.unchecked)}): {hidden}; "
            "the wheel was deleted; nothing is installed"
        )
    console.warn(f"no {what} member of {wheel.name} exports or imports {SHIM_ABI_MARK}* names: nothing to check")
    return False


def _check_settings(
    roles: Roles,
    root: Path,
    checked_prefix: str | None,
    against: tuple[str, ...],
    gate: GateSettings,
    project_dir: Path,
) -> CheckSettings:
    """The checker's settings for the members extracted under ``root``."""
    suppressions = None
    if gate.suppressions:
        path = Path(gate.suppressions)
        suppressions = str(path if path.is_absolute() else project_dir / path)
    return CheckSettings(
        shims=tuple(str(root / m) for m in roles.shims),
        models=tuple(str(root / m) for m in roles.models),
        against=against,
        prefix=checked_prefix,
        suppressions=suppressions,
        inline_suppressions=gate.suppress,
        # Findings and suppressions name members (pkg/libfoo.so), not temp files.
        display_root=str(root),
        # The members' run paths are the installed wheel's: one leaving the wheel finds
        # another distribution where this (the build) environment has it (NVIDIA's
        # libcudart wheel), else it is a warning.
        wheel_roots=(str(root),),
        library_path=library_folders(gate.library_path, f"{TABLE} library-path", base=project_dir, error=UsageError),
        missing_fix=f"give the library a RUNPATH ($ORIGIN/...) that finds it, name its folder in {TABLE} "
            "library-path, "
        "or suppress LOAD_FAILURE for it in [[tool.aoti-shim.suppress]]",
    )


def _conclude(
    wheel: Path,
    report: Report,
    code: int,
    gate: GateSettings,
    project_dir: Path,
    report_inputs: tuple[Path, ...],
    warning: str | None = None,
) -> None:
    """The verdict: printed when the wheel passes (a failure's is the error line the build
    ends with), kept with the table in the report file, raised when the wheel fails."""
    verdict = f"{wheel.name}: passed the check of {_what_was_checked(report)}"
    if warning:
        verdict += f"; warning: {warning}"
    if code:
        if report.blocking:
            what = f"{len(report.blocking)} blocking finding(s)"
        else:
            what = f"{len(report.warnings)} warning(s) with fail-on = {gate.fail_on}"
        verdict = f"{what} in {wheel.name}: the wheel was deleted; nothing is installed"
    else:
        console.info(verdict)
    # pip shows nothing of a passing build: the report file (by default in the project's
    # build folder) is where its verdict stays.
    table = render(report, "text", color=False)
    if gate.report:
        _write_report(gate.report, project_dir, table, verdict, report_inputs)
    else:
        try:
            _write_report(DEFAULT_REPORT, project_dir, table, verdict, report_inputs)
        except AotiShimError as e:  # a read-only source tree: the build is no worse for it
            console.warn(f"{e}; set {TABLE} report to keep the check's report elsewhere")
    if code:
        raise BuildRejected(verdict, exit_code=code)


def _what_was_checked(report: Report) -> str:
    """'1 shim library and 2 models against torch 2.13.0+cpu': the roles counted, each
    --against item by the torch it is."""
    shims = sum(1 for a in report.artifacts if a.role == "shim")
    models = len(report.artifacts) - shims
    roles = f"{shims} shim librar{'y' if shims == 1 else 'ies'} and {models} model{'' if models == 1 else 's'}"
    if not report.against:
        return f"{roles}, against no torch (against = []: prefixes only)"
    refs = ", ".join(f"torch {a.torch_version}" if a.torch_version else a.item for a in report.against)
    return f"{roles} against {refs}"


def _report_path(where: str, project_dir: Path) -> Path:
    return Path(where) if os.path.isabs(where) else project_dir / where


def _report_inputs(wheel: Path, gate: GateSettings, project_dir: Path) -> tuple[Path, ...]:
    """What the report must never replace: the wheel, pyproject.toml, the suppressions file."""
    suppressions = (_report_path(gate.suppressions, project_dir),) if gate.suppressions else ()
    return (wheel, project_dir / "pyproject.toml", *suppressions)


def _write_report(where: str, project_dir: Path, table: str, verdict: str, inputs: tuple[Path, ...] = ()) -> None:
    """The check's table and verdict, where ``report`` says: pip hides the backend's output
    on success (and shows it only on failure or under ``pip -v``)."""
    path = _report_path(where, project_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise AotiShimError(f"{TABLE} report {path}: cannot create its folder: {e.strerror or e}") from None
    write_text_atomically(path, f"{table.rstrip()}\n{verdict}\n", what=f"{TABLE} report", inputs=inputs)
    console.info(f"report: {path}")
