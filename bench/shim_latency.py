"""How fast does a model run through our prefixed shims, next to libtorch's own and eager?

For each model (the smoke set, or ``--model NAME|module:callable``), in ONE process
that is set up as the coalesced host (libtorch promoted to ``RTLD_GLOBAL`` first,
then the prefixed shim library), the latency of one inference through:

- (a) ours: the smoke pipeline's blob (``link_libtorch=False``, binary route), its
  imports renamed to the shim prefix, driven with our shim tensors;
- (b) libtorch's shims, SAME blob: the very same compiled blob before the rename (its
  ``aoti_torch_*`` imports bind to libtorch's, as in the smoke's control run), driven
  with libtorch's tensors. Same kernels, same wrapper code: only the shims differ;
- (b') the twin: the model compiled again with ``aot_inductor.link_libtorch=True`` (the
  usual build), libtorch's shims. Its kernels come from a second autotuning, so (a)/(b')
  mixes kernel choice with shim cost (``--no-twin`` skips it);
- (c) eager torch, the module the blob was compiled from;
- (g) on CUDA, CUDA-graph replay of (b)'s blob: the same kernels with no host work per
  kernel, the floor a shim path can approach; (g') the same for the twin, so that
  (g)/(g') shows whether the two compiles' kernels differ;
- (p) with ``--peer-shims LIB``: the same blob, its imports renamed to that library's
  prefix, driven with its tensors: another runtime's shims (ExecuTorch's, say), built
  prefixed, as the anchor a runtime team would pick instead of ours. A peer that fails a
  run (one that refuses the legacy default stream, say) leaves a note, not a failed row.

Every variant runs in each of many interleaved rounds (the order rotates per round);
each round gives one median per variant and so one ratio per pair; a ratio is reported
as the geometric mean of the per-round ratios with a 95% bootstrap confidence interval
(rounds resampled). A run is ``AOTInductorModelContainerRun`` (plus
``torch.cuda.synchronize()`` on CUDA) for (a), (b), (b'); ``module(*inputs)`` for (c);
``graph.replay()`` for (g). Making the input handles and deleting the outputs are
outside the timed window.

If the shim library has the profile ABI (``aoti_shim_profile_*``), a sixth variant runs
(a) with the profile on: its ratio to (a) is what counting costs, and its counts give
the per-inference table of calls and host time per shim function (only calls made by
the blob inside the timed window are counted). The shims' share is printed raw (the total
over the profiled mean inference) and net of the profile's own cost (the clock reads and
counter updates inside the spans it times, calibrated on ``aoti_shim_profile_probe`` in the
same process) over (a)'s mean inference with the profile off. Then, for ``--sample-seconds``,
(a) again with the profile off under the host sampler (bench/host_sampler.py): the share of
its samples whose stack holds a frame of the shim library, measured with nothing in the shims.

Then an allocation micro-benchmark: ``empty_strided`` + ``delete_tensor_object`` pairs
per second through each shim set, in interleaved rounds with a per-round ratio and its
interval, and the ctypes floor (two trivial shim calls) that both sets pay alike.

    python bench/shim_latency.py --device cpu
    python bench/shim_latency.py --device cuda --json latency.json
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import hashlib
import json
import math
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from aoti_shim.errors import AotiShimError, UsageError
from aoti_shim.signals import interrupted, sigterm_as_interrupt
from aoti_shim.smoke.report import STREAM_DEFAULT, STREAM_LABELS, STREAM_NEW, STREAM_NONE
from host_sampler import HostSampler, SampledShare

# How the libtorch-linked twin differs from the smoke's compile: only this option.
LIBTORCH_OPTIONS = {"aot_inductor.link_libtorch": True}
DEFAULT_MODELS = ("mlp", "block", "convnet")
ALLOC_SHAPE = (256, 256)
BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95

# Variant keys, in the order of the table.
OURS, SAME, TWIN, EAGER, GRAPH, GRAPH_TWIN, PROFILED = "a", "b", "b'", "c", "g", "g'", "a+prof"
PEER = "p"
SAMPLED = "a+sampled"  # a note's key only: the sampled runs are not a timed variant
LABELS = {
    OURS: "(a) ours",
    SAME: "(b) libtorch's shims, same blob",
    TWIN: "(b') libtorch's shims, link_libtorch=True twin",
    EAGER: "(c) eager",
    GRAPH: "(g) CUDA-graph replay of (b)",
    GRAPH_TWIN: "(g') CUDA-graph replay of (b')",
    PROFILED: "(a) with the shim profile on",
    SAMPLED: "(a) under the host sampler",
    PEER: "(p) a peer's shims, same blob",
}
# The ratios reported per model: numerator, denominator.
# (g)/(g'): the same shims' kernel floors of the two compiles, i.e. whether their kernels differ.
RATIO_PAIRS = ((OURS, SAME), (OURS, TWIN), (OURS, EAGER), (OURS, GRAPH), (GRAPH, GRAPH_TWIN), (PROFILED, OURS))
# With a peer: ours against it, and it against libtorch's shims.
PEER_PAIRS = ((OURS, PEER), (PEER, SAME))


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


@dataclass(frozen=True)
class Interval:
    """A ratio: geometric mean of per-round ratios, with a bootstrap interval."""

    estimate: float
    low: float
    high: float
    rounds: int

    @staticmethod
    def of(per_round: list[float], seed: int = 0) -> Interval:
        logs = [math.log(r) for r in per_round if r > 0 and r == r and math.isfinite(r)]
        if not logs:
            return Interval(float("nan"), float("nan"), float("nan"), 0)
        point = math.exp(statistics.fmean(logs))
        if len(logs) == 1:
            return Interval(point, float("nan"), float("nan"), 1)
        rng = random.Random(seed)
        n = len(logs)
        means = sorted(statistics.fmean(rng.choices(logs, k=n)) for _ in range(BOOTSTRAP_RESAMPLES))
        tail = (1.0 - CONFIDENCE) / 2.0
        low = means[int(math.floor(tail * (BOOTSTRAP_RESAMPLES - 1)))]
        high = means[int(math.ceil((1.0 - tail) * (BOOTSTRAP_RESAMPLES - 1)))]
        return Interval(point, math.exp(low), math.exp(high), n)

    def render(self) -> str:
        if self.estimate != self.estimate:
            return "-"
        if self.low != self.low:
            return f"{self.estimate:.3f}"
        return f"{self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}]"


def round_ratios(rounds: list[dict[str, float]], top: str, bottom: str) -> list[float]:
    return [r[top] / r[bottom] for r in rounds if top in r and bottom in r and r[bottom] > 0]


# ---------------------------------------------------------------- settings and results


@dataclass(frozen=True)
class Peer:
    """Another runtime's prefixed shim library, the (p) variant."""

    library: Path
    prefix: str
    name: str


@dataclass(frozen=True)
class BenchSettings:
    device: str
    models: tuple[str, ...]
    cache_dir: Path
    work_dir: Path
    prefix: str
    shim_library: Path
    rounds: int = 30
    iterations: int = 20  # timed runs per variant per round
    warmup: int = 3  # untimed runs per variant per round
    alloc_seconds: float = 0.05  # per shim set per round
    twin: bool = True
    graph: bool = True
    profile: bool = True
    torch_loader: bool = False
    compile: str = "zero-fallback"  # the smoke's --compile: which cached blob (a) and (b) run
    # The smoke's --stream (report.STREAM_*): on CUDA every run, the correctness run
    # included, passes a stream of its own made current ("new", what runtimes pass), or
    # the legacy default stream, a null pointer ("default"); "none" on the CPU.
    stream: str = "none"
    # The host sampler (bench/host_sampler.py): seconds of (a) per model with its windows
    # open (0: not sampled), and the mean time between samples.
    sample_seconds: float = 2.0
    sample_interval_us: float = 50.0
    peer: Peer | None = None


@dataclass(frozen=True)
class ProfileRow:
    name: str
    calls_per_inference: float
    us_per_inference: float


@dataclass
class ModelResult:
    model: str
    latency: dict[str, Latency] = field(default_factory=dict)
    ratios: dict[str, Interval] = field(default_factory=dict)  # "a/b" -> interval
    rounds: int = 0
    iterations: int = 0
    notes: dict[str, str] = field(default_factory=dict)  # variant -> why it is missing
    max_abs: dict[str, float] = field(default_factory=dict)
    profile: list[ProfileRow] = field(default_factory=list)
    profiled_inferences: int = 0
    profiled_mean_us: float = float("nan")  # the profiled runs' mean latency: the table's shares
    unprofiled_mean_us: float = float("nan")  # (a)'s mean latency, profile off: the net share's base
    profile_net_us: float = float("nan")  # the shim total less the profile's own cost (ProfileCost.net_us)
    sampled: SampledShare | None = None  # (a)'s samples with a frame of the shim library, profile off
    sampled_inferences: int = 0
    torch_loader: Latency | None = None
    torch_loader_note: str = ""
    error: str = ""

    def interval(self, top: str, bottom: str) -> Interval:
        return self.ratios.get(f"{top}/{bottom}", Interval(float("nan"), float("nan"), float("nan"), 0))


@dataclass
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
    alloc_ratio: Interval | None = None
    alloc_rounds: int = 0
    profile_cost: ProfileCost | None = None


# ---------------------------------------------------------------- header


def header(settings: BenchSettings) -> dict[str, str]:
    import torch

    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "host": platform.node(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "device": settings.device,
        "stream": STREAM_LABELS[settings.stream],
        "prefix": settings.prefix,
        "shims": str(settings.shim_library),
        "rounds": f"{settings.rounds} x {settings.iterations} timed runs (+{settings.warmup} warm-up) per variant",
    }
    if settings.peer is not None:
        info["peer (p)"] = f"{settings.peer.name}: {settings.peer.library}, prefix {settings.peer.prefix}"
    if settings.device == "cuda":
        info["device_name"] = torch.cuda.get_device_name(0)
        info["cuda (torch)"] = str(torch.version.cuda)
        info["driver"] = _driver_version()
        info["gpu state at start"] = gpu_state()
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
                          capture_output=True, text=True, check=False)
    return proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else "unknown"


def gpu_state() -> str:
    """Device 0's clocks, temperature, power and performance state (nvidia-smi): a run's
    ratios next to the state the GPU was in."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "unknown"
    query = "clocks.sm,clocks.mem,temperature.gpu,power.draw,pstate,utilization.gpu"
    proc = subprocess.run([smi, "-i", "0", f"--query-gpu={query}", "--format=csv,noheader"],
                          capture_output=True, text=True, check=False)
    line = proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else "unknown"
    return f"{line} ({query})"


# ---------------------------------------------------------------- compiling


@dataclass(frozen=True)
class Compiled:
    blob: Path
    io_file: Path
    kernel_dir: str | None
    directory: Path
    original: Path | None = None  # (a) only: the blob before its imports were renamed


def _kernel_dir(directory: Path, device: str) -> str | None:
    if device != "cuda":
        return None
    kernel_dir = json.loads((directory / "result.json").read_text()).get("kernel_dir")
    return str(directory / kernel_dir) if kernel_dir else None


def renamed_blob(settings: BenchSettings, original: Path, model_name: str, prefix: str) -> Path:
    """(b)'s blob with its imports renamed to ``prefix``, in the work folder: (a)'s with ours,
    (p)'s with the peer's."""
    from aoti_shim.smoke.rewrite import RewriteSettings, rewrite_imports

    out = settings.work_dir / f"{model_name}.{settings.device}.{prefix}so"
    rewrite_imports(RewriteSettings(blob=original, prefix=prefix, output=out))
    return out


def compile_ours(settings: BenchSettings, model: str) -> Compiled:
    """(a): the smoke pipeline's compile (cached with it), then its binary route; the
    unrenamed blob is (b)."""
    from aoti_shim.smoke.compile import CompileRequest, compile_cached

    request = CompileRequest(model=model, device=settings.device, route="binary", compile=settings.compile)
    art = compile_cached(request, settings.cache_dir)
    out = renamed_blob(settings, art.blob, art.model_name, settings.prefix)
    return Compiled(out, art.io_file, _kernel_dir(art.directory, settings.device), art.directory, art.blob)


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
            request = {"model": model, "device": device, "route": "binary", "output": str(staging),
                       "overrides": LIBTORCH_OPTIONS}
            (staging / "request.json").write_text(json.dumps(request))
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (os.getcwd(), env.get("PYTHONPATH", "")) if p)
            with open(staging / "compile.log", "wb") as sink:
                proc = subprocess.run(
                    [
                        sys.executable,
                        str(Path(__file__).resolve()),
                        "--compile-libtorch-worker",
                        str(staging / "request.json"),
                    ],
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    env=env,
                    check=False,
                )
            if proc.returncode != 0:
                tail = (staging / "compile.log").read_text(errors="replace").strip().splitlines()[-1:]
                raise AotiShimError(
                    f"compiling {model} with link_libtorch=True failed: {tail[0] if tail else proc.returncode}"
                )
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
    result = worker.compile_model(request)
    out = Path(request["output"])
    # compile_model keeps the unpacked package only: zip it back for torch's loader.
    with zipfile.ZipFile(out / "model.pt2", "w", zipfile.ZIP_STORED) as archive:
        for path in sorted((out / "package").rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(out / "package").as_posix())
    (out / "result.json").write_text(json.dumps(result))
    return 0


# ---------------------------------------------------------------- the shim profile ABI


class ProfileApi:
    """aoti_shim_profile_* of our shims; ``available`` is False for a library without them."""

    def __init__(self, library: ctypes.CDLL, prefix: str) -> None:
        try:
            self._enable = getattr(library, f"{prefix}aoti_shim_profile_enable")
            self._reset = getattr(library, f"{prefix}aoti_shim_profile_reset")
            self._read = getattr(library, f"{prefix}aoti_shim_profile_read")
        except AttributeError:
            self.available = False
            return
        self.available = True
        # aoti_shim_profile_probe: newer libraries only; without it the shares are not netted.
        self._probe = getattr(library, f"{prefix}aoti_shim_profile_probe", None)
        if self._probe is not None:
            self._probe.argtypes, self._probe.restype = [ctypes.c_int32, ctypes.c_int32], ctypes.c_int32
        self._enable.argtypes, self._enable.restype = [ctypes.c_int32, ctypes.c_void_p], ctypes.c_int32
        self._reset.argtypes, self._reset.restype = [], ctypes.c_int32
        self._read.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
        self._read.restype = ctypes.c_int32

    def enable(self, on: bool) -> None:
        self._enable(1 if on else 0, None)

    def reset(self) -> None:
        self._reset()

    def read(self) -> list[tuple[str, int, int]]:
        """(name, calls, nanoseconds) rows, the most time first."""
        needed = ctypes.c_size_t()
        if self._read(None, 0, ctypes.byref(needed)) != 0:
            raise AotiShimError("aoti_shim_profile_read failed")
        buffer = ctypes.create_string_buffer(needed.value + 1024)
        if self._read(buffer, len(buffer), ctypes.byref(needed)) != 0:
            raise AotiShimError("aoti_shim_profile_read failed")
        rows = []
        for line in buffer.value.decode().splitlines():
            name, calls, nanos = line.rsplit("\t", 2)
            rows.append((name, int(calls), int(nanos)))
        return rows


    def calibrate(self, calls: int = 4000, repeats: int = 7) -> ProfileCost | None:
        """What the profile itself adds inside the scopes it times, from an empty probe timed
        with the profile on in this process; None for a library without the probe."""
        if self._probe is None:
            return None
        probe = self._probe

        def per_call(steps: int, counts: int) -> float:
            seen = []
            for _ in range(repeats):
                self.reset()
                self.enable(True)
                for _ in range(calls):
                    probe(steps, counts)
                self.enable(False)
                rows = {name: (n, ns) for name, n, ns in self.read()}
                n, ns = rows.get(PROBE_ROW, (0, 0))
                seen.append(ns / n if n else float("nan"))
            self.reset()
            return statistics.median(seen)

        empty = per_call(0, 0)
        return ProfileCost(empty, per_call(1, 0) - empty, per_call(0, 1) - empty, calls * repeats)


PROBE_ROW = "(profile probe)"
TOTAL_ROW = "(shim total: outermost entry points)"


@dataclass(frozen=True)
class ProfileCost:
    """The profile's own cost inside the times it reports, in nanoseconds: an outermost entry
    point's scope (the span between its two clock reads, body empty), a scope nested in one
    (a step or an inner entry point: two clock reads and a counter update, all inside the
    outer span) and a counted event (a counter update), each the median over repeats of an
    empty ``aoti_shim_profile_probe`` call with 0 or 1 nested step or event."""

    outermost_ns: float
    nested_ns: float
    count_ns: float
    probe_calls: int

    def net_us(self, rows: list[ProfileRow]) -> float:
        """The shim total of one inference less what the profile added inside it: the number
        of outermost calls, nested scopes (every timed row's calls but the total's, less the
        outermost calls) and counted events (rows with no time) times their costs."""
        by_name = {row.name: row for row in rows}
        total = by_name.get(TOTAL_ROW)
        if total is None:
            return float("nan")
        timed = sum(r.calls_per_inference for r in rows if r.name != TOTAL_ROW and r.us_per_inference > 0)
        counted = sum(r.calls_per_inference for r in rows if r.us_per_inference == 0)
        nested = max(timed - total.calls_per_inference, 0.0)
        own_ns = total.calls_per_inference * self.outermost_ns + nested * self.nested_ns + counted * self.count_ns
        return total.us_per_inference - own_ns / 1e3


# ---------------------------------------------------------------- measuring


# dlopen handles of every blob loaded so far (a repeat means the wrong library).
_loaded_handles: set[int] = set()


def _timed(fn: Callable[[], None], warmup: int, iterations: int) -> list[float]:
    """Per-run wall time of ``fn`` (which waits for the device itself), microseconds."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(iterations):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1e6)
    return out


class BlobVariant:
    """One loaded blob driven through one shim set: each run wraps fresh input handles
    (untimed; the container steals them), runs, waits, and deletes the outputs (untimed).
    ``around`` is called just outside each timed run's window (not around warm-ups)."""

    def __init__(self, api: Any, container: Any, inputs: list[Any], device: str,
                 around: tuple[Callable[[], None], Callable[[], None]] | None = None) -> None:
        import torch

        self.api, self.container, self.inputs = api, container, inputs
        self.sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        self.stream = torch.cuda.current_stream().cuda_stream if device == "cuda" else None
        self.before, self.after = around if around else (lambda: None, lambda: None)
        self.runs = 0

    def sample(self, warmup: int, iterations: int) -> list[float]:
        api, container, inputs, stream, sync = self.api, self.container, self.inputs, self.stream, self.sync
        before, after = self.before, self.after
        out = []
        for i in range(warmup + iterations):
            timed = i >= warmup
            handles = [api.wrap(t) for t in inputs]
            if timed:
                before()
            start = time.perf_counter()
            outs = container.run(handles, stream)
            sync()
            elapsed = (time.perf_counter() - start) * 1e6
            if timed:
                after()
                out.append(elapsed)
                self.runs += 1
            for h in outs:
                api.delete(h)
        return out


class GraphReplay:
    """CUDA-graph capture of one run of a blob driven through libtorch's shims (its
    allocations come from the caching allocator, which capture supports); replays it.
    The captured outputs stay alive until close().

    The capture gets a container of its own: the run records the model's "finished"
    event on the capturing stream, and a captured event cannot be queried afterwards,
    which the container's next run would do (cudaErrorCapturedEvent)."""

    def __init__(self, api: Any, container: Any, inputs: list[Any]) -> None:
        import torch

        self.api, self.container = api, container
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # warm on the capture stream, as torch asks
                for h in container.run([api.wrap(t) for t in inputs], side.cuda_stream):
                    api.delete(h)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        handles = [api.wrap(t) for t in inputs]
        with torch.cuda.graph(self.graph, capture_error_mode="relaxed"):
            self.outs = container.run(handles, torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        self.sync = torch.cuda.synchronize

    def once(self) -> None:
        self.graph.replay()
        self.sync()

    def outputs(self) -> list[Any]:
        self.once()
        return [self.api.to_torch(h) for h in self.outs]

    def close(self) -> None:
        self.sync()
        for h in self.outs:
            self.api.delete(h)
        self.outs = []
        self.graph.reset()
        self.container.close()


def measure_model(
    settings: BenchSettings, model: str, ours_api: Any, torch_api: Any, profile: ProfileApi | None,
    sampler: HostSampler | None, keep: contextlib.ExitStack, progress: Callable[[str], None],
    peer_api: Any | None = None,
) -> ModelResult:
    import torch

    from aoti_shim.smoke.compare import compare
    from aoti_shim.smoke.loader import load_private_copy
    from aoti_shim.smoke.models import bundled, user_case
    from aoti_shim.smoke.runner import Container, RunSettings, run_container

    case = user_case(model) if ":" in model else bundled((model,))[0]
    result = ModelResult(model=case.name, rounds=settings.rounds, iterations=settings.iterations)
    a = compile_ours(settings, model)
    twin: Compiled | None = None
    if settings.twin:
        try:
            twin = compile_libtorch_linked(settings.cache_dir, settings.device, model)
        except AotiShimError as e:
            result.notes[TWIN] = str(e)
    io = torch.load(a.io_file)
    inputs = [t.to(settings.device).contiguous() for t in io["inputs"]]
    module, _ = case.build(settings.device)
    sync = torch.cuda.synchronize if settings.device == "cuda" else (lambda: None)

    def eager_once() -> None:
        module(*inputs)
        sync()

    # The loaded copies stay loaded until the whole bench ends: a blob is never really
    # unloaded (glibc keeps it, NODELETE), and the next memfd copy would get the closed
    # one's /proc/self/fd/N name, which dlopen answers with the OLD library.
    def load(path: Path) -> Any:
        blob = keep.enter_context(load_private_copy(path))
        if blob.library._handle in _loaded_handles:
            raise AotiShimError(f"{blob.source}: dlopen returned a library loaded before: not this model")
        _loaded_handles.add(blob.library._handle)
        return blob

    blobs: dict[str, tuple[Any, Any, str | None]] = {
        OURS: (load(a.blob), ours_api, a.kernel_dir),
        SAME: (load(a.original), torch_api, a.kernel_dir),
    }
    if twin is not None:
        blobs[TWIN] = (load(twin.blob), torch_api, twin.kernel_dir)
    if peer_api is not None and settings.peer is not None and a.original is not None:
        try:
            peer_blob = load(renamed_blob(settings, a.original, case.name, settings.peer.prefix))
            blobs[PEER] = (peer_blob, peer_api, a.kernel_dir)
        except AotiShimError as e:  # a peer that lacks a name the blob imports, say
            result.notes[PEER] = f"its blob did not load: {e}"
    containers: dict[str, Any] = {}
    graphs: list[GraphReplay] = []

    def drop_peer(why: str) -> None:
        # The peer is an anchor, not the subject: its failure is a note, the row stands.
        result.notes[PEER] = why
        del blobs[PEER]
        if PEER in containers:
            with contextlib.suppress(AotiShimError):
                containers.pop(PEER).close()

    with torch.inference_mode():
        try:
            for key, (blob, _, kernel_dir) in list(blobs.items()):
                try:
                    containers[key] = Container(blob.library, settings.device, kernel_dir)
                except AotiShimError as e:
                    if key != PEER:
                        raise
                    drop_peer(f"its container failed: {e}")
            # Correctness first: every blob must give eager's answer.
            failures = []
            for key, (_, api, _) in list(blobs.items()):
                once = RunSettings(device=settings.device, warmup=0, iterations=1, stream=settings.stream)
                try:
                    first = run_container(api, containers[key], inputs, once)
                except AotiShimError as e:
                    if key != PEER:
                        raise
                    drop_peer(f"its first run failed: {e}")
                    continue
                cmp = compare(first.outputs, io["expected"])
                result.max_abs[key] = cmp.max_abs
                if key == PEER and not cmp.within_tolerance:
                    drop_peer(f"outside tolerance: {cmp.detail}")
                elif not cmp.within_tolerance:
                    failures.append(f"{LABELS[key]}: {cmp.detail}")
            variants: dict[str, Callable[[int, int], list[float]]] = {}
            for key, (_, api, _) in blobs.items():
                variants[key] = BlobVariant(api, containers[key], inputs, settings.device).sample
            variants[EAGER] = lambda w, n: _timed(eager_once, w, n)
            for key, blob_key in ((GRAPH, SAME), (GRAPH_TWIN, TWIN)):
                if settings.device != "cuda" or not settings.graph or blob_key not in containers:
                    continue
                own = None
                try:
                    blob, _, kernel_dir = blobs[blob_key]
                    own = Container(blob.library, settings.device, kernel_dir)
                    replay = GraphReplay(torch_api, own, inputs)
                    graphs.append(replay)
                    own = None  # closed with the replay
                    cmp = compare(replay.outputs(), io["expected"])
                    result.max_abs[key] = cmp.max_abs
                    if not cmp.within_tolerance:
                        failures.append(f"{LABELS[key]}: {cmp.detail}")
                    variants[key] = lambda w, n, once=replay.once: _timed(once, w, n)
                except Exception as e:  # noqa: BLE001 - any capture failure is a finding, not a crash
                    result.notes[key] = (
                        f"capture failed: {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
                    )
                    with contextlib.suppress(Exception):
                        torch.cuda.synchronize()
                    if own is not None:
                        with contextlib.suppress(AotiShimError):
                            own.close()
            profiled: BlobVariant | None = None
            if settings.profile and profile is not None and profile.available:
                profiled = BlobVariant(ours_api, containers[OURS], inputs, settings.device,
                                       around=(lambda: profile.enable(True), lambda: profile.enable(False)))
                variants[PROFILED] = profiled.sample
                profile.enable(False)
                profile.reset()
            elif settings.profile:
                result.notes[PROFILED] = "the shim library has no aoti_shim_profile_* ABI"
            if failures:
                result.error = "outside tolerance: " + "; ".join(failures)
            samples: dict[str, list[float]] = {k: [] for k in variants}
            per_round: list[dict[str, float]] = []
            order = list(variants)
            for r in range(settings.rounds):
                medians: dict[str, float] = {}
                # Rotate who goes first: caches and clocks favour no variant.
                shift = r % len(order)
                for key in order[shift:] + order[:shift]:
                    got = variants[key](settings.warmup, settings.iterations)
                    samples[key] += got
                    medians[key] = statistics.median(got)
                per_round.append(medians)
            if profiled is not None and profile is not None:
                result.profiled_inferences = profiled.runs
                result.profiled_mean_us = statistics.fmean(samples[PROFILED])
                result.unprofiled_mean_us = statistics.fmean(samples[OURS])
                result.profile = [
                    ProfileRow(name, calls / profiled.runs, nanos / 1e3 / profiled.runs)
                    for name, calls, nanos in profile.read()
                ]
                profile.reset()
            if sampler is not None:
                try:
                    result.sampled, result.sampled_inferences = sample_shims(settings, sampler, containers[OURS],
                                                                             ours_api, inputs)
                except AotiShimError as e:  # the row keeps what it measured; the note says why
                    result.notes[SAMPLED] = str(e)
        finally:
            for replay in graphs:
                replay.close()
            for c in containers.values():
                c.close()
    result.latency = {k: Latency.of(v) for k, v in samples.items()}
    for top, bottom in RATIO_PAIRS + PEER_PAIRS:
        if top in result.latency and bottom in result.latency:
            result.ratios[f"{top}/{bottom}"] = Interval.of(round_ratios(per_round, top, bottom))
    if settings.torch_loader and twin is not None:
        result.torch_loader, result.torch_loader_note = torch_loader_latency(settings, twin)
    return result


def sample_shims(settings: BenchSettings, sampler: HostSampler, container: Any, api: Any,
                 inputs: list[Any]) -> tuple[SampledShare, int]:
    """(a), profile off, for ``settings.sample_seconds`` with the sampler's window open around
    each run: the share of its samples in the shim library, and how many runs it took."""
    variant = BlobVariant(api, container, inputs, settings.device,
                          around=(lambda: sampler.window(1), lambda: sampler.window(0)))
    sampler.start(settings.shim_library, settings.sample_interval_us)
    try:
        deadline = time.perf_counter() + settings.sample_seconds
        while time.perf_counter() < deadline:
            variant.sample(0, 20)
    finally:
        share = sampler.stop()
    return share, variant.runs


# ---------------------------------------------------------------- torch's own loader


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
    args = [
        str(b.directory / "model.pt2"),
        str(b.blob),
        b.kernel_dir or "",
        str(b.io_file),
        settings.device,
        str(n),
        mode,
    ]
    try:
        proc = subprocess.run([sys.executable, "-c", _LOADER_CHILD, *args],
                              capture_output=True, text=True, timeout=300, check=False)
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


def measure_alloc(
    settings: BenchSettings, ours: AllocApi, theirs: AllocApi
) -> tuple[list[AllocResult], float, Interval]:
    import torch

    sync = torch.cuda.synchronize if settings.device == "cuda" else (lambda: None)
    runs: dict[str, list[float]] = {"ours": [], "libtorch": [], "floor": []}
    for api in (ours, theirs):
        alloc_pairs(api, settings.device, 0.05, sync)  # warm the allocators
    per_round = []
    for r in range(settings.rounds):
        order = [("ours", ours), ("libtorch", theirs)]
        got = {}
        for name, api in order if r % 2 == 0 else order[::-1]:
            got[name] = alloc_pairs(api, settings.device, settings.alloc_seconds, sync)
            runs[name].append(got[name])
        runs["floor"].append(floor_pairs(ours, settings.alloc_seconds / 3))
        per_round.append(got["libtorch"] / got["ours"])  # time per pair, ours / theirs
    floor_us = 1e6 / statistics.median(runs["floor"])
    results = []
    for name in ("ours", "libtorch"):
        per_s = statistics.median(runs[name])
        results.append(AllocResult(name, per_s, 1e6 / per_s, 1e6 / per_s - floor_us))
    return results, floor_us, Interval.of(per_round)


# ---------------------------------------------------------------- the run


def stream_of(device: str, choice: str | None) -> str:
    """The stream the runs pass: a stream of their own on CUDA unless asked, as the smoke."""
    if device != "cuda":
        return STREAM_NONE
    return choice or STREAM_NEW


@contextlib.contextmanager
def caller_stream(settings: BenchSettings) -> Iterator[None]:
    """With ``--stream new`` on CUDA, a stream of its own is torch's current stream while a
    model is measured: every variant (eager included) and the correctness run pass it, as
    a runtime passes its own stream. Otherwise the current stream stays the default one."""
    if settings.stream != STREAM_NEW:
        yield
        return
    import torch

    with torch.cuda.stream(torch.cuda.Stream()):
        yield
    torch.cuda.synchronize()


def load_peer(peer: Peer) -> Any:
    """The peer's library, global after ours (its blob binds to it by its prefix alone)."""
    from aoti_shim.smoke.runner import ShimApi

    try:
        library = ctypes.CDLL(str(peer.library), mode=os.RTLD_GLOBAL | os.RTLD_NOW)
    except OSError as e:
        raise UsageError(f"--peer-shims {peer.library}: cannot be loaded: {e}") from None
    try:
        return ShimApi(library, peer.prefix)
    except AotiShimError as e:
        raise UsageError(f"--peer-shims {peer.library}: {e}") from None


def run_bench(settings: BenchSettings, progress: Callable[[str], None]) -> BenchReport:
    import torch

    from aoti_shim.smoke.run_child import promote_libtorch
    from aoti_shim.smoke.runner import ShimApi

    report = BenchReport(header=header(settings))
    # The coalesced host: libtorch global first, then our shims global.
    libtorch = promote_libtorch(settings.device)
    # No TF32, as in the smoke's run child: libtorch's cuDNN convolutions would use it by
    # default (torch.backends.cudnn.allow_tf32), the shims' compute in float32, and a (b)
    # in TF32 would time other arithmetic than (a).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    shims = ctypes.CDLL(str(settings.shim_library), mode=os.RTLD_GLOBAL | os.RTLD_NOW)
    ours_api, torch_api = ShimApi(shims, settings.prefix), ShimApi(libtorch, "")
    peer_api = load_peer(settings.peer) if settings.peer is not None else None
    profile = ProfileApi(shims, settings.prefix)
    report.header["shim profile ABI"] = "yes" if profile.available else "no"
    sampler = None
    if settings.sample_seconds > 0:
        try:
            sampler = HostSampler(settings.work_dir, os.environ.get("CC", "cc"))
            report.header["host sampler"] = (f"one sample every {settings.sample_interval_us:.0f} us on average, "
                                             f"{settings.sample_seconds:g} s of (a) per model")
        except AotiShimError as e:
            report.header["host sampler"] = f"not run: {e}"
    with contextlib.ExitStack() as keep:
        for model in settings.models:
            progress(f"{model}: compile (cached after the first time) and measure")
            began = time.perf_counter()
            try:
                with caller_stream(settings):
                    report.models.append(
                        measure_model(settings, model, ours_api, torch_api, profile, sampler, keep, progress,
                                      peer_api)
                    )
            except AotiShimError as e:
                report.models.append(ModelResult(model=model, error=str(e)))
            # Each row as soon as it is measured: a run cut short still shows what it had.
            progress(f"row ({time.perf_counter() - began:.1f} s): " + render_row(report.models[-1]))
    if profile.available and any(m.profile for m in report.models):
        progress("the profile's own cost (an empty probe, this process)")
        report.profile_cost = profile.calibrate()
        for m in report.models:
            if report.profile_cost is not None and m.profile:
                m.profile_net_us = report.profile_cost.net_us(m.profile)
    progress("allocation micro-benchmark")
    with torch.inference_mode():
        report.alloc, report.alloc_floor_us, report.alloc_ratio = measure_alloc(
            settings, AllocApi(shims, settings.prefix), AllocApi(libtorch, "")
        )
    report.alloc_rounds = settings.rounds
    if settings.device == "cuda":
        report.header["gpu state at end"] = gpu_state()
    return report


# ---------------------------------------------------------------- output


def _us(lat: Latency | None) -> str:
    return f"{lat.median_us:8.1f}" if lat else f"{'-':>8}"


TABLE_KEYS = (OURS, SAME, TWIN, EAGER, GRAPH, GRAPH_TWIN)


def render_row(m: ModelResult) -> str:
    if OURS not in m.latency:
        return f"{m.model:<10} FAILED: {m.error}"
    cells = " ".join(_us(m.latency.get(k)) for k in TABLE_KEYS + ((PEER,) if PEER in m.latency else ()))
    peer = f"  (a)/(p) {m.interval(OURS, PEER).render()}" if PEER in m.latency else ""
    return (f"{m.model:<10} {cells}  (a)/(b) {m.interval(OURS, SAME).render()}{peer}"
            + (f"  FAIL: {m.error}" if m.error else ""))


def _pair_name(top: str, bottom: str) -> str:
    return "profile on/off" if (top, bottom) == (PROFILED, OURS) else f"({top})/({bottom})"


def render(report: BenchReport) -> str:
    lines = ["# shim latency benchmark"]
    lines += [f"{k}: {v}" for k, v in report.header.items()]
    lines.append("")
    peered = any(PEER in m.latency for m in report.models)
    peer_keys = (PEER,) if peered else ()
    keys = TABLE_KEYS + peer_keys
    pairs = RATIO_PAIRS + (PEER_PAIRS if peered else ())
    lines.append("variants: " + "; ".join(f"{LABELS[k]}" for k in TABLE_KEYS + (PROFILED,) + peer_keys))
    done = [m for m in report.models if OURS in m.latency]
    if done:
        m0 = done[0]
        lines.append(f"rounds: {m0.rounds} interleaved rounds per model, {m0.iterations} timed runs per variant per "
                     f"round ({m0.rounds * m0.iterations} runs per variant per model); ratios are geometric means of "
                     f"per-round ratios (each round's medians) with a {CONFIDENCE:.0%} bootstrap interval "
                     f"({BOOTSTRAP_RESAMPLES} resamples of the rounds)")
    lines.append("")
    lines.append("one inference, median microseconds")
    head = f"{'model':<10} " + " ".join(f"{k.join('()'):>8}" for k in keys) + "   p90 (a) / (b)"
    lines += [head, "-" * len(head)]
    for m in report.models:
        if OURS not in m.latency:
            lines.append(f"{m.model:<10} FAILED: {m.error}")
            continue
        cells = " ".join(_us(m.latency.get(k)) for k in keys)
        p90 = f"{m.latency[OURS].p90_us:.1f} / {m.latency[SAME].p90_us:.1f}" if SAME in m.latency else "-"
        lines.append(f"{m.model:<10} {cells}   {p90}")
    lines.append("")
    lines.append(f"ratios, {CONFIDENCE:.0%} confidence interval (below 1: (a) is faster)")
    head = f"{'model':<10} " + " ".join(f"{_pair_name(t, b):>24}" for t, b in pairs)
    lines += [head, "-" * len(head)]
    for m in report.models:
        if OURS not in m.latency:
            continue
        lines.append(f"{m.model:<10} " + " ".join(f"{m.interval(t, b).render():>24}" for t, b in pairs))
    for m in report.models:
        for key, note in m.notes.items():
            lines.append(f"  {m.model}: {LABELS[key]} not measured: {note}")
        if m.error and OURS in m.latency:
            lines.append(f"  {m.model}: FAIL: {m.error}")
    errs = [f"{m.model} " + ", ".join(f"{k} {v:.1e}" for k, v in m.max_abs.items()) for m in report.models if m.max_abs]
    if errs:
        lines.append("max abs error against eager's recorded outputs: " + "; ".join(errs))
    for m in report.models:
        lines += render_profile(m, report.profile_cost)
    if report.alloc:
        lines.append("")
        lines.append(
            f"allocation: empty_strided({'x'.join(map(str, ALLOC_SHAPE))}, float32, "
            f"{report.header['device']}) + delete_tensor_object pairs, {report.alloc_rounds} interleaved rounds"
        )
        for a in report.alloc:
            lines.append(f"  {a.name:<9} {a.pairs_per_s:12,.0f} pairs/s  {a.us_per_pair:7.3f} us/pair  "
                         f"{a.net_us_per_pair:7.3f} us/pair net of the ctypes floor")
        lines.append(f"  ctypes floor (two trivial shim calls): {report.alloc_floor_us:.3f} us")
        ours, theirs = report.alloc
        shown = report.alloc_ratio.render() if report.alloc_ratio else "-"
        lines.append(f"  time per pair (a)/(b): {shown} "
                     f"(medians net of the floor: {ratio(ours.net_us_per_pair, theirs.net_us_per_pair):.3f})")
    loader = [m for m in report.models if m.torch_loader or m.torch_loader_note]
    if loader:
        lines.append("")
        lines.append("torch's own loader on the (b') package (separate process, for reference):")
        for m in loader:
            lat = m.torch_loader
            shown = f"median {lat.median_us:.1f} us, p90 {lat.p90_us:.1f} us" if lat else "-"
            lines.append(f"  {m.model:<10} {shown}  [{m.torch_loader_note or 'not run'}]")
    return "\n".join(lines)


def render_sampled(m: ModelResult) -> list[str]:
    """The shims' share as the host sampler saw it, the profile's net share's independent check."""
    if m.sampled is None:
        return []  # a failure is among the model's notes
    low, high = m.sampled.interval()
    return [f"  shims' share, sampled: {100 * m.sampled.share:.1f}% [{100 * low:.1f}%, {100 * high:.1f}%] "
            f"({m.sampled.in_library} of {m.sampled.samples} samples of (a), profile off, had a frame of the shim "
            f"library; {m.sampled_inferences} inferences; 95% interval)"]


def render_profile(m: ModelResult, cost: ProfileCost | None) -> list[str]:
    """A model's profile table (raw shares: of the profiled mean inference), the shims' share
    net of the profile's own cost, and the sampled share."""
    if not m.profile:
        return ["", f"shim profile, {m.model}: not run", *render_sampled(m)] if m.sampled else []
    per_inference = m.profiled_mean_us
    lines = ["", f"shim profile, {m.model}: per inference of (a), means over {m.profiled_inferences} profiled "
                 f"inferences (mean inference {per_inference:.1f} us with the profile on)",
             f"  {'function / step':<52} {'calls':>7} {'us':>8} {'% of inference':>15}"]
    for row in m.profile:
        share = 100.0 * row.us_per_inference / per_inference if per_inference == per_inference else float("nan")
        lines.append(f"  {row.name:<52} {row.calls_per_inference:7.2f} {row.us_per_inference:8.2f} {share:14.1f}%")
    if cost is None:
        lines.append("  net of the profile's own cost: not measured (the library has no aoti_shim_profile_probe)")
        return lines + render_sampled(m)
    total = next((r for r in m.profile if r.name == TOTAL_ROW), None)
    raw = 100.0 * total.us_per_inference / per_inference if total else float("nan")
    net = 100.0 * m.profile_net_us / m.unprofiled_mean_us if m.unprofiled_mean_us else float("nan")
    lines.append(f"  shims' share: raw {raw:.1f}% (the total over the profiled mean inference); net {net:.1f}% "
                 f"({m.profile_net_us:.2f} us over (a)'s mean inference with the profile off, "
                 f"{m.unprofiled_mean_us:.1f} us)")
    lines.append(f"  net = the total less, per inference, each outermost call x {cost.outermost_ns:.0f} ns, "
                 f"each nested scope x {cost.nested_ns:.0f} ns, each counted event x {cost.count_ns:.0f} ns: the "
                 f"profile's own cost, timed on an empty probe in this process ({cost.probe_calls} calls per figure)")
    return lines + render_sampled(m)


def to_json(report: BenchReport) -> dict[str, Any]:
    return {
        "header": report.header,
        "models": [asdict(m) for m in report.models],
        "alloc": [asdict(a) for a in report.alloc],
        "alloc_floor_us": report.alloc_floor_us,
        "alloc_ratio": asdict(report.alloc_ratio) if report.alloc_ratio else None,
        "alloc_rounds": report.alloc_rounds,
        "profile_cost": asdict(report.profile_cost) if report.profile_cost else None,
    }


# ---------------------------------------------------------------- command line


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--model", action="append", default=[], metavar="NAME|MODULE:CALLABLE",
                   help="a bundled smoke model or module:callable; repeatable (default: mlp, block, convnet)")
    p.add_argument("--cache-dir", type=Path, help="compile cache (default: the smoke's, ~/.cache/aoti-shim/smoke)")
    p.add_argument("--shims", type=Path, help="the prefixed shim library (default: the installed reference shims)")
    p.add_argument("--prefix", help="the shims' prefix (default: read from the library)")
    p.add_argument("--rounds", type=int, default=30, help="interleaved rounds per model (and for the allocation pairs)")
    p.add_argument("--iterations", type=int, default=20, help="timed runs per variant per round")
    p.add_argument("--warmup", type=int, default=3, help="untimed runs per variant per round")
    p.add_argument("--alloc-seconds", type=float, default=0.05, help="per shim set per round")
    p.add_argument("--compile", choices=("zero-fallback", "default"), default="zero-fallback",
                   help="the smoke's compile of (a) and (b)'s blob; default: the plain compile, whose fallback ops "
                        "(cuBLAS, cuDNN, attention) then count in (a)/(b)")
    p.add_argument("--no-twin", action="store_true", help="skip (b'), the link_libtorch=True twin (a second compile)")
    p.add_argument("--no-graph", action="store_true", help="skip (g), CUDA-graph replay")
    p.add_argument("--no-profile", action="store_true", help="skip the profiled variant and the per-shim table")
    p.add_argument("--torch-loader", action="store_true", help="also torch's own loader on the twin (a child process)")
    p.add_argument("--stream", choices=(STREAM_NEW, STREAM_DEFAULT),
                   help="CUDA: the stream every run passes: new (a stream of its own made current, the default, what "
                   "runtimes pass) or default (the legacy default stream, a null pointer), as the smoke's --stream")
    p.add_argument("--sample-seconds", type=float, default=2.0,
                   help="seconds of (a) per model under the host sampler, the profile's independent check (0: none)")
    p.add_argument("--peer-shims", type=Path, metavar="LIB",
                   help="(p): another runtime's prefixed shim library, the same blob renamed to its prefix")
    p.add_argument("--peer-prefix", help="the peer's prefix (default: read from the library)")
    p.add_argument("--peer-name", help="the peer's name in the report (default: the library's file name)")
    p.add_argument("--json", type=Path, help="also write the results as JSON")
    p.add_argument("--compile-libtorch-worker", metavar="REQUEST", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def shims_prefix(library: Path, given: str | None, option: str = "--prefix") -> str:
    """``option``'s value when given, else the prefix ``library`` was built with."""
    from aoti_shim.checks.abi.prefix import given_or_built

    found = given_or_built(given, library)
    if not found:
        raise UsageError(f"{library}: exports no prefixed aoti_torch_* names; give {option}")
    return found


def peer_of(args: argparse.Namespace, our_prefix: str) -> Peer | None:
    """(p)'s library from ``--peer-shims``: a file, with a prefix other than ours."""
    if args.peer_shims is None:
        if args.peer_prefix or args.peer_name:
            raise UsageError("--peer-prefix and --peer-name need --peer-shims")
        return None
    library = args.peer_shims.resolve()
    if not library.is_file():
        raise UsageError(f"--peer-shims {args.peer_shims}: " + ("not a file" if library.exists() else "no such file"))
    prefix = shims_prefix(library, args.peer_prefix, "--peer-prefix")
    if prefix == our_prefix:
        raise UsageError(f"--peer-shims {args.peer_shims}: its prefix {prefix!r} is ours too; "
                         "each blob binds by its prefix, so the two need different ones")
    return Peer(library=library, prefix=prefix, name=args.peer_name or library.name)


def main(argv: list[str]) -> int:
    # SIGTERM (the GPU kit's `timeout`) unwinds as Ctrl-C does: the sampler stops, the loaded
    # blobs close and the work folder goes.
    with sigterm_as_interrupt():
        return _main(argv)


def _main(argv: list[str]) -> int:
    args = _parse(argv)
    if args.compile_libtorch_worker:
        return libtorch_compile_worker(args.compile_libtorch_worker)
    try:
        import torch

        from aoti_shim.paths import shim_library
        from aoti_shim.smoke.compile import default_cache_dir

        if args.device == "cuda" and not torch.cuda.is_available():
            raise UsageError("--device cuda: torch sees no CUDA device")
        if args.sample_seconds < 0 or not math.isfinite(args.sample_seconds):
            raise UsageError("--sample-seconds must be 0 or more")
        if args.rounds < 2 or args.iterations < 1 or args.warmup < 0:
            raise UsageError("--rounds must be at least 2 (an interval needs rounds), --iterations at least 1")
        library = args.shims.resolve() if args.shims else shim_library()
        prefix = shims_prefix(library, args.prefix)
        peer = peer_of(args, prefix)
        work_dir = Path(tempfile.mkdtemp(prefix="aoti-shim-bench-"))
        try:
            settings = BenchSettings(
                device=args.device,
                models=tuple(args.model) or DEFAULT_MODELS,
                cache_dir=(args.cache_dir or default_cache_dir()).resolve(),
                work_dir=work_dir,
                prefix=prefix,
                shim_library=library,
                rounds=args.rounds,
                iterations=args.iterations,
                warmup=args.warmup,
                alloc_seconds=args.alloc_seconds,
                twin=not args.no_twin,
                graph=not args.no_graph,
                profile=not args.no_profile,
                torch_loader=args.torch_loader,
                compile=args.compile,
                stream=stream_of(args.device, args.stream),
                sample_seconds=args.sample_seconds,
                peer=peer,
            )
            report = run_bench(settings, lambda m: print(f"bench: {m}", file=sys.stderr, flush=True))
        finally:
            shutil.rmtree(work_dir, ignore_errors=True)
    except AotiShimError as e:
        print(f"shim_latency: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:
        return interrupted("shim_latency", e)
    print(render(report))
    if args.json is not None:
        args.json.write_text(json.dumps(to_json(report), indent=2, default=str) + "\n")
    failed = any(OURS not in m.latency or m.error for m in report.models)
    return 8 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
