"""How fast does a model run through our prefixed shims, next to libtorch's own and eager?

For each model (the smoke set, or ``--model NAME|module:callable``), in ONE process
that is set up as the coalesced host (libtorch promoted to ``RTLD_GLOBAL`` first,
then the prefixed shim library), the latency of one inference through:

- (a) ours: the smoke pipeline's blob (``link_libtorch=False``, binary route: imports
  renamed to the shim prefix), driven by the smoke runner with our shim tensors;
- (b) libtorch's shims: the same model compiled the usual way
  (``aot_inductor.link_libtorch=True``, otherwise the smoke's own compile options, so the
  autotuned kernels come from the same cache), driven by the same runner with libtorch's
  tensors (``ShimApi`` with prefix "" bound to libtorch's exports);
- (c) eager torch, the module the blob was compiled from.

Variants are measured in interleaved rounds so that drift hits all of them alike, and
(a)/(b), (a)/(c) are printed from these same-run numbers. A run of one inference is
``AOTInductorModelContainerRun`` (plus ``torch.cuda.synchronize()`` on CUDA) for (a) and
(b), ``module(*inputs)`` (plus the synchronize) for (c). Also, in a child process
(it has crashed natively on CUDA with torch 2.11), torch's own loader on the (b) package.

Then an allocation micro-benchmark: ``empty_strided`` + ``delete_tensor_object`` pairs
per second through each shim set, and the ctypes floor (two trivial shim calls), since
both sets pay the same ctypes cost per call.

    python bench/shim_latency.py                      # CPU
    python bench/shim_latency.py --device cuda --json latency.json
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from aoti_shim.errors import AotiShimError, UsageError

# How the libtorch-linked twin differs from the smoke's compile: only this option.
LIBTORCH_OPTIONS = {"aot_inductor.link_libtorch": True}
DEFAULT_MODELS = ("mlp", "block", "convnet")
ALLOC_SHAPE = (256, 256)


# ---------------------------------------------------------------- statistics


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(round(q / 100.0 * len(ordered) + 0.5))))
    return ordered[rank - 1]


@dataclass(frozen=True)
class Latency:
    median_us: float
    p90_us: float
    runs: int

    @staticmethod
    def of(samples: list[float]) -> Latency:
        median = statistics.median(samples) if samples else float("nan")
        return Latency(median, percentile(samples, 90), len(samples))


def ratio(a: float, b: float) -> float:
    return a / b if b and b == b and a == a else float("nan")


# ---------------------------------------------------------------- settings and results


@dataclass(frozen=True)
class BenchSettings:
    device: str
    models: tuple[str, ...]
    cache_dir: Path
    work_dir: Path
    prefix: str
    shim_library: Path
    rounds: int = 5
    iterations: int = 40  # timed runs per variant per round
    warmup: int = 5
    alloc_seconds: float = 0.3  # per shim set per round
    torch_loader: bool = True


@dataclass
class ModelResult:
    model: str
    ours: Latency | None = None
    libtorch_shims: Latency | None = None
    eager: Latency | None = None
    torch_loader: Latency | None = None
    torch_loader_note: str = ""
    max_abs_ours: float | None = None
    max_abs_libtorch: float | None = None
    error: str = ""

    @property
    def ours_over_libtorch(self) -> float:
        if self.ours is None or self.libtorch_shims is None:
            return float("nan")
        return ratio(self.ours.median_us, self.libtorch_shims.median_us)

    @property
    def ours_over_eager(self) -> float:
        if self.ours is None or self.eager is None:
            return float("nan")
        return ratio(self.ours.median_us, self.eager.median_us)


@dataclass(frozen=True)
class AllocResult:
    name: str
    pairs_per_s: float
    us_per_pair: float
    net_us_per_pair: float  # minus the ctypes floor


@dataclass
class BenchReport:
    header: dict[str, str]
    models: list[ModelResult] = field(default_factory=list)
    alloc: list[AllocResult] = field(default_factory=list)
    alloc_floor_us: float = float("nan")


# ---------------------------------------------------------------- header


def header(settings: BenchSettings) -> dict[str, str]:
    import torch

    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "host": platform.node(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "device": settings.device,
        "prefix": settings.prefix,
        "shims": str(settings.shim_library),
    }
    if settings.device == "cuda":
        info["device_name"] = torch.cuda.get_device_name(0)
        info["cuda (torch)"] = str(torch.version.cuda)
        info["driver"] = _driver_version()
    else:
        info["device_name"] = _cpu_name()
        info["threads"] = str(torch.get_num_threads())
    return info


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip() + f" ({os.cpu_count()} cpus)"
    except OSError:
        pass
    return platform.processor() or "cpu"


def _driver_version() -> str:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "unknown"
    proc = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    return proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else "unknown"


# ---------------------------------------------------------------- compiling


@dataclass(frozen=True)
class Compiled:
    blob: Path
    io_file: Path
    kernel_dir: str | None
    directory: Path


def _kernel_dir(directory: Path, device: str) -> str | None:
    if device != "cuda":
        return None
    kernel_dir = json.loads((directory / "result.json").read_text()).get("kernel_dir")
    return str(directory / kernel_dir) if kernel_dir else None


def compile_ours(settings: BenchSettings, model: str) -> Compiled:
    """(a): the smoke pipeline's compile (cached with it), then its binary route."""
    from aoti_shim.smoke.compile import CompileRequest, compile_cached
    from aoti_shim.smoke.rewrite import RewriteSettings, rewrite_imports

    art = compile_cached(CompileRequest(model=model, device=settings.device, route="binary"), settings.cache_dir)
    out = settings.work_dir / f"{art.model_name}.{settings.device}.{settings.prefix}so"
    rewrite_imports(RewriteSettings(blob=art.blob, prefix=settings.prefix, output=out))
    return Compiled(out, art.io_file, _kernel_dir(art.directory, settings.device), art.directory)


def _libtorch_key(model: str, device: str) -> str:
    import aoti_shim.smoke as smoke
    from aoti_shim.smoke.compile import torch_version

    digest = hashlib.sha256()
    for part in (torch_version(), device, model, json.dumps(LIBTORCH_OPTIONS, sort_keys=True)):
        digest.update(part.encode() + b"\0")
    smoke_dir = Path(smoke.__file__).resolve().parent
    for name in ("models.py", "compile_worker.py"):
        digest.update((smoke_dir / name).read_bytes())
    if ":" in model:
        digest.update(_module_source(model.partition(":")[0]))
    label = model.replace(":", "-").replace(".", "_")
    return f"{label}-{device}-libtorch-{digest.hexdigest()[:16]}"


def _module_source(module_name: str) -> bytes:
    import importlib.util

    try:
        found = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        found = None
    if found is None or not found.origin or not os.path.isfile(found.origin):
        return b""
    return Path(found.origin).read_bytes()


def compile_libtorch_linked(cache_dir: Path, device: str, model: str) -> Compiled:
    """(b): the same model and options with ``link_libtorch=True``, in a child, cached."""
    final = cache_dir / "libtorch-linked" / _libtorch_key(model, device)
    if not (final / "result.json").is_file():
        final.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
        try:
            request = {"model": model, "device": device, "route": "binary", "output": str(staging)}
            (staging / "request.json").write_text(json.dumps(request))
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (os.getcwd(), env.get("PYTHONPATH", "")) if p)
            with open(staging / "compile.log", "wb") as sink:
                proc = subprocess.run(
                    [sys.executable, str(Path(__file__).resolve()), "--compile-libtorch-worker", str(staging / "request.json")],
                    stdout=sink, stderr=subprocess.STDOUT, env=env, check=False,
                )  # fmt: skip
            if proc.returncode != 0:
                tail = (staging / "compile.log").read_text(errors="replace").strip().splitlines()[-1:]
                raise AotiShimError(f"compiling {model} with link_libtorch=True failed: {tail[0] if tail else proc.returncode}")
            try:
                staging.rename(final)
            except OSError:
                if not (final / "result.json").is_file():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return Compiled(final / "blob.so", final / "io.pt", _kernel_dir(final, device), final)


def libtorch_compile_worker(request_file: str) -> int:
    """Child: the smoke's own compile_model with one option changed; keeps a .pt2 too."""
    import aoti_shim.smoke.compile_worker as worker

    request = json.loads(Path(request_file).read_text())
    smoke_options = worker.inductor_options

    def options(device: str, route: str) -> dict[str, Any]:
        return {**smoke_options(device, route), **LIBTORCH_OPTIONS}

    worker.inductor_options = options  # type: ignore[assignment]
    result = worker.compile_model(request)
    out = Path(request["output"])
    # compile_model keeps the unpacked package only: zip it back for torch's loader.
    with zipfile.ZipFile(out / "model.pt2", "w", zipfile.ZIP_STORED) as archive:
        for path in sorted((out / "package").rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(out / "package").as_posix())
    (out / "result.json").write_text(json.dumps(result))
    return 0


# ---------------------------------------------------------------- measuring


# dlopen handles of every blob loaded so far (a repeat means the wrong library).
_loaded_handles: set[int] = set()


class Timer:
    """Per-run wall time of ``fn`` (which must wait for the device itself)."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self.fn = fn

    def sample(self, warmup: int, iterations: int) -> list[float]:
        for _ in range(warmup):
            self.fn()
        out = []
        for _ in range(iterations):
            start = time.perf_counter()
            self.fn()
            out.append((time.perf_counter() - start) * 1e6)
        return out


def measure_model(
    settings: BenchSettings, model: str, ours_api: Any, torch_api: Any, keep: contextlib.ExitStack
) -> ModelResult:
    import torch

    from aoti_shim.smoke.compare import compare
    from aoti_shim.smoke.loader import load_private_copy
    from aoti_shim.smoke.models import bundled, user_case
    from aoti_shim.smoke.runner import Container, RunSettings, run_container

    case = user_case(model) if ":" in model else bundled((model,))[0]
    result = ModelResult(model=case.name)
    a = compile_ours(settings, model)
    b = compile_libtorch_linked(settings.cache_dir, settings.device, model)
    io = torch.load(a.io_file)
    inputs = [t.to(settings.device).contiguous() for t in io["inputs"]]
    module, _ = case.build(settings.device)
    sync = torch.cuda.synchronize if settings.device == "cuda" else (lambda: None)

    def eager_once() -> None:
        module(*inputs)
        sync()

    samples: dict[str, list[float]] = {"ours": [], "libtorch": [], "eager": []}
    # The loaded copies stay loaded until the whole bench ends: a blob is never really
    # unloaded (glibc keeps it, NODELETE), and the next memfd copy would get the closed
    # one's /proc/self/fd/N name, which dlopen answers with the OLD library.
    blob_a, blob_b = keep.enter_context(load_private_copy(a.blob)), keep.enter_context(load_private_copy(b.blob))
    for blob in (blob_a, blob_b):
        if blob.library._handle in _loaded_handles:
            raise AotiShimError(f"{blob.source}: dlopen returned a library loaded before: not this model")
        _loaded_handles.add(blob.library._handle)
    with torch.inference_mode():
        ca = Container(blob_a.library, settings.device, a.kernel_dir)
        cb = Container(blob_b.library, settings.device, b.kernel_dir)
        try:
            runners: dict[str, Callable[[int, int], list[float]]] = {
                "ours": lambda w, n: _runner_samples(run_container, ours_api, ca, inputs, settings.device, w, n, RunSettings),
                "libtorch": lambda w, n: _runner_samples(run_container, torch_api, cb, inputs, settings.device, w, n, RunSettings),
                "eager": lambda w, n: Timer(eager_once).sample(w, n),
            }  # fmt: skip
            # Correctness first: both blobs must give eager's answer.
            first_a = run_container(ours_api, ca, inputs, RunSettings(device=settings.device, warmup=0, iterations=1))
            first_b = run_container(torch_api, cb, inputs, RunSettings(device=settings.device, warmup=0, iterations=1))
            ca_cmp, cb_cmp = compare(first_a.outputs, io["expected"]), compare(first_b.outputs, io["expected"])
            result.max_abs_ours, result.max_abs_libtorch = ca_cmp.max_abs, cb_cmp.max_abs
            if not (ca_cmp.within_tolerance and cb_cmp.within_tolerance):
                result.error = f"outside tolerance: ours {ca_cmp.detail or 'ok'}; libtorch {cb_cmp.detail or 'ok'}"
            order = list(runners)
            for r in range(settings.rounds):
                # Rotate who goes first: caches and clocks favour no variant.
                for name in order[r % 3 :] + order[: r % 3]:
                    samples[name] += runners[name](settings.warmup, settings.iterations)
        finally:
            ca.close()
            cb.close()
    result.ours, result.libtorch_shims, result.eager = (Latency.of(samples[k]) for k in ("ours", "libtorch", "eager"))
    if settings.torch_loader:
        result.torch_loader, result.torch_loader_note = torch_loader_latency(settings, b)
    return result


def _runner_samples(run_container: Any, api: Any, container: Any, inputs: list[Any], device: str,
                    warmup: int, iterations: int, run_settings: Any) -> list[float]:  # fmt: skip
    outcome = run_container(
        api, container, inputs,
        run_settings(device=device, warmup=warmup, iterations=iterations, time_budget_s=float("inf")),
    )  # fmt: skip
    return list(outcome.latencies_us)


_LOADER_CHILD = r"""
import json, sys, time, statistics
import torch
pt2, blob, kernel_dir, io_file, device, n, mode = sys.argv[1:8]
n = int(n)
io = torch.load(io_file)
inputs = [t.to(device).contiguous() for t in io["inputs"]]
note = "aoti_load_package"
try:
    if mode != "package":
        raise RuntimeError("not tried: it crashed in a previous child")
    runner = torch._inductor.aoti_load_package(pt2)
    call = lambda: runner(*inputs)
except Exception as e:
    note = "AOTIModelContainerRunner (aoti_load_package: %s)" % (str(e).splitlines() or [type(e).__name__])[0][:80]
    if device == "cuda":
        r = torch._C._aoti.AOTIModelContainerRunnerCuda(blob, 1, "cuda", kernel_dir)
    else:
        r = torch._C._aoti.AOTIModelContainerRunnerCpu(blob, 1)
    call = lambda: r.run(inputs)
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
with torch.inference_mode():
    out = call()
    out = out if isinstance(out, (list, tuple)) else [out]
    err = max(float((o.detach().cpu().double() - e.double()).abs().max()) for o, e in zip(out, io["expected"]))
    for _ in range(10):
        call(); sync()
    lat = []
    for _ in range(n):
        t = time.perf_counter(); call(); sync(); lat.append((time.perf_counter() - t) * 1e6)
print(json.dumps({"latencies": lat, "note": note, "max_abs": err}))
"""


def torch_loader_latency(settings: BenchSettings, b: Compiled) -> tuple[Latency | None, str]:
    """torch's own loader on the libtorch-linked package, crash-isolated in a child:
    ``aoti_load_package``, and if that crashes, torch's container runner on the blob."""
    latency, note = _torch_loader_child(settings, b, "package")
    if latency is None and note.startswith("crashed"):
        latency, again = _torch_loader_child(settings, b, "runner")
        note = f"aoti_load_package {note}; {again}"
    return latency, note


def _torch_loader_child(settings: BenchSettings, b: Compiled, mode: str) -> tuple[Latency | None, str]:
    n = settings.rounds * settings.iterations
    args = [str(b.directory / "model.pt2"), str(b.blob), b.kernel_dir or "", str(b.io_file), settings.device, str(n), mode]
    try:
        proc = subprocess.run([sys.executable, "-c", _LOADER_CHILD, *args],
                              capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, "timed out"
    if proc.returncode != 0:
        if proc.returncode < 0:
            return None, f"crashed (signal {-proc.returncode})"
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return None, f"failed: {last[:100]}"
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    return Latency.of(answer["latencies"]), f"{answer['note']}, max abs err {answer['max_abs']:.2e}"


# ---------------------------------------------------------------- allocation micro-benchmark


class AllocApi:
    """empty_strided / delete_tensor_object of one shim set, and a trivial call for the floor."""

    def __init__(self, library: ctypes.CDLL, prefix: str) -> None:
        h, i32, i64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64
        i64p = ctypes.POINTER(i64)
        self.empty = getattr(library, f"{prefix}aoti_torch_empty_strided")
        self.empty.argtypes = [i64, i64p, i64p, i32, i32, i32, ctypes.POINTER(h)]
        self.empty.restype = i32
        self.delete = getattr(library, f"{prefix}aoti_torch_delete_tensor_object")
        self.delete.argtypes, self.delete.restype = [h], i32
        self.trivial = getattr(library, f"{prefix}aoti_torch_dtype_float32")
        self.trivial.argtypes, self.trivial.restype = [], i32


def alloc_pairs(api: AllocApi, device: str, seconds: float, sync: Callable[[], None]) -> float:
    """empty_strided + delete pairs per second (float32 256x256) for about ``seconds``."""
    sizes = (ctypes.c_int64 * 2)(*ALLOC_SHAPE)
    strides = (ctypes.c_int64 * 2)(ALLOC_SHAPE[1], 1)
    handle = ctypes.c_void_p()
    ref = ctypes.byref(handle)
    device_type = 1 if device == "cuda" else 0
    empty, delete = api.empty, api.delete
    batch, done = 200, 0
    start = time.perf_counter()
    while True:
        for _ in range(batch):
            if empty(2, sizes, strides, 6, device_type, 0, ref) != 0:
                raise AotiShimError("empty_strided failed in the allocation benchmark")
            if delete(handle) != 0:
                raise AotiShimError("delete_tensor_object failed in the allocation benchmark")
        done += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            sync()
            return done / (time.perf_counter() - start)


def floor_pairs(api: AllocApi, seconds: float) -> float:
    """Two trivial shim calls per 'pair': what ctypes alone costs a pair."""
    trivial, batch, done = api.trivial, 200, 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(batch):
            trivial()
            trivial()
        done += batch
    return done / (time.perf_counter() - start)


def measure_alloc(settings: BenchSettings, ours: AllocApi, theirs: AllocApi) -> tuple[list[AllocResult], float]:
    import torch

    sync = torch.cuda.synchronize if settings.device == "cuda" else (lambda: None)
    runs: dict[str, list[float]] = {"ours": [], "libtorch": [], "floor": []}
    for api in (ours, theirs):
        alloc_pairs(api, settings.device, 0.05, sync)  # warm the allocators
    for r in range(settings.rounds):
        order = [("ours", ours), ("libtorch", theirs)]
        for name, api in order if r % 2 == 0 else order[::-1]:
            runs[name].append(alloc_pairs(api, settings.device, settings.alloc_seconds, sync))
        runs["floor"].append(floor_pairs(ours, settings.alloc_seconds / 3))
    floor_us = 1e6 / statistics.median(runs["floor"])
    results = []
    for name in ("ours", "libtorch"):
        per_s = statistics.median(runs[name])
        results.append(AllocResult(name, per_s, 1e6 / per_s, 1e6 / per_s - floor_us))
    return results, floor_us


# ---------------------------------------------------------------- the run


def run_bench(settings: BenchSettings, progress: Callable[[str], None]) -> BenchReport:
    import torch

    from aoti_shim.smoke.run_child import promote_libtorch
    from aoti_shim.smoke.runner import ShimApi

    report = BenchReport(header=header(settings))
    # The coalesced host: libtorch global first, then our shims global.
    libtorch = promote_libtorch(settings.device)
    shims = ctypes.CDLL(str(settings.shim_library), mode=os.RTLD_GLOBAL | os.RTLD_NOW)
    ours_api, torch_api = ShimApi(shims, settings.prefix), ShimApi(libtorch, "")
    with contextlib.ExitStack() as keep:
        for model in settings.models:
            progress(f"{model}: compile (cached after the first time) and measure")
            try:
                report.models.append(measure_model(settings, model, ours_api, torch_api, keep))
            except AotiShimError as e:
                report.models.append(ModelResult(model=model, error=str(e)))
            # Each row as soon as it is measured: a run cut short still shows what it had.
            progress("row: " + render_row(report.models[-1]))
    progress("allocation micro-benchmark")
    with torch.inference_mode():
        report.alloc, report.alloc_floor_us = measure_alloc(
            settings, AllocApi(shims, settings.prefix), AllocApi(libtorch, "")
        )
    return report


def _us(lat: Latency | None) -> str:
    return f"{lat.median_us:9.1f} {lat.p90_us:9.1f}" if lat else f"{'-':>9} {'-':>9}"


def render_row(m: ModelResult) -> str:
    if m.ours is None:
        return f"{m.model:<10} FAILED: {m.error}"
    errs = f"{m.max_abs_ours:.1e} / {m.max_abs_libtorch:.1e}"
    return (f"{m.model:<10} {_us(m.ours)} {_us(m.libtorch_shims)} {_us(m.eager)} "
            f"{m.ours_over_libtorch:8.3f} {m.ours_over_eager:8.3f} {m.ours.runs:5d}  {errs}"
            + (f"  FAIL: {m.error}" if m.error else ""))  # fmt: skip


def render(report: BenchReport) -> str:
    lines = ["# shim latency benchmark"]
    lines += [f"{k}: {v}" for k, v in report.header.items()]
    lines.append("")
    lines.append("one inference, microseconds (median, p90); (a) ours = prefixed slim shims, "
                 "(b) libtorch's shims (link_libtorch=True blob, same runner), (c) eager")  # fmt: skip
    head = (f"{'model':<10} {'(a) med':>9} {'(a) p90':>9} {'(b) med':>9} {'(b) p90':>9} {'(c) med':>9} {'(c) p90':>9} "
            f"{'(a)/(b)':>8} {'(a)/(c)':>8}  runs  max abs err (a) / (b)")  # fmt: skip
    lines += [head, "-" * len(head)]
    lines += [render_row(m) for m in report.models]
    lines.append("")
    lines.append("torch's own loader on the (b) package (separate process, for reference):")
    for m in report.models:
        if m.ours is None:
            continue
        lat = m.torch_loader
        shown = f"median {lat.median_us:.1f} us, p90 {lat.p90_us:.1f} us" if lat else "-"
        lines.append(f"  {m.model:<10} {shown}  [{m.torch_loader_note or 'not run'}]")
    if report.alloc:
        lines.append("")
        lines.append(f"allocation: empty_strided({'x'.join(map(str, ALLOC_SHAPE))}, float32, "
                     f"{report.header['device']}) + delete_tensor_object pairs")  # fmt: skip
        for a in report.alloc:
            lines.append(f"  {a.name:<9} {a.pairs_per_s:12,.0f} pairs/s  {a.us_per_pair:7.3f} us/pair  "
                         f"{a.net_us_per_pair:7.3f} us/pair net of the ctypes floor")  # fmt: skip
        lines.append(f"  ctypes floor (two trivial shim calls): {report.alloc_floor_us:.3f} us")
        ours, theirs = report.alloc
        lines.append(f"  time per pair (a)/(b): {ratio(ours.us_per_pair, theirs.us_per_pair):.3f} "
                     f"(net of the floor: {ratio(ours.net_us_per_pair, theirs.net_us_per_pair):.3f})")  # fmt: skip
    return "\n".join(lines)


def to_json(report: BenchReport) -> dict[str, Any]:
    return {
        "header": report.header,
        "models": [
            {**asdict(m), "ours_over_libtorch": m.ours_over_libtorch, "ours_over_eager": m.ours_over_eager}
            for m in report.models
        ],
        "alloc": [asdict(a) for a in report.alloc],
        "alloc_floor_us": report.alloc_floor_us,
    }


# ---------------------------------------------------------------- command line


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--model", action="append", default=[], metavar="NAME|MODULE:CALLABLE",
                   help="a bundled smoke model or module:callable; repeatable (default: mlp, block, convnet)")  # fmt: skip
    p.add_argument("--cache-dir", type=Path, help="compile cache (default: the smoke's, ~/.cache/aoti-shim/smoke)")
    p.add_argument("--shims", type=Path, help="the prefixed shim library (default: the installed reference shims)")
    p.add_argument("--prefix", help="the shims' prefix (default: read from the library)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iterations", type=int, default=40, help="timed runs per variant per round")
    p.add_argument("--alloc-seconds", type=float, default=0.3)
    p.add_argument("--no-torch-loader", action="store_true", help="skip torch's own loader (a child process)")
    p.add_argument("--json", type=Path, help="also write the results as JSON")
    p.add_argument("--compile-libtorch-worker", metavar="REQUEST", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _prefix_of(library: Path, given: str | None) -> str:
    from aoti_shim.checks.elf import ElfImage
    from aoti_shim.checks.prefix import infer, validate

    if given is not None:
        return validate(given)
    with ElfImage(library) as image:
        found = infer(image.exports())
    if not found:
        raise UsageError(f"{library}: exports no prefixed aoti_torch_* names; give --prefix")
    return found


def main(argv: list[str]) -> int:
    args = _parse(argv)
    if args.compile_libtorch_worker:
        return libtorch_compile_worker(args.compile_libtorch_worker)
    try:
        import torch

        from aoti_shim.paths import shim_library
        from aoti_shim.smoke.compile import default_cache_dir

        if args.device == "cuda" and not torch.cuda.is_available():
            raise UsageError("--device cuda: torch sees no CUDA device")
        if args.rounds < 1 or args.iterations < 1:
            raise UsageError("--rounds and --iterations must be at least 1")
        library = args.shims.resolve() if args.shims else shim_library()
        work_dir = Path(tempfile.mkdtemp(prefix="aoti-shim-bench-"))
        try:
            settings = BenchSettings(
                device=args.device,
                models=tuple(args.model) or DEFAULT_MODELS,
                cache_dir=(args.cache_dir or default_cache_dir()).resolve(),
                work_dir=work_dir,
                prefix=_prefix_of(library, args.prefix),
                shim_library=library,
                rounds=args.rounds,
                iterations=args.iterations,
                alloc_seconds=args.alloc_seconds,
                torch_loader=not args.no_torch_loader,
            )
            report = run_bench(settings, lambda m: print(f"bench: {m}", file=sys.stderr, flush=True))
        finally:
            shutil.rmtree(work_dir, ignore_errors=True)
    except AotiShimError as e:
        print(f"shim_latency: error: {e}", file=sys.stderr)
        return e.exit_code
    print(render(report))
    if args.json is not None:
        args.json.write_text(json.dumps(to_json(report), indent=2, default=str) + "\n")
    failed = any(m.ours is None or m.error for m in report.models)
    return 8 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
