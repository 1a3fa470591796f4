"""The shims' CUDA kernels on a GPU, against torch; and a `cuda = true` project's kernel.

- The installed reference shims (kernels.cu, built by nvcc from the wheels or a toolkit):
  ``copy_`` between CUDA tensors with dtype conversion, broadcasting and strided views on
  both sides, ``fill_.Scalar`` and ``zero_`` on views, each compared element for element
  with torch doing the same on the same tensors; and a 4096x4096 transposed converting
  copy, timed against torch's own.
- fixtures/packages/plugin_cuda's kernel: from the wheel built on the CPU machine with no
  toolkit (``docs/gpu/build_cuda_fixture_wheel.sh`` puts it in ``.whl/``, which the H200
  script installs), else built here with ``pip wheel --no-build-isolation``.

Every result is printed (``-s``) so the run's log records it. Skips without a CUDA GPU
(``AOTI_SHIM_GPU_DEVICE=cpu`` rehearses the same checks on the host paths).
GPU run: ``python3 -m pytest -s -v tests/gpu/test_cuda_kernels_gpu.py`` (docs/gpu/run_h200.sh).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import torch  # in the test extra: its absence fails, it does not skip

# AOTI_SHIM_GPU_DEVICE=cpu: a rehearsal on a machine without a GPU (the host paths, same checks).
DEVICE = os.environ.get("AOTI_SHIM_GPU_DEVICE", "cuda")
# Skipped, not left out: CI still imports the module and collects its tests.
pytestmark = pytest.mark.skipif(DEVICE == "cuda" and not torch.cuda.is_available(), reason="needs a CUDA GPU")

from aoti_shim.checks.abi.prefix import DEFAULT_PREFIX  # noqa: E402 - after the module's GPU skip
from aoti_shim.paths import shim_library  # noqa: E402 - after the module's GPU skip
from aoti_shim.smoke.runner import ShimApi  # noqa: E402 - after the module's GPU skip

REPO = Path(__file__).resolve().parents[2]
PREFIX = DEFAULT_PREFIX  # what the installed reference shims carry
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64, torch.int8,
          torch.uint8, torch.bool]


def _sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


class Shims:
    """The installed shims' copy_, fill_ and zero_ over torch tensors (non-owning handles)."""

    def __init__(self) -> None:
        self.library = ctypes.CDLL(str(shim_library()), mode=os.RTLD_LOCAL)
        self.api = ShimApi(self.library, PREFIX)

        def fn(name: str, *argtypes: object) -> object:
            f = getattr(self.library, PREFIX + name)
            f.argtypes, f.restype = list(argtypes), ctypes.c_int32
            return f

        h = ctypes.c_void_p
        self._copy = fn("aoti_torch_copy_", h, h, ctypes.c_int32)
        self._fill = fn("aoti_torch_cuda_fill__Scalar", h, ctypes.c_double)
        self._zero = fn("aoti_torch_zero_", h)
        self._last = getattr(self.library, PREFIX + "aoti_shim_last_error")
        self._last.restype = ctypes.c_char_p

    def _call(self, what: str, status: int) -> None:
        assert status == 0, f"{what}: status {status}: {self._last().decode(errors='replace')}"

    def copy_(self, dst: torch.Tensor, src: torch.Tensor) -> None:
        d, s = self.api.wrap(dst), self.api.wrap(src)
        try:
            self._call("copy_", self._copy(d, s, 0))
        finally:
            self.api.delete(d)
            self.api.delete(s)
        _sync()

    def fill_(self, dst: torch.Tensor, value: float) -> None:
        d = self.api.wrap(dst)
        try:
            self._call("fill_", self._fill(d, value))
        finally:
            self.api.delete(d)
        _sync()

    def zero_(self, dst: torch.Tensor) -> None:
        d = self.api.wrap(dst)
        try:
            self._call("zero_", self._zero(d))
        finally:
            self.api.delete(d)
        _sync()


@pytest.fixture(scope="module")
def shims() -> Shims:
    return Shims()


def _source(dtype: torch.dtype) -> torch.Tensor:
    """A transposed, sliced CUDA view of values every dtype holds (0..59.75 in quarters, some negative)."""
    base = torch.arange(0, 240, device=DEVICE, dtype=torch.float32).reshape(12, 20) * 0.25
    if dtype not in (torch.uint8, torch.bool):
        base[::3] *= -1
    return base.to(dtype).t()[::2, 1:]  # 10 x 11, strides (2, 20)


def _same(got: torch.Tensor, want: torch.Tensor) -> bool:
    if got.dtype.is_floating_point:
        return torch.equal(got.isnan(), want.isnan()) and torch.equal(got.nan_to_num(), want.nan_to_num())
    return torch.equal(got, want)


@pytest.mark.parametrize("src_dtype", DTYPES, ids=str)
def test_converting_strided_copies_match_torch(shims: Shims, src_dtype: torch.dtype) -> None:
    src = _source(src_dtype)
    mismatched = []
    for dst_dtype in DTYPES:
        # A destination view with gaps, transposed: neither side is contiguous.
        store = torch.full((22, 12), 7, device=DEVICE, dtype=dst_dtype)
        dst, want_store = store.t()[1:11, ::2], store.clone()
        want = want_store.t()[1:11, ::2]
        shims.copy_(dst, src)
        want.copy_(src)
        if not _same(store, want_store):
            mismatched.append(str(dst_dtype))
    print(f"copy_ from {src_dtype} into 9 dtypes, strided both sides: mismatches {mismatched or 'none'}")
    assert not mismatched


def test_broadcast_copy_within_the_device_matches_torch(shims: Shims) -> None:
    row = torch.randn(1, 300, device=DEVICE)
    for dst_dtype in (torch.float32, torch.float16, torch.int64):
        dst = torch.zeros(300, 257, device=DEVICE, dtype=dst_dtype).t()
        shims.copy_(dst, row)
        want = torch.zeros_like(dst)
        want.copy_(row)
        assert torch.equal(dst, want), dst_dtype
    print("copy_ broadcast [1, 300] -> transposed [257, 300] (float32, float16, int64): equal to torch")


# (torch refuses a fill value that overflows the dtype; the shims follow C++ conversion there.)
@pytest.mark.parametrize("value", [0.0, 1.0 / 3.0, -2.75, 1e-8, 60000.0])
def test_fill_and_zero_on_views_match_torch(shims: Shims, value: float) -> None:
    for dtype in DTYPES:
        if not dtype.is_floating_point and dtype != torch.bool and abs(value) >= 128:
            continue  # out of range: undefined in C++, an error in torch
        if dtype == torch.uint8 and value < 0:
            continue
        store = torch.ones(40, 33, device=DEVICE, dtype=dtype)
        view = store[3:37:2, 1:30].t()
        want_store = store.clone()
        shims.fill_(view, value)
        want_store[3:37:2, 1:30].t().fill_(value)
        assert _same(store, want_store), (dtype, value)
        shims.zero_(view)
        want_store[3:37:2, 1:30].t().zero_()
        assert _same(store, want_store), (dtype, "zero_")
    print(f"fill_({value!r}) and zero_ on a strided view, 9 dtypes: equal to torch")


def test_large_transposed_converting_copy_and_its_time(shims: Shims) -> None:
    side = 4096 if DEVICE == "cuda" else 512
    src = torch.randn(side, side, device=DEVICE).t()
    dst = torch.empty(side, side, device=DEVICE, dtype=torch.bfloat16)
    shims.copy_(dst, src)
    assert torch.equal(dst, src.to(torch.bfloat16))

    def median_us(run) -> float:
        times = []
        for _ in range(20):
            _sync()
            start = time.perf_counter()
            run()
            _sync()
            times.append((time.perf_counter() - start) * 1e6)
        return sorted(times)[len(times) // 2]

    ours = median_us(lambda: shims.copy_(dst, src))
    theirs = median_us(lambda: dst.copy_(src))
    print(
        f"{side}x{side} float32 (transposed) -> bfloat16 copy_ on {DEVICE}: shims {ours:.0f} us, torch {theirs:.0f} us "
        "(median of 20, host-timed)"
    )


# --- the cuda = true fixture project ----------------------------------------------------------


def _fixture_library(tmp_path: Path) -> tuple[Path, str]:
    try:
        import plugin_cuda  # the CPU-built wheel, installed from .whl/ by docs/gpu/run_h200.sh

        return Path(
            plugin_cuda.__file__
        ).parent / "libpcuda_shims.so", "the wheel built on the CPU machine (nvcc wheels, no toolkit)"
    except ImportError:
        pass
    wheels = sorted((REPO / ".whl").glob("plugin_cuda-*.whl"))
    if wheels:
        with zipfile.ZipFile(wheels[-1]) as zf:
            zf.extract("plugin_cuda/libpcuda_shims.so", tmp_path)
        return tmp_path / "plugin_cuda" / "libpcuda_shims.so", f"{wheels[-1].name} (built on the CPU machine)"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-w", str(tmp_path),
         str(REPO / "fixtures" / "packages" / "plugin_cuda")],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = tmp_path.glob("plugin_cuda-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        zf.extract("plugin_cuda/libpcuda_shims.so", tmp_path)
    return tmp_path / "plugin_cuda" / "libpcuda_shims.so", "built here (pip wheel --no-build-isolation)"


@pytest.mark.skipif(DEVICE != "cuda", reason="the fixture's kernel needs a GPU")
def test_cuda_true_fixture_kernel_runs(tmp_path: Path) -> None:
    library, origin = _fixture_library(tmp_path)
    lib = ctypes.CDLL(str(library), mode=os.RTLD_LOCAL)
    run = lib.pcuda_fill_iota_host
    run.restype = ctypes.c_int32
    run.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_int64, ctypes.c_float]
    n = 1 << 20
    out = (ctypes.c_float * n)()
    status = run(out, n, 0.5)
    assert status == 0, f"pcuda_fill_iota_host returned cudaError {status}"
    got = torch.frombuffer(out, dtype=torch.float32)
    assert torch.equal(got, torch.arange(n, dtype=torch.float32) + 0.5)
    print(f"plugin_cuda kernel ({origin}): {n} values out[i] = 0.5 + i, all correct, on {torch.cuda.get_device_name()}")
