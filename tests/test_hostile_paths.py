"""Every command, every path it reads or writes, every hostile kind of path: one matrix.

Issue 33 point 4. Each case gives one command one hostile path in one role (the others
valid) and asserts: the documented exit status (a hang is a failure: the child is killed
after TIMEOUT), one line on standard error naming the path, no traceback, and nothing
replaced: the hostile node is as it was, the input an output names is byte for byte and
inode for inode as it was, and no temp file is left beside it. The commands run in
forked children (tests/forked_cli.py): real processes, hundreds of them in seconds.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from aoti_shim.cli import build_parser, main
from aoti_shim.errors import EXIT_TOOL_ERROR, EXIT_USAGE
from forked_cli import run_forked
from smoke_support import PREFIX, build_fake_libs
from wheel_support import make_wheel

TIMEOUT = 10.0  # seconds; every case answers in well under one

# The kinds of hostile path, by the shape of the role they are given to.
INPUT_FILE = ("fifo", "device", "folder", "dangling", "loop", "unreadable")
FILE_OR_FOLDER = ("fifo", "device", "dangling", "loop", "unreadable")  # a folder is a valid input
FOLDER = ("fifo", "device", "file", "dangling", "loop", "unreadable")
OUTPUT = ("fifo", "device", "folder", "dangling", "loop", "unwritable", "same", "symlink", "hardlink")
# The OUTPUT kinds that name one of the command's inputs: a usage error (README's exit codes).
NAMES_AN_INPUT = ("same", "symlink", "hardlink")
OUTPUT_FOLDER = ("fifo", "device", "file", "dangling", "loop", "unwritable")


@dataclass(frozen=True)
class World:
    """One case's own valid inputs (copies: a bug cannot spoil another case's)."""

    root: Path
    shim: Path
    model: Path
    wheel: Path
    torch_wheel: Path
    manifest: Path
    include: Path
    header: Path
    site: Path
    suppressions: Path
    pyproject: Path


@dataclass(frozen=True)
class Role:
    """A path a command reads or writes; ``invoke`` gives the call with the hostile path in it."""

    name: str
    kinds: tuple[str, ...]
    invoke: Callable[[World, str], Callable[[], int]]
    code: int = EXIT_TOOL_ERROR
    protects: Callable[[World], Path] | None = None  # the input an output must not be
    env: Callable[[str], dict[str, str]] = field(default=lambda _h: {})
    skip: tuple[str, ...] = ()


def cli(*argv: str) -> Callable[[], int]:
    return lambda: main(list(argv))


def _backend_report(w: World, hostile: str) -> Callable[[], int]:
    def call() -> int:
        from aoti_shim.plugin import gate
        from aoti_shim.plugin.boundary import pep517_boundary
        from aoti_shim.plugin.prefix import PrefixChoice
        from aoti_shim.plugin.settings import GateSettings

        with pep517_boundary():
            gate.check_wheel(w.wheel, PrefixChoice(None, "not set"), GateSettings(against=(), report=hostile), w.root)
        return 0

    return call


def _summary(hostile: str) -> dict[str, str]:
    return {"GITHUB_STEP_SUMMARY": hostile}


ROLES: tuple[Role, ...] = (
    Role("check --shim", FILE_OR_FOLDER, lambda w, h: cli("check", "--shim", h)),
    Role("check --model", FILE_OR_FOLDER, lambda w, h: cli("check", "--shim", str(w.shim), "--model", h)),
    Role("check --wheel", INPUT_FILE, lambda w, h: cli("check", "--wheel", h)),
    Role("check --against", FILE_OR_FOLDER, lambda w, h: cli("check", "--shim", str(w.shim), "--against", h)),
    Role(
        "check --suppressions",
        INPUT_FILE,
        lambda w, h: cli("check", "--shim", str(w.shim), "--suppressions", h),
        EXIT_USAGE,
    ),
    Role("check --library-path", FOLDER, lambda w, h: cli("check", "--shim", str(w.shim), "--library-path", h)),
    Role(
        "check --output", OUTPUT, lambda w, h: cli("check", "--shim", str(w.shim), "-o", h), protects=lambda w: w.shim
    ),
    Role(
        "check $GITHUB_STEP_SUMMARY",
        OUTPUT,
        lambda w, h: cli("check", "--shim", str(w.shim), "--prefix", PREFIX, "--format", "github"),
        protects=lambda w: w.shim,
        env=_summary,
    ),
    Role("scan PATH", FILE_OR_FOLDER, lambda w, h: cli("scan", h)),
    Role("scan --python", INPUT_FILE, lambda w, h: cli("scan", str(w.site), "--python", h)),
    Role("scan --suppressions", INPUT_FILE, lambda w, h: cli("scan", str(w.site), "--suppressions", h), EXIT_USAGE),
    Role(
        "scan --output",
        OUTPUT,
        lambda w, h: cli("scan", str(w.site), "--suppressions", str(w.suppressions), "-o", h),
        protects=lambda w: w.suppressions,
    ),
    Role(
        "scan $GITHUB_STEP_SUMMARY",
        OUTPUT,
        lambda w, h: cli("scan", str(w.site), "--suppressions", str(w.suppressions), "--format", "github"),
        protects=lambda w: w.suppressions,
        env=_summary,
    ),
    Role(
        "snapshot TORCH_LIB_DIR|WHEEL",
        FILE_OR_FOLDER,
        lambda w, h: cli("snapshot", h, "-o", str(w.root / "out.json.gz")),
    ),
    Role(
        "snapshot --output",
        OUTPUT,
        lambda w, h: cli("snapshot", str(w.torch_wheel), "-o", h),
        protects=lambda w: w.torch_wheel,
    ),
    Role(
        "rename-header --manifest",
        INPUT_FILE,
        lambda w, h: cli("rename-header", "--output", str(w.root / "out.h"), "--manifest", h),
    ),
    Role(
        "rename-header --shim-include",
        FOLDER,
        lambda w, h: cli("rename-header", "--output", str(w.root / "out.h"), "--shim-include", h),
    ),
    Role(
        "rename-header --torch-include",
        FOLDER,
        lambda w, h: cli("rename-header", "--output", str(w.root / "out.h"), "--torch-include", h),
    ),
    Role(
        "rename-header --root",
        FOLDER,
        lambda w, h: cli("rename-header", "--output", str(w.root / "out.h"), "--root", h),
    ),
    Role("rename-header --check --output", INPUT_FILE, lambda w, h: cli("rename-header", "--check", "--output", h)),
    Role(
        "rename-header --output (the manifest)",
        OUTPUT,
        lambda w, h: cli("rename-header", "--output", h, "--manifest", str(w.manifest)),
        protects=lambda w: w.manifest,
    ),
    Role(
        "rename-header --output (a shim header)",
        OUTPUT,
        lambda w, h: cli("rename-header", "--output", h, "--shim-include", str(w.include)),
        protects=lambda w: w.header,
    ),
    Role(
        "rewrite-imports BLOB",
        INPUT_FILE,
        lambda w, h: cli("rewrite-imports", h, "--prefix", PREFIX, "-o", str(w.root / "out.so")),
    ),
    Role(
        "rewrite-imports --output",
        OUTPUT,
        lambda w, h: cli("rewrite-imports", str(w.model), "--prefix", PREFIX, "-o", h),
        protects=lambda w: w.model,
        # -o BLOB is BLOB rewritten in place, as without -o: documented, not hostile.
        skip=("same",),
    ),
    Role(
        "smoke --shims",
        INPUT_FILE,
        lambda w, h: cli("smoke", "--shims", h, "--cache-dir", str(w.root / "cache")),
        EXIT_USAGE,
    ),
    Role(
        "smoke --json",
        OUTPUT,
        lambda w, h: cli("smoke", "--shims", str(w.shim), "--json", h, "--cache-dir", str(w.root / "cache")),
        EXIT_USAGE,
        protects=lambda w: w.shim,
    ),
    Role(
        "smoke --cache-dir",
        OUTPUT_FOLDER,
        lambda w, h: cli("smoke", "--shims", str(w.shim), "--cache-dir", h),
        EXIT_USAGE,
    ),
    Role("wheelhouse DIR", OUTPUT_FOLDER, lambda w, h: cli("wheelhouse", h)),
    Role("backend report setting", OUTPUT, _backend_report, protects=lambda w: w.pyproject),
)

CASES = [
    pytest.param(role, kind, id=f"{role.name}-{kind}") for role in ROLES for kind in role.kinds if kind not in role.skip
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The valid inputs every case copies."""
    build_parser()  # every command's module, imported once here: each fork starts with them
    from aoti_shim.plugin import gate  # noqa: F401  (the backend's, likewise)
    root = Path(tempfile.mkdtemp(prefix="aoti-shim-hostile-paths-"))
    root.chmod(0o755)
    fake = build_fake_libs(tmp_path_factory.mktemp("hostile-paths-libs"))
    shutil.copy(fake.shims, root / "shim.so")
    shutil.copy(fake.blob, root / "model.so")
    make_wheel(root / "pkg-1.0-py3-none-any.whl", {"pkg/libshim.so": fake.shims})
    (root / "torch-2.13.0-cp311-cp311-linux_x86_64.whl").write_bytes(b"PK\x05\x06" + b"\0" * 18)
    (root / "manifest.txt").write_text("aoti_torch_get_dim\n")
    (root / "include").mkdir()
    (root / "include" / "shim.h").write_text("int aoti_torch_get_dim(void* t, long* out);\n")
    (root / "site").mkdir()
    (root / "suppressions.toml").write_text("")
    (root / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "1.0"\n')
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _world(built: Path, case: Path) -> World:
    shutil.copytree(built, case, symlinks=True)
    case.chmod(0o755)
    return World(
        root=case,
        shim=case / "shim.so",
        model=case / "model.so",
        wheel=case / "pkg-1.0-py3-none-any.whl",
        torch_wheel=case / "torch-2.13.0-cp311-cp311-linux_x86_64.whl",
        manifest=case / "manifest.txt",
        include=case / "include",
        header=case / "include" / "shim.h",
        site=case / "site",
        suppressions=case / "suppressions.toml",
        pyproject=case / "pyproject.toml",
    )


def _make(kind: str, role: Role, w: World) -> Path:
    """The hostile path of ``kind`` for ``role``, made under the case's folder."""
    x = w.root / "x"
    if kind == "fifo":
        os.mkfifo(x)
    elif kind == "device":
        return Path("/dev/zero")  # reading it never ends; writing it swallows everything
    elif kind == "folder":
        x.mkdir()
    elif kind == "file":
        x.write_bytes(b"a file where a folder belongs\n")
    elif kind == "dangling":
        x.symlink_to(w.root / "nowhere")
    elif kind == "loop":
        x.symlink_to(x)
    elif kind == "unreadable":
        if role.kinds is FOLDER:
            x.mkdir()
        else:
            shutil.copy(w.shim, x)
        x.chmod(0)
    elif kind == "unwritable":
        ro = w.root / "ro"
        ro.mkdir()
        (ro / "x").write_bytes(b"old")
        (ro / "x").chmod(0o444)  # an append needs the file writable, a replacement its folder
        ro.chmod(0o555)
        return ro / "x"
    else:
        assert role.protects is not None, role.name
        target = role.protects(w)
        if kind == "same":
            return target
        if kind == "symlink":
            x.symlink_to(target)
        else:
            os.link(target, x)
    return x


def _state(path: Path) -> tuple[object, ...]:
    """What a node is, without following it: its kind, inode, link target or content hash."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return ("link", st.st_ino, os.readlink(path))
    if stat.S_ISREG(st.st_mode):
        return ("file", st.st_ino, st.st_nlink, hashlib.sha256(path.read_bytes()).hexdigest())
    if stat.S_ISDIR(st.st_mode):
        return (
            "folder",
            st.st_ino,
            stat.S_IMODE(st.st_mode),
            sorted(os.listdir(path)) if os.access(path, os.R_OK) else None,
        )
    return ("special", stat.S_IFMT(st.st_mode), st.st_ino)


def _temp_files(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.rglob(".aoti-shim-*")) if os.access(folder, os.X_OK) else []


@pytest.mark.parametrize(("role", "kind"), CASES)
def test_hostile_path(built: Path, role: Role, kind: str) -> None:
    base = Path(tempfile.mkdtemp(prefix="aoti-shim-case-"))
    try:
        w = _world(built, base / "w")
        hostile = _make(kind, role, w)
        watched = [hostile] + ([role.protects(w)] if role.protects else [])
        before = [_state(p) for p in watched]
        env = {**os.environ, "NO_COLOR": "1", **role.env(str(hostile))}
        if "GITHUB_STEP_SUMMARY" not in role.env(""):
            env.pop("GITHUB_STEP_SUMMARY", None)
        without_dac = kind in ("unreadable", "unwritable") and os.geteuid() == 0
        ran = run_forked(role.invoke(w, str(hostile)), env=env, cwd=w.root, without_dac=without_dac, timeout=TIMEOUT)
        assert ran.code is not None, f"hung for {TIMEOUT} s: {ran.stderr}"
        assert "Traceback" not in ran.stderr + ran.stdout, ran.stderr[-700:]
        lines = ran.stderr.strip().splitlines()
        assert len(lines) == 1, ran.stderr
        assert lines[0].startswith("aoti-shim: error:") and str(hostile) in lines[0], lines[0]
        # An output naming one of the inputs is a bad argument, whatever else the role's path may fail by.
        assert ran.code == (EXIT_USAGE if kind in NAMES_AN_INPUT else role.code), (ran.code, lines[0])
        assert [_state(p) for p in watched] == before
        assert _temp_files(w.root) == []
    finally:
        _remove(base)


def _remove(base: Path) -> None:
    """The case's folder, gone: its mode-000 and 0555 folders opened first (a user who is not
    root could not empty them)."""
    for folder in [p for p in base.rglob("*") if p.is_dir() and not p.is_symlink()]:
        folder.chmod(0o755)
    shutil.rmtree(base, ignore_errors=True)
