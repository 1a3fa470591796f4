"""The smoke run, step by step: compile, prefix (both routes), check, run, prove."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TypeVar

from aoti_shim.checks import CheckSettings, render, run_check
from aoti_shim.children import python_argv
from aoti_shim.errors import EXIT_BLOCKING, AotiShimError, UsageError
from aoti_shim.smoke import bindings
from aoti_shim.smoke.compile import (
    Artefact,
    CompileRequest,
    compile_cached,
    is_cached,
    torch_has_native_prefix,
    torch_version,
)
from aoti_shim.smoke.evidence import first_error_line, runtime_copies
from aoti_shim.smoke.report import ROUTE_BINARY, ROUTE_CONTROL, ROUTE_SOURCE, STREAM_NONE, Row, SmokeReport
from aoti_shim.smoke.rewrite import RewriteSettings, rewrite_imports
from aoti_shim.smoke.source_route import SourceBuild, build_source_blob, built_blob, cmake_package_digest

ROUTES = (ROUTE_SOURCE, ROUTE_BINARY)
# A blob that hangs must not hang the smoke run (a run is seconds; importing torch included).
RUN_TIMEOUT_S = 600


@dataclass(frozen=True)
class SmokeSettings:
    device: str  # cpu | cuda (already resolved from auto)
    models: tuple[str, ...]  # bundled names or module:callable specs
    prefix: str
    shim_library: Path
    cache_dir: Path
    work_dir: Path
    routes: tuple[str, ...] = ROUTES
    control: bool = True
    iterations: int = 30
    jobs: int = 2
    threads: int | None = None  # OMP_NUM_THREADS for the runs
    compile: str = "zero-fallback"  # how the models are compiled (compile.COMPILES)
    stream: str = STREAM_NONE  # the CUDA stream the runs pass (report.STREAM_*)


class MissingShims(AotiShimError):
    """The blobs import prefixed names that the shim library does not define."""

    exit_code = EXIT_BLOCKING

    def __init__(self, names: list[str]) -> None:
        super().__init__(f"{len(names)} shim function(s) missing from the shim library")
        self.names = names


class BlockingFindings(AotiShimError):
    exit_code = EXIT_BLOCKING

    def __init__(self, text: str) -> None:
        super().__init__("the checker found blocking problems before anything ran")
        self.text = text


@dataclass(frozen=True)
class Candidate:
    """One blob to run: a model on one route."""

    row: Row
    blob: Path | None
    artefact: Artefact | None
    index: int = -1  # which model (its place in settings.models)


Progress = Callable[[str], None]
_T = TypeVar("_T")


def _timed(progress: Progress, what: str, fn: Callable[[], _T]) -> _T:
    """Announce a step as it starts (a compile can take a minute), then do it."""
    progress(what)
    return fn()


def prepare(settings: SmokeSettings, progress: Progress) -> list[Candidate]:
    """Compile every model and make its prefixed blobs; failures become failed rows."""
    candidates: list[Candidate] = []
    for index, model in enumerate(settings.models):
        compiled: dict[str, Artefact | AotiShimError] = {}
        needed = {ROUTE_BINARY} if (ROUTE_BINARY in settings.routes or settings.control) else set()
        if ROUTE_SOURCE in settings.routes:
            needed.add(ROUTE_SOURCE)
        native = settings.prefix if torch_has_native_prefix() else ""
        for route in sorted(needed):
            request = CompileRequest(
                model=model,
                device=settings.device,
                route=route,
                prefix=native if route == ROUTE_SOURCE else "",
                compile=settings.compile,
            )
            cached = " (cached)" if is_cached(request, settings.cache_dir) else ""
            try:
                compiled[route] = _timed(
                    progress, f"compile {model} ({settings.device}, {route} route){cached}",
                    partial(compile_cached, request, settings.cache_dir),
                )
            except UsageError:
                raise  # the user's model itself is wrong: one line for the whole run, not a row per route
            except AotiShimError as e:
                compiled[route] = e
        name = next((a.model_name for a in compiled.values() if isinstance(a, Artefact)), model)
        for route in settings.routes:
            row = Row(model=name, route=route, prefix=settings.prefix, expected_binding=bindings.SHIMS)
            art = compiled[route]
            if isinstance(art, AotiShimError):
                candidates.append(Candidate(replace(row, status=f"FAIL: {art}"), None, None, index))
                continue
            try:
                if route == ROUTE_BINARY:
                    out = settings.work_dir / f"{index}.{settings.device}.binary.so"
                    rewrite_imports(RewriteSettings(blob=art.blob, prefix=settings.prefix, output=out))
                    blob = out
                else:
                    build_dir = art.directory / f"cmake-{settings.prefix}-{cmake_package_digest()}"
                    built = " (cached)" if built_blob(build_dir) is not None else ""
                    source_build = SourceBuild(
                        package=art.package, prefix=settings.prefix, build_dir=build_dir, jobs=settings.jobs
                    )
                    blob = _timed(
                        progress,
                        f"build {name} with aoti_shim_add_model{built}",
                        partial(build_source_blob, source_build),
                    )
            except AotiShimError as e:
                candidates.append(Candidate(replace(row, status=f"FAIL: {e}"), None, art, index))
                continue
            candidates.append(Candidate(row, blob, art, index))
        if settings.control:
            row = Row(model=name, route=ROUTE_CONTROL, prefix="", expected_binding=bindings.LIBTORCH)
            control = compiled.get(ROUTE_BINARY)
            if isinstance(control, Artefact):
                candidates.append(Candidate(row, control.blob, control, index))
            else:
                candidates.append(Candidate(replace(row, status=f"FAIL: {control}"), None, None, index))
    return candidates


def check_before_running(settings: SmokeSettings, candidates: list[Candidate]) -> list[Candidate]:
    """The static check comes first: a missing shim fails lazily at its first call, so
    it must be caught here. Returns the candidates with the checker's verdict."""
    prefixed = [c for c in candidates if c.blob is not None and c.row.route != ROUTE_CONTROL]
    checked: list[Candidate] = []
    if prefixed:
        report = run_check(
            CheckSettings(
                shims=(str(settings.shim_library),),
                models=tuple(str(c.blob) for c in prefixed),
                against=("torch",),
                prefix=settings.prefix,
            )
        )
        missing = sorted({f.symbol for f in report.findings if f.rule == "UNSATISFIED_IMPORT"})
        if missing:
            raise MissingShims(missing)
        if report.exit_code(fail_on="blocking"):
            raise BlockingFindings(render(report, "text"))
    for c in candidates:
        if c.blob is None:
            checked.append(c)
        elif c.row.route == ROUTE_CONTROL:
            report = run_check(CheckSettings(models=(str(c.blob),), against=("torch",), prefix=settings.prefix))
            rules: dict[str, int] = {}
            for f in report.findings:
                if f.severity == "blocking":
                    rules[f.rule] = rules.get(f.rule, 0) + 1
            verdict = ", ".join(f"{k} x{v}" for k, v in sorted(rules.items())) or "clean"
            checked.append(replace(c, row=replace(c.row, checker=f"flags {verdict}" if rules else verdict)))
        else:
            checked.append(replace(c, row=replace(c.row, checker="clean")))
    return checked


def _control_outputs(settings: SmokeSettings, candidate: Candidate) -> Path:
    """Where the control run of the candidate's model leaves its outputs."""
    return settings.work_dir / f"{candidate.index}.{settings.device}.control-outputs.pt"


def run_one(settings: SmokeSettings, candidate: Candidate) -> Row:
    """Run one blob in a fresh child under LD_DEBUG and fill in its row."""
    row = candidate.row
    assert candidate.blob is not None and candidate.artefact is not None
    control = row.route == ROUTE_CONTROL
    scratch = Path(tempfile.mkdtemp(prefix="run-", dir=settings.work_dir))
    try:
        debug_dir = scratch / "ld"
        debug_dir.mkdir()
        request = {
            "device": settings.device,
            "blob": str(candidate.blob),
            "io": str(candidate.artefact.io_file),
            "shim_library": None if control else str(settings.shim_library),
            "prefix": "" if control else settings.prefix,
            "kernel_dir": _kernel_dir(candidate, settings.device),
            "iterations": settings.iterations,
            "stream": settings.stream,
        }
        outputs = _control_outputs(settings, candidate)
        if control:
            request["save_outputs"] = str(outputs)
        elif outputs.is_file():
            request["control_outputs"] = str(outputs)
        (scratch / "request.json").write_text(json.dumps(request))
        env = dict(os.environ)
        env.update(LD_DEBUG="bindings", LD_BIND_NOW="1", LD_DEBUG_OUTPUT=str(debug_dir / "ld"))
        if settings.threads is not None:
            env["OMP_NUM_THREADS"] = str(settings.threads)
        with open(scratch / "child.log", "wb") as sink:
            try:
                proc = subprocess.run(
                    python_argv(
                        "aoti_shim.smoke.run_child", str(scratch / "request.json"), str(scratch / "result.json")
                    ),
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    env=env,
                    check=False,
                    timeout=RUN_TIMEOUT_S,
                )
            except subprocess.TimeoutExpired:
                return replace(row, status=f"FAIL: the run took longer than {RUN_TIMEOUT_S} s")
        result_file = scratch / "result.json"
        result = json.loads(result_file.read_text()) if result_file.is_file() else {}
        # The loader's bindings are evidence whether or not the run then succeeded.
        made = list(bindings.parse_bindings(bindings.read_debug_output(debug_dir)))
        if not control:
            row = replace(row, notes=tuple(runtime_copies(made, settings.shim_library)))
        if "dlopen_path" in result:
            report = bindings.classify(
                made, blob_path=result["dlopen_path"], shim_library=None if control else str(settings.shim_library)
            )
            row = replace(row, binding=report.summary, bound={k: len(v) for k, v in report.by_place.items()})
        if "error" in result or proc.returncode != 0:
            why = result.get("error") or _exit_text(proc.returncode)
            first = first_error_line(scratch / "child.log")
            _show_child_tail(scratch / "child.log", f"{row.model} ({row.route_label})", first)
            shown = f"; first error: {first}" if first and first not in why else ""
            return replace(row, first_error=first, status=f"FAIL: {why}{shown}")
        row = replace(
            row,
            max_abs=result["max_abs"],
            max_rel=result["max_rel"],
            median_us=result["median_us"],
        )
        eager = result.get("eager") or {}
        row = replace(
            row,
            eager_reference=result.get("eager_reference", "-"),
            eager_max_abs=eager.get("max_abs"),
            eager_bound=eager.get("bound"),
            eager_ok=eager.get("ok"),
        )
        if "control" in result:
            c = result["control"]
            row = replace(
                row,
                control_max_abs=c["max_abs"],
                control_bound=c["bound"],
                control_bitwise=c["bitwise"],
                control_ok=c["ok"],
            )
        return _judge(row, result)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _judge(row: Row, result: dict) -> Row:
    problems = []
    if row.binding != row.expected_binding:
        problems.append(f"bound to {row.binding}, expected {row.expected_binding}")
    if row.control_ok is False:
        detail = (result.get("control") or {}).get("detail") or "numbers differ"
        problems.append(f"differs from the control ({detail})")
    if not result["within_tolerance"]:
        problems.append(f"outside the eager tolerance ({result.get('detail') or 'numbers differ'})")
    if row.route == ROUTE_CONTROL and not row.checker.startswith("flags"):
        problems.append("the checker did not flag the unprefixed blob")
    if problems:
        return replace(row, ok=False, status="FAIL: " + "; ".join(problems))
    if row.route == ROUTE_CONTROL:
        note = "ok (collision reproduced)"
    elif row.control_ok is None:
        note = "ok (no control to compare)"
    else:
        note = "ok"
    return replace(row, ok=True, status=note)


def _kernel_dir(candidate: Candidate, device: str) -> str | None:
    if device != "cuda" or candidate.artefact is None or candidate.row.route == ROUTE_SOURCE:
        return None
    result = json.loads((candidate.artefact.directory / "result.json").read_text())
    kernel_dir = result.get("kernel_dir")
    return str(candidate.artefact.directory / kernel_dir) if kernel_dir else None


def _show_child_tail(log: Path, what: str, first: str | None = None, lines: int = 15) -> None:
    """A failed run's first error line and last words (an abort message, a CUDA error) go to
    stderr: the table cell only has room for the verdict."""
    try:
        tail = log.read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return
    if first is not None:
        print(f"smoke: {what} failed; the first error it printed: {first}", file=sys.stderr)
    if tail:
        print(f"smoke: {what} failed; the run's last output:", file=sys.stderr)
        for line in tail:
            print(f"  | {line}", file=sys.stderr)


def _exit_text(returncode: int) -> str:
    if returncode < 0:
        return f"the run crashed (signal {-returncode})"
    return f"the run exited with {returncode}"


def run_smoke(settings: SmokeSettings, progress: Progress) -> SmokeReport:
    settings.work_dir.mkdir(parents=True, exist_ok=True)
    candidates = check_before_running(settings, prepare(settings, progress))
    # The controls run first: each prefixed run is checked against its model's control outputs.
    order = sorted(range(len(candidates)), key=lambda i: candidates[i].row.route != ROUTE_CONTROL)
    done: dict[int, Row] = {}
    for i in order:
        c = candidates[i]
        if c.blob is None:
            done[i] = c.row
            continue
        done[i] = _timed(progress, f"run {c.row.model} ({c.row.route_label})", partial(run_one, settings, c))
    rows = [done[i] for i in range(len(candidates))]
    return SmokeReport(
        device=settings.device,
        torch_version=torch_version(),
        prefix=settings.prefix,
        shim_library=str(settings.shim_library),
        rows=tuple(rows),
        stream=settings.stream,
    )
