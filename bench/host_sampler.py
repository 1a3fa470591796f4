"""Where a thread's time goes, by sampling: the share of its samples whose call stack holds a
frame of one library, with no instrumentation in that library.

The shim profile (``aoti_shim_profile_*``) times each entry point with two clock reads and
a table update, and the bench nets that cost out with a figure calibrated hot, on an empty
probe. Inside an inference the caches are cold and that figure is a guess. This sampler is
the independent measure: a timer of the thread's own (``timer_create``, ``SIGEV_THREAD_ID``,
``CLOCK_MONOTONIC``) interrupts it at random intervals around a mean, and the handler walks
its stack (``backtrace``, which unwinds through the signal frame) looking for a return
address inside the library's executable segments. A sample counts only while the window is
open, so the share is over the timed runs alone. Its cost, a few microseconds a sample,
falls on whatever it interrupted, in proportion to the samples there, so it slows the thread
without moving the share. A thread waiting for a CPU is not sampled: the samples due meanwhile
come as one when it runs again, where it stopped, so the share is of the time it ran (on a
busy machine, code that waits longer for its CPU reads smaller than its wall time).

The unwinder must be safe in a signal handler: libgcc 12 or later with glibc 2.35 or later
(``_dl_find_object``), as in CI (glibc 2.36, libgcc 12); older ones walk ``dl_iterate_phdr``
and a shared cache that a signal can interrupt mid-update.

The helper is C built at run time (bench/c_build.py), loaded into the bench's own process.
"""

from __future__ import annotations

import ctypes
import math
import os
from dataclasses import dataclass
from pathlib import Path

from aoti_shim.errors import AotiShimError
from c_build import build_c

# Return addresses walked per sample, the handler's own two (it and the signal trampoline)
# among them: the shims' own calls go a few frames down (into libc, the loader, the driver).
STACK_FRAMES = 16
# Below this mean interval the handler's own time can use up the thread: it never gets on.
MIN_INTERVAL_US = 10.0

SAMPLER = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { kMaxRanges = 16, kFrames = FRAMES };
static uintptr_t range_lo[kMaxRanges], range_hi[kMaxRanges];
static int ranges;
static volatile sig_atomic_t window_open;
static volatile long in_library, samples;
static timer_t timer;
static long mean_ns;
static unsigned long long seed = 0x9E3779B97F4A7C15ull;
static struct sigaction previous;
static int signal_number;
static int started;

/* The next expiry, a uniform step in [mean/2, 3*mean/2] after the last one was due (a fixed
   period could lock onto a loop's). Due times do not move with the handler's own time or
   with the window, so samples fall at the same rate whatever they interrupt: timed from the
   handler's end, a window opening after cheap closed-window samples caught its first
   microseconds more often (+4 points for a library that opened each window in the test). */
static long long due_ns;
static void rearm(void) {
  seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
  long step = mean_ns / 2 + (long)(seed % (unsigned long long)mean_ns);
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  long long now_ns = (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
  due_ns += step;
  if (due_ns <= now_ns) due_ns = now_ns + step; /* a handler or a stall ran past it */
  struct itimerspec next;
  memset(&next, 0, sizeof next);
  next.it_value.tv_sec = (time_t)(due_ns / 1000000000LL);
  next.it_value.tv_nsec = (long)(due_ns % 1000000000LL);
  timer_settime(timer, TIMER_ABSTIME, &next, NULL);
}

static void on_sample(int sig, siginfo_t* info, void* context) {
  (void)sig; (void)info; (void)context;
  int saved_errno = errno; /* the interrupted code may be between a call and its errno read */
  if (window_open) {
    void* frames[kFrames];
    int n = backtrace(frames, kFrames);
    samples++;
    for (int i = 0; i < n; ++i) {
      uintptr_t pc = (uintptr_t)frames[i];
      int hit = 0;
      for (int r = 0; r < ranges; ++r) hit |= pc >= range_lo[r] && pc < range_hi[r];
      if (hit) { in_library++; break; }
    }
  }
  rearm();
  errno = saved_errno;
}

static const char* wanted;
static int add_ranges(struct dl_phdr_info* info, size_t size, void* unused) {
  (void)size; (void)unused;
  char real[PATH_MAX];
  if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0' || realpath(info->dlpi_name, real) == NULL) return 0;
  if (strcmp(real, wanted) != 0) return 0;
  for (int i = 0; i < info->dlpi_phnum && ranges < kMaxRanges; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    range_lo[ranges] = info->dlpi_addr + ph->p_vaddr;
    range_hi[ranges] = range_lo[ranges] + ph->p_memsz;
    ++ranges;
  }
  return 1;
}

/* 0 ok; 1 the library is not loaded; 2 no timer or signal; 3 already sampling. */
int sampler_start(const char* real_path, long mean_interval_ns) {
  if (started) return 3;
  wanted = real_path;
  ranges = 0;
  dl_iterate_phdr(add_ranges, NULL);
  if (ranges == 0) return 1; /* not loaded, or no code to be found in */
  void* warm[4];
  backtrace(warm, 4); /* loads the unwinder now, not inside the first handler */
  mean_ns = mean_interval_ns > 1 ? mean_interval_ns : 2;
  in_library = samples = 0;
  window_open = 0;
  signal_number = SIGRTMIN + 4;
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_sample;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(signal_number, &action, &previous) != 0) return 2;
  struct sigevent event;
  memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = signal_number;
  event._sigev_un._tid = (pid_t)syscall(SYS_gettid);
  if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0) {
    sigaction(signal_number, &previous, NULL);
    return 2;
  }
  due_ns = 0;
  started = 1;
  rearm();
  return 0;
}

void sampler_window(int open) { window_open = open; }

void sampler_read(long* in_lib, long* all) { *in_lib = in_library; *all = samples; }

void sampler_stop(void) {
  window_open = 0;
  if (!started) return; /* no timer of ours: timer id 0 may be someone else's */
  timer_delete(timer);
  sigaction(signal_number, &previous, NULL);
  started = 0;
}
"""


@dataclass(frozen=True)
class SampledShare:
    """``in_library`` of ``samples`` had a frame of the library; the share and its 95% interval."""

    in_library: int
    samples: int

    @property
    def share(self) -> float:
        return self.in_library / self.samples if self.samples else math.nan

    def interval(self) -> tuple[float, float]:
        """Wilson's 95% interval for the share (sound near 0, where the normal one is not).
        It takes the samples as independent; samples of one inference are not quite, so it
        is the interval of an ideal sampler, narrower than the spread between runs."""
        n, z = self.samples, 1.959964
        if n == 0:
            return math.nan, math.nan
        p = self.share
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, centre - half), min(1.0, centre + half)


class HostSampler:
    """The built helper, loaded into this process: ``start`` on the thread to sample,
    ``window`` around what is measured, ``stop`` to read the counts."""

    def __init__(self, folder: Path, compiler: str) -> None:
        built = build_c(SAMPLER.replace("FRAMES", str(STACK_FRAMES)), folder, "host_sampler.so", compiler,
                        "the host sampler", ["-shared", "-fPIC", "-lrt"])
        try:
            self._lib = ctypes.CDLL(str(built))
        except OSError as e:
            raise AotiShimError(f"the host sampler built but does not load: {e}") from None
        self._lib.sampler_start.argtypes = [ctypes.c_char_p, ctypes.c_long]
        self._lib.sampler_start.restype = ctypes.c_int
        self._lib.sampler_window.argtypes = [ctypes.c_int]
        self._lib.sampler_window.restype = None
        self._lib.sampler_read.argtypes = [ctypes.POINTER(ctypes.c_long), ctypes.POINTER(ctypes.c_long)]
        self._lib.sampler_read.restype = None
        self._lib.sampler_stop.argtypes = []
        self._lib.sampler_stop.restype = None
        self.window = self._lib.sampler_window  # a ctypes call each side of a timed run

    def start(self, library: Path, mean_interval_us: float) -> None:
        """Samples this thread from now on, looking for frames of ``library`` (loaded already)."""
        if not mean_interval_us >= MIN_INTERVAL_US:
            raise AotiShimError(f"a mean interval of {mean_interval_us} us is under {MIN_INTERVAL_US:g} us")
        code = self._lib.sampler_start(os.fsencode(os.path.realpath(library)), int(mean_interval_us * 1000))
        if code == 1:
            raise AotiShimError(f"{library}: not loaded in this process, so it cannot be sampled")
        if code == 3:
            raise AotiShimError("the host sampler is sampling already: stop it first")
        if code != 0:
            raise AotiShimError("the host sampler could not set up its timer or signal")

    def stop(self) -> SampledShare:
        """Stops sampling; what the open windows saw."""
        self._lib.sampler_stop()
        in_library, samples = ctypes.c_long(), ctypes.c_long()
        self._lib.sampler_read(ctypes.byref(in_library), ctypes.byref(samples))
        return SampledShare(in_library.value, samples.value)
