"""Fallback ops added for the model zoo (issue 14): CPU cumsum against torch, the
manifest lists them, and the known gaps carry a workaround."""

from __future__ import annotations

import ctypes

import pytest
import torch  # in the test extra: its absence fails, it does not skip

from shims_support import manifest_names
from test_shims_ops_torch import DTYPES, I64, P, Shims, as_torch, delete, handle, shims  # noqa: F401 (fixture)


@pytest.mark.parametrize(
    ("dtype", "out_dtype", "dim", "layout"),
    [
        (torch.float32, None, 1, "contiguous"),
        (torch.float32, None, -1, "transposed"),
        (torch.float64, None, 0, "contiguous"),
        (torch.int64, None, 2, "sliced"),
        (torch.int32, None, 1, "contiguous"),  # integral sums widen to int64
        (torch.bool, None, 0, "contiguous"),
        (torch.int32, torch.float32, 0, "transposed"),
        (torch.float32, None, 0, "scalar"),
    ],
)
def test_cumsum_matches_torch(
    shims: Shims, dtype: torch.dtype, out_dtype: torch.dtype | None, dim: int, layout: str
) -> None:
    torch.manual_seed(3)
    base = (torch.randn(4, 5, 6) * 10).to(dtype) if dtype != torch.bool else torch.randn(4, 5, 6) > 0
    x = {"contiguous": base, "transposed": base.transpose(0, 2), "sliced": base[:, ::2, 1:], "scalar": base[0, 0, 0]}[
        layout
    ]
    cumsum = shims.fn("aoti_torch_cpu_cumsum", P, I64, ctypes.POINTER(ctypes.c_int32), P)
    code = ctypes.c_int32(DTYPES[out_dtype]) if out_dtype is not None else None
    h, out = handle(shims, x), P()
    shims.check(cumsum(h, dim, ctypes.byref(code) if code is not None else None, ctypes.byref(out)))
    expected = torch.cumsum(x, dim, dtype=out_dtype)
    got = as_torch(shims, out, expected.dtype)
    delete(shims, h, out)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=0, atol=0)  # float32 sums in double, like torch


def test_cumsum_rejects_a_dim_out_of_range(shims: Shims) -> None:
    cumsum = shims.fn("aoti_torch_cpu_cumsum", P, I64, ctypes.POINTER(ctypes.c_int32), P)
    x = torch.zeros(3, 4)
    h, out = handle(shims, x), P()
    assert cumsum(h, 2, None, ctypes.byref(out)) != 0
    assert cumsum(h, -3, None, ctypes.byref(out)) != 0
    delete(shims, h)


def test_unsupported_fallbacks_are_not_in_the_manifest_and_name_a_workaround() -> None:
    from aoti_shim.smoke.unsupported import WORKAROUNDS, workaround

    manifest = set(manifest_names())
    for name in ("aoti_torch_cpu_cumsum", "aoti_torch_cuda_mm_out", "aoti_torch_cuda_addmm_out",
                 "aoti_torch_cuda_bmm_out", "aoti_torch_cuda_baddbmm_out", "aoti_torch_cuda_convolution",
                 "aoti_torch_cuda__scaled_dot_product_efficient_attention",
                 "aoti_torch_cuda__scaled_dot_product_cudnn_attention",
                 "aoti_torch_cuda__scaled_dot_product_flash_attention"):
        assert name in manifest
    assert WORKAROUNDS and not set(WORKAROUNDS) & manifest
    assert "sdpa_kernel" in (
        workaround("aotishim_aoti_torch_cuda__scaled_dot_product_attention_math_for_mps", "aotishim_") or ""
    )
    assert workaround("aoti_torch_cuda_convolution", "aotishim_") is None
    assert workaround("aotishim_aoti_torch_cuda_mm_out", "aotishim_") is None
