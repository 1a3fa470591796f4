"""A smoke row's evidence: the stream it passed, a failed run's first error line, and which
copy of the CUDA runtime a shim library bound to (read from the real loader's record)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from compile_support import compile_shared

from aoti_shim.smoke import bindings
from aoti_shim.smoke.command import _resolve_stream
from aoti_shim.smoke.evidence import first_error_line, runtime_copies
from aoti_shim.smoke.report import Row, SmokeReport
from aoti_shim.smoke.runner import RunSettings, run_container

# What a runtime's failed run prints (the shape of ExecuTorch's CUDA backend with a null
# stream): its own error line first, then the container's, then Python's traceback.
_FAILED_RUN = """\
[W] loading blob /proc/self/fd/5
E 00:00:01.123456 executorch:cuda_guard.cpp:52] Error: the stream must not be null (got the legacy default stream)
Error: AOTInductorModelContainerRun: CUDA stream guard failed
Traceback (most recent call last):
  File "run_child.py", line 99, in main
    result = run(request)
aoti_shim.smoke.runner.ShimCallError: AOTInductorModelContainerRun failed with status 1
"""


def test_the_first_error_line_is_the_runtimes_not_the_tracebacks(tmp_path: Path) -> None:
    log = tmp_path / "child.log"
    log.write_text(_FAILED_RUN)
    assert first_error_line(log) == (
        "E 00:00:01.123456 executorch:cuda_guard.cpp:52] Error: the stream must not be null (got the legacy default stream)"
    )
    log.write_text("all fine\n")
    assert first_error_line(log) is None
    assert first_error_line(tmp_path / "missing.log") is None


def test_the_stream_is_a_stream_of_its_own_on_cuda_and_none_on_the_cpu() -> None:
    assert _resolve_stream(None, "cuda") == "new"
    assert _resolve_stream("default", "cuda") == "default"
    assert _resolve_stream("new", "cpu") == "none"
    report = SmokeReport(device="cuda", torch_version="-", prefix="p_", shim_library="-", rows=(), stream="new")
    assert report.to_json()["stream"] == "new" and report.to_json()["schema_version"] == 3
    failed = Row(model="m", route="binary", prefix="p_", expected_binding="shims", first_error="E ... null stream")
    assert SmokeReport("cuda", "-", "p_", "-", (failed,)).to_json()["rows"][0]["first_error"] == "E ... null stream"


class _Recorder:
    """A container that records the stream it was run with (the CPU rehearsal of the CUDA path)."""

    num_outputs = 0

    def __init__(self) -> None:
        self.streams: list[object] = []

    def run(self, inputs: list[object], stream: object) -> list[object]:
        self.streams.append(stream)
        return []


class _NoShims:
    def wrap(self, tensor: object) -> object:
        return tensor


def test_a_cpu_run_passes_no_stream_whatever_the_choice() -> None:
    for choice in ("new", "default", "none"):
        container = _Recorder()
        run_container(_NoShims(), container, [], RunSettings(device="cpu", iterations=1, warmup=0, stream=choice))  # type: ignore[arg-type]
        assert set(container.streams) == {None}


# --- a second copy of the CUDA runtime: two files with libcudart's soname ----------------------

_LOAD = textwrap.dedent(
    """
    import ctypes, os, sys
    for path in sys.argv[1:]:
        ctypes.CDLL(path, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
    """
)


def _bindings_of(tmp: Path, *libraries: Path) -> list[bindings.Binding]:
    debug = tmp / "ld"
    debug.mkdir(parents=True)
    env = dict(os.environ, LD_DEBUG="bindings", LD_BIND_NOW="1", LD_DEBUG_OUTPUT=str(debug / "ld"))
    done = subprocess.run([sys.executable, "-c", _LOAD, *map(str, libraries)], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return list(bindings.parse_bindings(bindings.read_debug_output(debug)))


def test_a_shim_library_bound_to_another_copy_of_libcudart_is_named(tmp_path: Path) -> None:
    # Two copies of a stand-in runtime with libcudart's soname: the shims' own (beside them,
    # their RUNPATH) and "torch's", loaded first. The loader reuses the loaded one by soname.
    runtime = tmp_path / "cudart.c"
    runtime.write_text("int cudaGetDeviceCount(int* n) { *n = 0; return 0; }\n")
    own, torchs = tmp_path / "shims" / "libcudart.so.13", tmp_path / "torch" / "libcudart.so.13"
    for copy in (own, torchs):
        compile_shared(runtime, copy, ("-Wl,-soname,libcudart.so.13",))
    shim_source = tmp_path / "shim.c"
    shim_source.write_text("int cudaGetDeviceCount(int*);\nint myrt_aoti_torch_devices(void) { int n; cudaGetDeviceCount(&n); return n; }\n")
    shims = tmp_path / "shims" / "libmyrt_shims.so"
    compile_shared(shim_source, shims, (str(own), "-Wl,--enable-new-dtags,-rpath,$ORIGIN"))
    alone = runtime_copies(_bindings_of(tmp_path / "alone", shims), shims)
    assert alone == []
    notes = runtime_copies(_bindings_of(tmp_path / "with-torch", torchs, shims), shims)
    assert len(notes) == 1 and notes[0].startswith(f"libcudart.so.13: the shims' calls bound to {torchs}"), notes
    assert f"not their own {own}" in notes[0]
