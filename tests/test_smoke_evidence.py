"""A smoke row's evidence: the stream it passed, a failed run's first error line, and which
copy of the CUDA runtime a shim library bound to (read from the real loader's record)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aoti_shim.smoke import bindings
from aoti_shim.smoke.command import _resolve_stream
from aoti_shim.smoke.evidence import first_error_line, runtime_copies
from aoti_shim.smoke.report import Row, SmokeReport
from aoti_shim.smoke.runner import RunSettings, run_container
from compile_support import compile_shared

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
        "E 00:00:01.123456 executorch:cuda_guard.cpp:52] Error: the stream must not be null (got the legacy default "
        "stream)"
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
        run_container(_NoShims(), container, [], RunSettings(device="cpu", iterations=1, warmup=0, stream=choice))
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
    done = subprocess.run(
        [sys.executable, "-c", _LOAD, *map(str, libraries)], env=env, capture_output=True, text=True, check=False
    )
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
    shim_source.write_text(
        "int cudaGetDeviceCount(int*);\nint myrt_aoti_torch_devices(void) { int n; cudaGetDeviceCount(&n); return n; "
        "}\n"
    )
    shims = tmp_path / "shims" / "libmyrt_shims.so"
    compile_shared(shim_source, shims, (str(own), "-Wl,--enable-new-dtags,-rpath,$ORIGIN"))
    alone = runtime_copies(_bindings_of(tmp_path / "alone", shims), shims)
    assert alone == []
    notes = runtime_copies(_bindings_of(tmp_path / "with-torch", torchs, shims), shims)
    assert len(notes) == 1 and notes[0].startswith(f"libcudart.so.13: the shims' calls bound to {torchs}"), notes
    assert f"not their own {own}" in notes[0]


# --- a failed row on the CPU: a runtime's shims that refuse one call --------------------------

_REFUSED = "aoti_torch_empty_strided"
_REFUSAL = "E rt_runtime: aoti_torch_empty_strided refused: the runtime's allocator is not initialised"


def _refusing_shims(tmp: Path, reference: Path, prefix: str) -> Path:
    """Shims "of a runtime": every name of the reference library under the prefix myrt_ (a jump
    through a slot that a constructor fills from the reference library, opened RTLD_LOCAL, so no
    reference name is imported), except one that prints the runtime's own error line and fails."""
    from aoti_shim.checks.elf.image import ElfImage

    with ElfImage(reference) as image:
        names = sorted(
            n[len(prefix) :]
            for n in image.exports()
            if n.startswith(f"{prefix}aoti_torch_") and n[len(prefix) :] != _REFUSED
        )
    lines = ["#include <dlfcn.h>", "#include <stdint.h>", "#include <stdio.h>"]
    for i, name in enumerate(names):
        lines.append(f'__attribute__((visibility("hidden"))) void* slot_{i};')
        lines.append(
            f'__asm__(".globl myrt_{name}\\n.type myrt_{name}, @function\\nmyrt_{name}:\\n  jmp *slot_{i}(%rip)\\n");'
        )
    lines.append(f'int32_t myrt_{_REFUSED}(void) {{ fprintf(stderr, "{_REFUSAL}\\n"); return 1; }}')
    lines.append("__attribute__((constructor)) static void bind_slots(void) {")
    lines.append(f'  void* h = dlopen("{reference}", RTLD_NOW | RTLD_LOCAL);')
    lines += [f'  slot_{i} = dlsym(h, "{prefix}{name}");' for i, name in enumerate(names)]
    lines.append("}")
    source = tmp / "refusing_shims.c"
    source.write_text("\n".join(lines) + "\n")
    library = tmp / "librefusing_shims.so"
    compile_shared(source, library, ("-ldl",))
    return library


@pytest.mark.compiles(("mlp", "binary"))
def test_a_failed_row_keeps_the_bindings_and_the_first_error_line(smoke_cache: Path, tmp_path: Path) -> None:
    import json

    from shims_support import reference_library
    from smoke_support import PREFIX

    shims = _refusing_shims(tmp_path, reference_library(), PREFIX)
    out = tmp_path / "r.json"
    # The run child's traceback is part of the evidence shown (its last lines), so no traceback-free runner here.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "aoti_shim",
            "smoke",
            "--device",
            "cpu",
            "--model",
            "mlp",
            "--route",
            "binary",
            "--no-control",
            "--iterations",
            "1",
            "--shims",
            str(shims),
            "--prefix",
            "myrt_",
            "--cache-dir",
            str(smoke_cache),
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 8, proc.stdout + proc.stderr[-3000:]
    (row,) = json.loads(out.read_text())["rows"]
    # The runtime's own line, not the traceback's last one; the loader's bindings are kept.
    assert row["first_error"] == _REFUSAL and row["status"].startswith("FAIL: ")
    assert _REFUSAL in row["status"] and row["binding"] == "shims" and row["bound"]["shims"] >= 10
    assert f"the first error it printed: {_REFUSAL}" in proc.stderr
