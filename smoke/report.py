"""The smoke run's result: one row per model and route, as a table or JSON."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from aoti_shim.atomic import write_text_atomically

ROUTE_SOURCE = "source"
ROUTE_BINARY = "binary"
ROUTE_CONTROL = "control"

# 2: the control and eager checks (control_*, eager_* fields).
# 3: the stream the runs used (report.stream), a failed row's first error line and the
#    runtime-library copies a shim library bound to (first_error, notes).
SCHEMA_VERSION = 3

# The CUDA stream the runs pass to AOTInductorModelContainerRun.
STREAM_NEW = "new"  # a stream of its own, made torch's current stream: what real runtimes pass
STREAM_DEFAULT = "default"  # the legacy default stream, a null pointer (some runtimes' guards refuse it)
STREAM_NONE = "none"  # a CPU run
STREAM_LABELS = {
    STREAM_NEW: "new (a stream of its own, made current)",
    STREAM_DEFAULT: "default (the legacy default stream: a null pointer)",
    STREAM_NONE: "none (cpu)",
}


@dataclass(frozen=True)
class Row:
    model: str
    route: str  # source | binary | control (the unprefixed blob)
    prefix: str  # the prefix the blob imports ("" for the control)
    expected_binding: str  # shims | libtorch
    binding: str = "-"  # shims | libtorch | mixed: ... | none | -
    bound: dict[str, int] = field(default_factory=dict)  # place -> number of aoti_torch imports
    # Against eager in the blob's own dtype (the smoke's first check, kept for comparison).
    max_abs: float | None = None
    max_rel: float | None = None
    # Against the control (the same blob through libtorch's shims): None when not checked.
    control_max_abs: float | None = None
    control_bound: float | None = None
    control_bitwise: bool | None = None
    control_ok: bool | None = None
    # Against eager in float64 ("float64"), or in the blob's dtype when the module cannot
    # run in float64 ("same dtype"; then eager_bound is None and the fixed tolerances apply).
    eager_reference: str = "-"
    eager_max_abs: float | None = None
    eager_bound: float | None = None
    eager_ok: bool | None = None
    median_us: float | None = None
    checker: str = "-"  # what the checker said about this blob
    # A failed run's first error line (the shims' or the container's, not the traceback's last).
    first_error: str | None = None
    # Facts of the run worth a line: a runtime library (libcudart) bound to another copy in the process.
    notes: tuple[str, ...] = ()
    ok: bool = False
    status: str = "not run"

    @property
    def route_label(self) -> str:
        return f"{self.route} ({self.prefix})" if self.prefix else f"{self.route} (unprefixed)"


@dataclass(frozen=True)
class SmokeReport:
    device: str
    torch_version: str
    prefix: str
    shim_library: str
    rows: tuple[Row, ...]
    stream: str = STREAM_NONE

    @property
    def ok(self) -> bool:
        return bool(self.rows) and all(r.ok for r in self.rows)

    def to_json(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "device": self.device,
            "torch_version": self.torch_version,
            "prefix": self.prefix,
            "shim_library": self.shim_library,
            "stream": self.stream,
            "ok": self.ok,
            "rows": [_finite(asdict(r)) for r in self.rows],
        }


def _finite(row: dict) -> dict:
    """JSON has no NaN or infinity: write null instead."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}


def _number(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.1e}"


def _latency(us: float | None) -> str:
    """Microseconds, always: one unit for the whole column (the header names it)."""
    if us is None or not math.isfinite(us):
        return "-"
    return f"{us:.1f}"


def _binding(row: Row) -> str:
    if not row.bound:
        return row.binding
    total = sum(row.bound.values())
    return f"{row.binding} ({total})" if not row.binding.startswith("mixed") else row.binding


def _versus(max_abs: float | None, bound: float | None, bitwise: bool | None = None) -> str:
    """A check's cell: "bitwise", or the error with the bound it must stay under."""
    if bitwise:
        return "bitwise"
    if max_abs is None:
        return "-"
    if bound is None:
        return _number(max_abs)
    return f"{_number(max_abs)} (<={_number(bound)})"


HEADERS = ("model", "route", "imports bound to", "vs control", "vs eager f64", "median us", "checker", "result")


def render_table(report: SmokeReport) -> str:
    cells = [
        (
            r.model, r.route_label, _binding(r), _versus(r.control_max_abs, r.control_bound, r.control_bitwise),
            _versus(r.eager_max_abs, r.eager_bound),
            _latency(r.median_us), r.checker, r.status,
        )
        for r in report.rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(HEADERS)]

    def line(values: tuple[str, ...]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()

    out = [line(HEADERS), line(tuple("-" * w for w in widths)), *(line(c) for c in cells)]
    return "\n".join(out)


def summary_line(report: SmokeReport) -> str:
    """One line saying what a passing run proved."""
    prefixed = [r for r in report.rows if r.route != ROUTE_CONTROL]
    controls = [r for r in report.rows if r.route == ROUTE_CONTROL]
    models = len({r.model for r in report.rows})
    proven = (
        f"smoke ok: {len(prefixed)} prefixed blob{'s' if len(prefixed) != 1 else ''} of {models} "
        f"model{'s' if models != 1 else ''} bound every aoti_torch import to the shims ({report.prefix}) "
        "next to a global libtorch and matched eager torch"
    )
    if not controls:
        return proven + "; no control was run (--no-control)"
    return (
        proven + f"; {len(controls)} unprefixed control{'s' if len(controls) != 1 else ''} bound to libtorch, "
        "reproducing the collision"
    )


class StepLog:
    """Progress on standard error: a line when each compile, build and run starts,
    numbered against the planned steps and stamped with the time since the start."""

    def __init__(self, total: int, emit: Callable[[str], None], clock: Callable[[], float] = time.monotonic) -> None:
        self._total = total
        self._emit = emit
        self._clock = clock
        self._start = clock()
        self._count = 0

    def __call__(self, what: str) -> None:
        self._count += 1
        elapsed = int(self._clock() - self._start)
        self._emit(f"[{self._count}/{max(self._total, self._count)} {elapsed // 60}:{elapsed % 60:02d}] {what}")


def write_json(report: SmokeReport, path: Path, inputs: tuple[Path, ...] = ()) -> None:
    """Written to a temp file and renamed, so a reader never sees half a report; never an input."""
    text = json.dumps(report.to_json(), indent=2) + "\n"
    write_text_atomically(path.resolve(), text, what="--json", inputs=inputs)
