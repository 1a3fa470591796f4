"""What one tensor costs the host in the shims: tight C loops of single shim calls, ours next to libtorch's.

A tiny C driver, compiled at run time with the system C compiler into a temporary folder,
dlopens each shim library (``RTLD_LOCAL``: each set is reached through its own handle) and
times, per round, tight loops of:

- ``empty_strided`` (float32 16x16, strides given as AOTInductor gives them) +
  ``delete_tensor_object``;
- ``_reinterpret_tensor`` (a 2-dim view at an offset of a live tensor) + ``delete_tensor_object``;
- ``get_data_ptr`` of a live tensor;
- with ``--device cuda`` also a stream guard alone (``create_cuda_stream_guard`` +
  ``delete_cuda_stream_guard``) and one run's fixed cost: a guard + one ``empty_strided`` + its
  delete + the guard's delete (the first tensor of a guard asks CUDA about its stream).

``--device cpu`` (the default) makes CPU tensors; ``--device cuda`` makes device 0's tensors
inside a CUDA stream guard on a non-blocking stream of the driver's own, as a compiled model's
run makes them on its caller's stream (libtorch's set is then ``libtorch_cuda.so``, whose
guard lives there; its other shims resolve through its dependencies). The driver makes the
stream with the CUDA runtime the libraries loaded.

The sets: the installed reference shims (their prefix read from the library), libtorch's own
shims (the anchor), and optionally a second library of ours (``--compare``, say a build before
a change). Every round runs every loop for every set, alternating the order; each line is ns
per call (or pair), the median over the rounds, and ``x torch`` is the median of the per-round
ratios to libtorch's. No ctypes: a loop is C calling through a function pointer, as a compiled
model's wrapper calls the shims.

Two byte-identical copies of one library, as ``--shims`` and ``--compare``, agree within about
1 ns on the view and ``get_data_ptr`` lines, run after run; on the CPU ``empty_strided`` line
they can sit up to a fifth apart, the same way in every run (most of that pair is glibc's
``posix_memalign`` of the data, whose cost depends on where each library's loop lands in the
heap). Compare two libraries' ``empty_strided`` lines in both orders.

    python bench/shim_calls.py
    python bench/shim_calls.py --compare /tmp/build-before/shims/libaoti_shim.so
    python bench/shim_calls.py --device cuda
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from aoti_shim.checks.abi.prefix import given_or_built
from aoti_shim.errors import AotiShimError, UsageError
from aoti_shim.signals import interrupted, sigterm_as_interrupt
from aoti_shim.torch_location import locate
from c_build import build_c

# The loops, in the driver's order and the table's, with the table's words for each.
CALLS = {
    "empty": "empty_strided + delete_tensor_object",
    "reinterpret": "_reinterpret_tensor + delete_tensor_object",
    "data_ptr": "get_data_ptr",
    "guard": "stream guard + guard delete",
    "run": "stream guard + empty_strided + delete + guard delete",
}
# Where the tensors live; a CPU run has no stream guard, so no "guard" or "run" loop.
DEVICES = ("cpu", "cuda")
ANCHOR = "libtorch"

DRIVER = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int32_t (*empty_fn)(int64_t, const int64_t*, const int64_t*, int32_t, int32_t, int32_t, void**);
typedef int32_t (*delete_fn)(void*);
typedef int32_t (*reinterpret_fn)(void*, int64_t, const int64_t*, const int64_t*, int64_t, void**);
typedef int32_t (*data_ptr_fn)(void*, void**);
typedef int32_t (*guard_fn)(void*, int32_t, void**);
typedef int (*stream_create_fn)(void**, unsigned);

typedef struct {
  const char* label;
  empty_fn empty;
  delete_fn del;
  reinterpret_fn reinterpret;
  data_ptr_fn data_ptr;
  guard_fn guard;
  delete_fn guard_delete;
  void* base;
} Shims;

static const int64_t kSizes[2] = {16, 16}, kStrides[2] = {16, 1};
static const int64_t kViewSizes[2] = {8, 16}, kViewStrides[2] = {16, 1};
static int device_type = 0; /* 0 CPU, 1 CUDA (c10::DeviceType) */
static void* stream = NULL;

static void die(const char* label, const char* what) {
  fprintf(stderr, "%s: %s\n", label, what);
  exit(3);
}

static void* need(void* lib, const char* label, const char* prefix, const char* name) {
  char full[256];
  snprintf(full, sizeof full, "%s%s", prefix, name);
  void* f = dlsym(lib, full);
  if (f == NULL) die(label, dlerror());
  return f;
}

static void load(Shims* s, const char* label, const char* path, const char* prefix) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) die(label, dlerror());
  s->label = label;
  s->empty = (empty_fn)need(lib, label, prefix, "aoti_torch_empty_strided");
  s->del = (delete_fn)need(lib, label, prefix, "aoti_torch_delete_tensor_object");
  s->reinterpret = (reinterpret_fn)need(lib, label, prefix, "aoti_torch__reinterpret_tensor");
  s->data_ptr = (data_ptr_fn)need(lib, label, prefix, "aoti_torch_get_data_ptr");
  if (device_type == 1) {
    s->guard = (guard_fn)need(lib, label, prefix, "aoti_torch_create_cuda_stream_guard");
    s->guard_delete = (delete_fn)need(lib, label, prefix, "aoti_torch_delete_cuda_stream_guard");
  }
}

/* The CUDA runtime the shim libraries loaded (found among the loaded objects, not named). */
static int find_cudart(struct dl_phdr_info* info, size_t size, void* found) {
  (void)size;
  const char* slash = strrchr(info->dlpi_name, '/');
  const char* base = slash ? slash + 1 : info->dlpi_name;
  if (strncmp(base, "libcudart.so", 12) != 0) return 0;
  *(void**)found = dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD);
  return *(void**)found != NULL;
}

static void make_stream(void) {
  void* cudart = NULL;
  dl_iterate_phdr(find_cudart, &cudart);
  if (cudart == NULL) die("driver", "no shim library loaded a CUDA runtime (libcudart.so*)");
  stream_create_fn create = (stream_create_fn)dlsym(cudart, "cudaStreamCreateWithFlags");
  if (create == NULL) die("driver", dlerror());
  if (create(&stream, 1 /* cudaStreamNonBlocking */) != 0) die("driver", "cudaStreamCreateWithFlags failed");
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double run(const Shims* s, int call, long n) {
  void* h = NULL;
  void* g = NULL;
  double start = now_ns();
  for (long i = 0; i < n; ++i) {
    if (call == 0) {
      if (s->empty(2, kSizes, kStrides, 6, device_type, 0, &h) != 0 || s->del(h) != 0)
        die(s->label, "empty_strided + delete failed");
    } else if (call == 1) {
      if (s->reinterpret(s->base, 2, kViewSizes, kViewStrides, 16, &h) != 0 || s->del(h) != 0)
        die(s->label, "_reinterpret_tensor + delete failed");
    } else if (call == 2) {
      if (s->data_ptr(s->base, &h) != 0 || h == NULL) die(s->label, "get_data_ptr failed");
    } else if (call == 3) {
      if (s->guard(stream, 0, &g) != 0 || s->guard_delete(g) != 0) die(s->label, "stream guard + guard delete failed");
    } else if (s->guard(stream, 0, &g) != 0 || s->empty(2, kSizes, kStrides, 6, device_type, 0, &h) != 0 ||
               s->del(h) != 0 || s->guard_delete(g) != 0) {
      die(s->label, "stream guard + empty_strided + delete + guard delete failed");
    }
  }
  return (now_ns() - start) / (double)n;
}

/* driver DEVICE ITERATIONS ROUNDS (LABEL PATH PREFIX)... : one line per round, call and set.
   On CUDA every loop runs inside a stream guard of its set on the driver's stream (the run
   loop's guard is a second one inside it, as a model's is inside its runtime's). */
int main(int argc, char** argv) {
  static const char* kCalls[5] = {"empty", "reinterpret", "data_ptr", "guard", "run"};
  if (argc < 7 || (argc - 4) % 3 != 0) die("driver", "usage: driver DEVICE ITERATIONS ROUNDS (LABEL PATH PREFIX)...");
  device_type = strcmp(argv[1], "cuda") == 0 ? 1 : 0;
  int calls = device_type == 1 ? 5 : 3;
  long iterations = atol(argv[2]);
  int rounds = atoi(argv[3]), sets = (argc - 4) / 3;
  Shims* all = calloc((size_t)sets, sizeof(Shims));
  for (int i = 0; i < sets; ++i) load(&all[i], argv[4 + 3 * i], argv[5 + 3 * i], argv[6 + 3 * i]);
  if (device_type == 1) make_stream();
  for (int i = 0; i < sets; ++i) {
    void* outer = NULL;
    if (device_type == 1 && all[i].guard(stream, 0, &outer) != 0) die(all[i].label, "stream guard failed");
    if (all[i].empty(2, kSizes, kStrides, 6, device_type, 0, &all[i].base) != 0)
      die(all[i].label, "empty_strided failed");
  }
  for (int i = 0; i < sets; ++i)
    for (int c = 0; c < calls; ++c) run(&all[i], c, iterations / 10 + 1); /* warm-up */
  for (int r = 0; r < rounds; ++r)
    for (int c = 0; c < calls; ++c)
      for (int k = 0; k < sets; ++k) {
        const Shims* s = &all[(r % 2 == 0) ? k : sets - 1 - k];
        printf("%d %s %s %.3f\n", r, kCalls[c], s->label, run(s, c, iterations));
      }
  return 0;
}
"""


@dataclass(frozen=True)
class ShimSet:
    """One library the driver loads: its label in the table, its path and its prefix."""

    label: str
    path: Path
    prefix: str


@dataclass(frozen=True)
class Sample:
    """One timed loop: ns per call (or pair) of ``call`` through ``label`` in round ``round``."""

    round: int
    call: str
    label: str
    ns: float


@dataclass(frozen=True)
class Row:
    """One call of the table: the median ns per set and the median per-round ratio to the anchor."""

    call: str
    ns: dict[str, float]
    ratio: dict[str, float]


def compile_driver(folder: Path, compiler: str) -> Path:
    """The driver, built by ``compiler`` in ``folder``."""
    return build_c(DRIVER, folder, "shim_calls_driver", compiler, "the driver", ["-ldl"])


def run_driver(driver: Path, device: str, sets: list[ShimSet], iterations: int, rounds: int) -> list[Sample]:
    """Every set's loops for ``device``, ``rounds`` times, in one process."""
    argv = [str(driver), device, str(iterations), str(rounds)]
    for s in sets:
        argv += [s.label, str(s.path), s.prefix]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        lines = (done.stderr.strip() or f"exit status {done.returncode}").splitlines()
        raise AotiShimError(f"the driver failed: {lines[-1]}")
    samples = []
    for line in done.stdout.splitlines():
        number, call, label, ns = line.split()
        samples.append(Sample(int(number), call, label, float(ns)))
    return samples


def summarize(samples: list[Sample], labels: list[str]) -> list[Row]:
    """Per call timed: each set's median ns, and the median of its per-round ratios to the anchor's."""
    by: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    for s in samples:
        by[(s.call, s.label)][s.round] = s.ns
    rows = []
    for call in (c for c in CALLS if (c, ANCHOR) in by):
        anchor = by[(call, ANCHOR)]
        ns = {label: statistics.median(by[(call, label)].values()) for label in labels}
        ratio = {
            label: statistics.median(v / anchor[r] for r, v in by[(call, label)].items() if anchor.get(r))
            for label in labels if label != ANCHOR
        }
        rows.append(Row(call, ns, ratio))
    return rows


def render(rows: list[Row], sets: list[ShimSet], device: str, iterations: int, rounds: int) -> str:
    labels = [s.label for s in sets]
    ours = [label for label in labels if label != ANCHOR]
    lines = [f"# shim calls: ns per call (or pair), median of {rounds} rounds of {iterations} iterations"]
    if device == "cuda":
        lines.append("# device: cuda:0, every loop inside a CUDA stream guard on a non-blocking stream")
    lines += [f"#   {s.label}: {s.path}" + (f" (prefix {s.prefix})" if s.prefix else "") for s in sets]
    head = f"{'call':<44}" + "".join(f"{label + ' ns':>14}" for label in labels)
    lines.append(head + "".join(f"{label + ' x torch':>18}" for label in ours))
    for row in rows:
        cells = "".join(f"{row.ns[label]:>14.1f}" for label in labels)
        lines.append(f"{CALLS[row.call]:<44}" + cells + "".join(f"{row.ratio[label]:>18.2f}" for label in ours))
    return "\n".join(lines)


def _torch_library(given: Path | None, device: str) -> Path:
    if given is not None:
        return given.resolve()
    where = locate()
    if where is None:
        raise UsageError("no torch found for the anchor: install torch or give --torch-lib")
    # libtorch's CUDA stream guard is in libtorch_cuda.so, which needs libtorch_cpu.so.
    return where.lib / ("libtorch_cuda.so" if device == "cuda" else "libtorch_cpu.so")


def _ours(path: Path, given: str | None) -> str:
    found = given_or_built(given, path)
    if not found:
        raise UsageError(f"{path}: exports no prefixed aoti_torch_* names; give --prefix")
    return found


def _sets(args: argparse.Namespace) -> list[ShimSet]:
    from aoti_shim.paths import shim_library

    library = args.shims.resolve() if args.shims else shim_library()
    sets = [ShimSet("ours", library, _ours(library, args.prefix))]
    if args.compare is not None:
        sets.append(ShimSet("compare", args.compare.resolve(), _ours(args.compare, args.prefix)))
    torch = _torch_library(args.torch_lib, args.device)
    if not torch.is_file():
        raise UsageError(f"{torch}: no such library (the anchor: libtorch's shims)")
    return [*sets, ShimSet(ANCHOR, torch, "")]


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shims", type=Path, help="our prefixed shim library (default: the installed reference shims)")
    p.add_argument("--compare", type=Path, help="a second library of ours, timed in the same rounds")
    p.add_argument("--prefix", help="our libraries' prefix (default: read from each library)")
    p.add_argument("--torch-lib", type=Path, help="libtorch's shims (default: the installed torch's libtorch_cpu.so)")
    p.add_argument("--device", choices=DEVICES, default="cpu",
                   help="where the tensors live (cuda: device 0, inside a stream guard)")
    p.add_argument("--iterations", type=int, default=200_000, help="calls per loop per round")
    p.add_argument("--rounds", type=int, default=11, help="rounds; each runs every loop of every set")
    p.add_argument("--cc", default=os.environ.get("CC", "cc"), help="the C compiler (default: $CC, else cc)")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    # SIGTERM unwinds as Ctrl-C does: subprocess.run kills the driver, the temp folder goes.
    with sigterm_as_interrupt():
        return _main(argv)


def _main(argv: list[str]) -> int:
    args = _parse(argv)
    try:
        if args.iterations < 1 or args.rounds < 1:
            raise UsageError("--iterations and --rounds must be at least 1")
        sets = _sets(args)
        folder = Path(tempfile.mkdtemp(prefix="aoti-shim-calls-"))
        try:
            samples = run_driver(compile_driver(folder, args.cc), args.device, sets, args.iterations, args.rounds)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    except AotiShimError as e:
        print(f"shim_calls: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:
        return interrupted("shim_calls", e)
    print(render(summarize(samples, [s.label for s in sets]), sets, args.device, args.iterations, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
