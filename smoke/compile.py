"""Compile models in a child process and cache the artefacts.

The cache key holds everything that changes the blob: torch version, model (and
the source of a user's model), device, route and the compile settings version.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from aoti_shim.children import python_argv
from aoti_shim.errors import AotiShimError, UsageError
from aoti_shim.extras import install_line
from aoti_shim.smoke.compile_worker import EXIT_USER_MODEL

_HERE = Path(__file__).resolve().parent
# Autotuning a big user model on a GPU takes minutes; an hour means something is stuck.
COMPILE_TIMEOUT_S = 3600


def _settings_digest() -> str:
    """Changes whenever the bundled models or the compile options change."""
    digest = hashlib.sha256()
    for name in ("models.py", "compile_worker.py", "compile.py"):
        digest.update((_HERE / name).read_bytes())
    return digest.hexdigest()[:16]


# How a model is compiled (aoti-shim smoke --compile): "zero-fallback" generates every GEMM
# and convolution (autotuned templates) and lowers attention to math, so the blob needs no
# fallback op; "default" is Inductor's plain compile (no autotuning, PyTorch's own attention
# choice), whose blobs call the shims' fallback ops (cuBLAS GEMMs, cuDNN convolutions,
# fused attention).
COMPILES = ("zero-fallback", "default")
# Where "no fallback op" holds: the fallback ops a zero-fallback blob still imports, per device.
# Inductor's CPU backend has a GEMM template but no convolution template, so on the CPU a
# convolution stays ATen's (torch 2.13.0+cpu: the bundled convnet imports aoti_torch_cpu_convolution).
ZERO_FALLBACK_LEFT: dict[str, tuple[str, ...]] = {"cuda": (), "cpu": ("cpu_convolution",)}


def zero_fallback_scope() -> str:
    """Where the zero-fallback promise holds, for the help and the docs (held to this table)."""
    where = {"cpu": "the CPU", "cuda": "CUDA"}
    clean = " and ".join(where[d] for d, ops in ZERO_FALLBACK_LEFT.items() if not ops)
    left = "; ".join(
        f"on {where[d]} it still imports {', '.join(ops)} (Inductor has no CPU convolution template)"
        for d, ops in ZERO_FALLBACK_LEFT.items()
        if ops
    )
    return f"no fallback op in the blob on {clean}" + (f"; {left}" if left else "")


@dataclass(frozen=True)
class CompileRequest:
    model: str  # a bundled name or a user's module:callable
    device: str  # "cpu" or "cuda"
    route: str  # "binary" (a compiled .so) or "source" (package_cpp_only)
    # The source route's prefix for torch's own aot_inductor.shim_symbol_prefix, only where the
    # installed torch has that option (torch_has_native_prefix); "" otherwise, the key unchanged.
    prefix: str = ""
    compile: str = "zero-fallback"  # one of COMPILES


@dataclass(frozen=True)
class Artefact:
    """A cached compile result."""

    request: CompileRequest
    directory: Path
    model_name: str

    @property
    def blob(self) -> Path:
        return self.directory / "blob.so"

    @property
    def package(self) -> Path:
        return self.directory / "package"

    @property
    def io_file(self) -> Path:
        return self.directory / "io.pt"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aoti-shim" / "smoke"


def torch_has_native_prefix(package: Path | None = None) -> bool:
    """Whether the torch the compile child imports declares ``aot_inductor.shim_symbol_prefix``.

    Read from its Inductor config's source, so the smoke process need not import torch.
    """
    if package is None:
        import importlib.util

        spec = importlib.util.find_spec("torch")
        if spec is None or spec.origin is None:
            return False
        package = Path(spec.origin).parent
    try:
        text = (package / "_inductor" / "config.py").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "shim_symbol_prefix" in text


def torch_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        raise AotiShimError(f"torch is not installed: {install_line('torch')}") from None


def _user_model_digest(spec: str) -> str:
    """Hash of the user's module file, so an edited model is recompiled."""
    from aoti_shim.smoke.models import user_module_file

    found = user_module_file(spec.partition(":")[0], os.getcwd())
    return "unknown" if found is None else hashlib.sha256(found.read_bytes()).hexdigest()[:16]


def cache_key(request: CompileRequest) -> str:
    parts = [
        torch_version(),
        request.device,
        request.route,
        _settings_digest(),
        os.environ.get("AOTI_SHIM_MAX_MM_CONFIGS", ""),
        os.environ.get("AOTI_SHIM_INDUCTOR_OPTIONS", ""),
        request.compile,
    ]
    if request.prefix:  # a natively prefixed package holds its prefix: one entry per prefix
        parts.append(f"native-prefix={request.prefix}")
    if ":" in request.model:
        parts += [request.model, _user_model_digest(request.model)]
        label = request.model.replace(":", "-").replace(".", "_")
    else:
        parts.append(request.model)
        label = request.model
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
    policy = "" if request.compile == "zero-fallback" else f"-{request.compile}"
    return f"{label}-{request.device}-{request.route}{policy}-{digest}"


def is_cached(request: CompileRequest, cache_dir: Path) -> bool:
    return (cache_dir / cache_key(request) / "result.json").is_file()


def _staging_owner(folder: Path) -> int | None:
    """The process id in a staging folder's name (``.<key>.<pid>.<random>``), if it has one."""
    if not folder.name.startswith("."):
        return None
    parts = folder.name[1:].rsplit(".", 2)
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def remove_abandoned_staging(cache_dir: Path) -> list[Path]:
    """Remove the staging folders of compiles whose process is gone (a run killed with
    SIGKILL runs no cleanup), and say which. Folders of live processes are theirs."""
    removed: list[Path] = []
    try:
        candidates = [p for p in cache_dir.iterdir() if p.name.startswith(".")]
    except OSError:
        return removed
    for folder in candidates:
        pid = _staging_owner(folder)
        if pid is None or pid == os.getpid() or _alive(pid) or not folder.is_dir() or folder.is_symlink():
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


@contextmanager
def _compiling(cache_dir: Path, key: str) -> Iterator[None]:
    """Held while ``key`` is compiled into ``cache_dir``: a second compile of the same key (two
    smoke runs, or two threads, sharing a cache) waits for the first and then finds its entry,
    instead of compiling the same model again beside it. Released when the process dies."""
    locks = cache_dir / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / key, "ab") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield  # (closing the file releases the lock)


def compile_cached(request: CompileRequest, cache_dir: Path, *, log: Path | None = None) -> Artefact:
    """The artefact for ``request``, compiled in a child process unless cached."""
    final = cache_dir / cache_key(request)
    done = final / "result.json"
    if done.is_file():
        return _artefact(request, final)
    cache_dir.mkdir(parents=True, exist_ok=True)
    with _compiling(cache_dir, final.name):
        if done.is_file():
            return _artefact(request, final)
        return _compile_into(request, cache_dir, final, log)


def _compile_into(request: CompileRequest, cache_dir: Path, final: Path, log: Path | None) -> Artefact:
    """Compile ``request`` in a child process into a staging folder, renamed to ``final``."""
    done = final / "result.json"
    remove_abandoned_staging(cache_dir)
    # Build in a private folder and rename it into place: a crash leaves no half entry. Its
    # name holds this process's id, so that a later run knows a killed run's folder for one.
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.{os.getpid()}.", dir=cache_dir))
    # A package_cpp_only compile gets an Inductor cache of its own, removed before the
    # entry is published. torch writes such a package's kernels to <Inductor cache>/<hash
    # of the graph's code>/<kernel name>.cubin and keeps a file that is already there, so a
    # second compile of the same graph (another dtype, other autotuning) would package the
    # first one's kernels.
    inductor_cache = staging / "inductor-cache"
    try:
        request_file = staging / "request.json"
        request_file.write_text(
            json.dumps(
                {
                    "model": request.model,
                    "device": request.device,
                    "route": request.route,
                    "prefix": request.prefix,
                    "compile": request.compile,
                    "output": str(staging),
                    "user_dir": os.getcwd(),
                }
            )
        )
        env = dict(os.environ)
        if request.route == "source":
            env["TORCHINDUCTOR_CACHE_DIR"] = str(inductor_cache)
        with open(staging / "compile.log", "wb") as sink:
            try:
                proc = subprocess.run(
                    python_argv("aoti_shim.smoke.compile_worker", str(request_file)),
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    env=env,
                    check=False,
                    timeout=COMPILE_TIMEOUT_S,
                )
            except subprocess.TimeoutExpired:
                raise AotiShimError(
                    f"compiling {request.model} ({request.device}, {request.route} route) took longer than "
                    f"{COMPILE_TIMEOUT_S} s"
                ) from None
        user_error = staging / "user_error.txt"
        if proc.returncode == EXIT_USER_MODEL and user_error.is_file():
            # The user's model is wrong, not the compiler: a usage error, said once for every
            # route; the whole torch error is kept in a log beside the cache.
            kept = cache_dir / "errors" / f"{final.name}.log"
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(staging / "compile.log", kept)
            raise UsageError(f"{user_error.read_text().strip()} (the full error: {kept})")
        if proc.returncode != 0:
            error = staging / "error.txt"
            reason = error.read_text().strip() if error.is_file() else f"the compiler exited with {proc.returncode}"
            if log is not None:
                shutil.copyfile(staging / "compile.log", log)
            raise AotiShimError(f"compiling {request.model} ({request.device}, {request.route} route) failed: {reason}")
        shutil.rmtree(inductor_cache, ignore_errors=True)
        try:
            staging.rename(final)
        except OSError:
            # Another process cached the same key first: use theirs.
            if not done.is_file():
                raise
        return _artefact(request, final)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _artefact(request: CompileRequest, directory: Path) -> Artefact:
    result = json.loads((directory / "result.json").read_text())
    return Artefact(request=request, directory=directory, model_name=result["model"])
