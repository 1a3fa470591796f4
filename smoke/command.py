"""``aoti-shim smoke``: the whole chain on real models, and the failure it prevents."""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

from aoti_shim.arguments import path
from aoti_shim.atomic import destination
from aoti_shim.checks.abi.prefix import DEFAULT_PREFIX, given_or_built
from aoti_shim.errors import EXIT_BLOCKING, EXIT_OK, AotiShimError, UsageError
from aoti_shim.extras import install_line
from aoti_shim.guard import input_file, output_folder
from aoti_shim.paths import shim_library
from aoti_shim.smoke import model_names
from aoti_shim.smoke.compile import default_cache_dir, zero_fallback_scope
from aoti_shim.smoke.models import BUNDLED, user_case
from aoti_shim.smoke.pipeline import BlockingFindings, MissingShims, SmokeSettings, run_smoke
from aoti_shim.smoke.report import (
    STREAM_LABELS,
    STREAM_NEW,
    STREAM_NONE,
    StepLog,
    render_table,
    summary_line,
    write_json,
)
from aoti_shim.smoke.unsupported import workaround
from aoti_shim.torch_location import from_environment


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "smoke",
        help="compile models with AOTInductor, prefix them, run them next to a global libtorch",
        description=(
            "Compile the bundled models (or yours) with AOTInductor (link_libtorch=False), make each "
            "blob import prefixed shim names by the source and the binary route, check them, run them "
            "through the shim library in a process where libtorch is global, compare with eager torch, "
            "and prove from the dynamic linker where every aoti_torch import bound. The unprefixed "
            "blob is run too, as the control: it binds to libtorch."
        ),
    )
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where to compile and run (auto: cuda when a GPU is visible)")
    parser.add_argument("--model", action="append", default=[], metavar="NAME|MODULE:CALLABLE",
                        help=model_names.help_text())
    parser.add_argument("--shims", type=path, metavar="LIB",
                        help="the shim library (default: the reference shims installed with aoti-shim)")
    parser.add_argument("--prefix", help="the shim prefix (default: read from the shim library's exports)")
    parser.add_argument("--route", action="append", choices=("source", "binary"), default=[],
                        help="only this route; repeatable (default: both)")
    parser.add_argument("--compile", choices=("zero-fallback", "default"), default="zero-fallback",
                        help="zero-fallback (default): autotuned GEMM/convolution templates and attention as math, "
                             f"{zero_fallback_scope()}; default: Inductor's plain compile (faster), whose blobs "
                             "call the shims' cuBLAS, cuDNN and attention fallbacks")
    parser.add_argument("--stream", choices=("new", "default"),
                        help="the CUDA stream each run passes: new (a stream of its own, made current: the default on "
                        "CUDA, what real runtimes expect) or default (the legacy default stream, a null pointer)")
    parser.add_argument("--no-control", action="store_true", help="skip the unprefixed control run")
    parser.add_argument("--json", type=path, metavar="FILE", help="also write the table as JSON")
    parser.add_argument(
        "--cache-dir", type=path, help="compiled models are kept here (default: ~/.cache/aoti-shim/smoke)"
    )
    parser.add_argument("--iterations", type=int, default=30, help="timed runs per blob (default: 30)")
    parser.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="OpenMP threads for the runs (OMP_NUM_THREADS; default: $OMP_NUM_THREADS when set, else 1: "
        "one thread gives steady median timings on a shared machine)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    parser.set_defaults(run=run)


def _install_torch() -> str:
    return install_line("torch")


def _require_torch() -> None:
    """Say how to get torch before anything needs it (finding it imports nothing)."""
    if importlib.util.find_spec("torch") is None:
        raise UsageError(f"smoke compiles and runs models with torch, which is not installed: {_install_torch()}")


def _threads(given: int | None, environ: os._Environ[str] | dict[str, str]) -> tuple[int | None, str]:
    """The OpenMP threads of the timed runs, and where that number came from.

    One by default: on a loaded 2-core machine OpenMP's spinning threads made the same kernels
    read 18,314 us and 34 us in one table; a user's $OMP_NUM_THREADS is kept as it is.
    """
    if given is not None:
        return given, "--threads"
    if environ.get("OMP_NUM_THREADS", "").strip():
        return None, f"$OMP_NUM_THREADS={environ['OMP_NUM_THREADS'].strip()}"
    return 1, "the default; --threads N for more"


def _cuda_available() -> bool:
    with warnings.catch_warnings():
        # torch warns on import when numpy is absent; the smoke run does not need it.
        warnings.simplefilter("ignore")
        try:
            import torch
        except ImportError as e:
            raise UsageError(f"smoke needs torch, which cannot be imported ({e}): {_install_torch()}") from None

        return bool(torch.cuda.is_available())


def _resolve_device(choice: str) -> str:
    if choice == "cpu":
        return choice
    available = _cuda_available()
    if choice == "cuda" and not available:
        raise UsageError("--device cuda: torch sees no CUDA device")
    return "cuda" if available else "cpu"


def _prefix_of(library: Path, given: str | None, *, user_library: bool) -> str:
    found = given_or_built(given, library)
    if found is None and user_library:
        # Guessing our own default would only fail later, as missing shims.
        raise UsageError(f"--shims {library} exports no prefixed aoti_torch names; pass --prefix")
    return found or DEFAULT_PREFIX


def _say_workarounds(names: list[str], prefix: str) -> None:
    """Known gaps of the reference shims get their workaround, on stderr (stdout keeps
    the bare names, one a line, for scripts)."""
    for name in names:
        fix = workaround(name, prefix)
        if fix is not None:
            print(f"aoti-shim smoke: {name} is unsupported by the reference shims; workaround: {fix}", file=sys.stderr)


def _paths(args: argparse.Namespace) -> tuple[Path, Path]:
    """The shim library and the cache folder, every path refused before anything compiles:
    a FIFO, a device, a link to nowhere or in a loop, --json onto the shim library."""
    if args.json is not None and not Path(os.path.realpath(args.json)).parent.is_dir():
        raise UsageError(f"--json {args.json}: folder {args.json.parent} does not exist")
    if args.json is not None and args.json.is_dir():
        raise UsageError(f"--json {args.json}: is a directory")
    if args.shims is not None and not os.path.lexists(args.shims):
        raise UsageError(f"--shims {args.shims}: no such file")
    if args.shims is not None:
        input_file(args.shims, what="--shims", error=UsageError)
    library = Path(os.path.realpath(args.shims)) if args.shims else shim_library()
    if not library.is_file():
        raise UsageError(f"--shims {args.shims}: no such file")
    if args.json is not None:
        try:
            destination(args.json, what="--json", inputs=(library,))
        except AotiShimError as e:
            raise UsageError(str(e)) from None
    cache_dir = Path(output_folder(args.cache_dir or default_cache_dir(), what="--cache-dir", error=UsageError))
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--cache-dir {cache_dir}: cannot create it: {e.strerror}") from None
    return library, cache_dir


def _check_models(specs: list[str]) -> None:
    """Fail fast on a bad --model, before compiling anything, naming the nearest known one."""
    for spec in specs:
        if ":" in spec:
            try:
                user_case(spec, os.getcwd())
            except UsageError as e:
                raise UsageError(f"{e}{model_names.hint(spec)}") from None
        elif spec not in BUNDLED:
            raise UsageError(
                f"--model {spec}: not a bundled model ({', '.join(BUNDLED)}) nor "
                f"module:callable{model_names.hint(spec)}"
            )


def run(args: argparse.Namespace) -> int:
    _require_torch()
    if args.iterations < 1:
        raise UsageError("--iterations must be at least 1")
    if args.threads is not None and args.threads < 1:
        raise UsageError("--threads must be at least 1")
    _check_models(args.model)
    # A bad $AOTI_SHIM_TORCH (the source route's headers, the checker's torch) fails now, as
    # everywhere else (exit 1), not as a FAIL row after the models compiled.
    from_environment()
    library, cache_dir = _paths(args)
    device = _resolve_device(args.device)
    threads, threads_from = _threads(args.threads, os.environ)
    work_dir = Path(tempfile.mkdtemp(prefix="aoti-shim-smoke-"))
    try:
        settings = SmokeSettings(
            device=device,
            models=tuple(args.model) or tuple(BUNDLED),
            prefix=_prefix_of(library, args.prefix, user_library=args.shims is not None),
            shim_library=library,
            cache_dir=cache_dir,
            work_dir=work_dir,
            routes=tuple(dict.fromkeys(args.route)) or ("source", "binary"),
            control=not args.no_control,
            iterations=args.iterations,
            threads=threads,
            compile=args.compile,
            stream=_resolve_stream(args.stream, device),
        )
        emit = (lambda _m: None) if args.quiet else (lambda m: print(f"smoke {m}", file=sys.stderr, flush=True))
        try:
            report = run_smoke(settings, StepLog(planned_steps(settings), emit))
        except MissingShims as e:
            print(f"aoti-shim smoke: the blobs import {len(e.names)} shim function(s) that {library} "
                  "does not define; nothing was run:", file=sys.stderr)
            for name in e.names:
                print(name)
            _say_workarounds(e.names, settings.prefix)
            return EXIT_BLOCKING
        except BlockingFindings as e:
            print(e.text)
            print(f"aoti-shim smoke: {e}; nothing was run", file=sys.stderr)
            return EXIT_BLOCKING
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    shown_threads = (
        f"OMP_NUM_THREADS={threads} ({threads_from})" if threads is not None else f"OpenMP threads: {threads_from}"
    )
    print(f"device {report.device}, torch {report.torch_version}, prefix {report.prefix}, shims {report.shim_library}, "
          f"{shown_threads}, stream {STREAM_LABELS[report.stream]}")
    print(render_table(report))
    for row in report.rows:
        for note in row.notes:
            print(f"note: {row.model} ({row.route_label}): {note}")
    if args.json is not None:
        write_json(report, args.json, (library,))  # an unwritable file is a one-line AotiShimError
    if not report.ok:
        print("aoti-shim smoke: FAILED (see the result column)", file=sys.stderr)
        return EXIT_BLOCKING
    print(summary_line(report))
    return EXIT_OK


def _resolve_stream(choice: str | None, device: str) -> str:
    """The stream the runs pass: a stream of their own on CUDA unless asked; none on the CPU."""
    if device != "cuda":
        return STREAM_NONE
    return choice or STREAM_NEW


def planned_steps(settings: SmokeSettings) -> int:
    """Compiles, source-route builds and runs the smoke run will start, for the counter."""
    routes = set(settings.routes)
    compiles = int("binary" in routes or settings.control) + int("source" in routes)
    builds = int("source" in routes)
    runs = len(routes) + int(settings.control)
    return len(settings.models) * (compiles + builds + runs)
