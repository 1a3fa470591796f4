"""The CUDA convolution and attention shims on a machine without a GPU: every argument
check runs before any device work, then the missing library (cuDNN, cuBLAS) is one
line naming the fix, with its own error code, and nothing crashes. The values are the
GPU tests' job (tests/gpu/test_cuda_nn_gpu.py)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from test_shims_ops_torch import I64, P, Shims, delete, handle, shims  # noqa: F401 (fixture)

I32, F64 = ctypes.c_int32, ctypes.c_double
E_NULL_ARGUMENT, E_RANK, E_SHAPE, E_DTYPE, E_UNSUPPORTED, E_INVALID, E_CUDA_UNAVAILABLE = 4, 8, 9, 11, 19, 20, 21


def last_error(shims: Shims) -> str:
    f = getattr(shims.lib, shims.prefix + "aoti_shim_last_error")
    f.restype = ctypes.c_char_p
    return f().decode()


def conv(shims: Shims, x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), transposed=False,
         output_padding=(0, 0), groups=1, ret=True) -> int:
    f = shims.fn("aoti_torch_cuda_convolution", P, P, P, P, I64, P, I64, P, I64, I32, P, I64, I64, P)
    hx, hw = handle(shims, x), handle(shims, w)
    hb = handle(shims, b) if b is not None else None
    out = P()

    def arr(v):
        return (I64 * len(v))(*v), len(v)

    code = f(hx, hw, ctypes.byref(hb) if hb is not None else None, *arr(stride), *arr(padding), *arr(dilation),
             int(transposed), *arr(output_padding), groups, ctypes.byref(out) if ret else None)
    assert not out, "a failing call creates nothing"
    for h in (hx, hw, hb):
        if h is not None:
            delete(shims, h)
    return code


@pytest.mark.parametrize(
    "case,code,words",
    [
        ("2-dim input", E_RANK, "input has 2 dims"),
        ("weight rank", E_RANK, "weight has 3 dims"),
        ("channels", E_SHAPE, "does not fit 4 input channels"),
        ("groups 0", E_INVALID, "groups 0"),
        ("stride length", E_INVALID, "stride has 3 values for 2 spatial dims"),
        ("negative padding", E_INVALID, "padding -1 is out of range"),
        ("dilation 0", E_INVALID, "dilation 0 is out of range"),
        ("output padding", E_INVALID, "output_padding 2 must be smaller than stride or dilation"),
        ("kernel too big", E_SHAPE, "spatial dim 0 of the output would be"),
        ("bias size", E_SHAPE, "bias must be 1-dim of size 6"),
        ("int64", E_DTYPE, "int64 is not supported"),
        ("mixed dtypes", E_DTYPE, "input is float32, weight or bias float64"),
        ("no output", E_NULL_ARGUMENT, "ret0"),
    ],
)
def test_conv_arguments_are_checked_first(shims: Shims, case: str, code: int, words: str) -> None:
    x, w = torch.zeros(2, 4, 8, 8), torch.zeros(6, 4, 3, 3)
    kwargs: dict = {}
    if case == "2-dim input":
        x, w = torch.zeros(4, 8), torch.zeros(6, 4)
    elif case == "weight rank":
        w = torch.zeros(6, 4, 3)
    elif case == "channels":
        w = torch.zeros(6, 3, 3, 3)
    elif case == "groups 0":
        kwargs["groups"] = 0
    elif case == "stride length":
        kwargs["stride"] = (1, 1, 1)
    elif case == "negative padding":
        kwargs["padding"] = (-1, 0)
    elif case == "dilation 0":
        kwargs["dilation"] = (0, 1)
    elif case == "output padding":
        w = torch.zeros(4, 6, 3, 3)
        kwargs.update(transposed=True, stride=(2, 2), output_padding=(2, 0))
    elif case == "kernel too big":
        w = torch.zeros(6, 4, 9, 3)
    elif case == "bias size":
        kwargs["b"] = torch.zeros(5)
    elif case == "int64":
        x, w = x.long(), w.long()
    elif case == "mixed dtypes":
        w = w.double()
    elif case == "no output":
        kwargs["ret"] = False
    got = conv(shims, x, w, **kwargs)
    message = last_error(shims)
    assert got == code, message
    assert words in message and "\n" not in message


def attention(shims: Shims, kind: str, q, k, v, mask=None, dropout=0.0) -> int:
    hq, hk, hv = handle(shims, q), handle(shims, k), handle(shims, v)
    hm = handle(shims, mask) if mask is not None else None
    rets = [P() for _ in range(9)]
    r = [ctypes.byref(x) for x in rets]
    ints = [ctypes.byref(I64()), ctypes.byref(I64())]
    if kind == "efficient":
        f = shims.fn(
            "aoti_torch_cuda__scaled_dot_product_efficient_attention", P, P, P, P, I32, F64, I32, P, P, P, P, P
        )
        code = f(hq, hk, hv, ctypes.byref(hm) if hm else None, 1, dropout, 0, None, *r[:4])
    elif kind == "cudnn":
        f = shims.fn(
            "aoti_torch_cuda__scaled_dot_product_cudnn_attention", P, P, P, P, I32, F64, I32, I32, P, *([P] * 9)
        )
        code = f(hq, hk, hv, ctypes.byref(hm) if hm else None, 1, dropout, 0, 0, None, *r[:4], *ints, *r[6:])
    else:
        f = shims.fn("aoti_torch_cuda__scaled_dot_product_flash_attention", P, P, P, F64, I32, I32, P, *([P] * 9))
        code = f(hq, hk, hv, dropout, 1, 0, None, *r[:4], *ints, *r[6:])
    assert not any(rets), "a failing call creates nothing"
    for h in (hq, hk, hv, hm):
        if h is not None:
            delete(shims, h)
    return code


@pytest.mark.parametrize("kind", ["efficient", "cudnn", "flash"])
def test_attention_arguments_are_checked_first(shims: Shims, kind: str) -> None:
    q, k, v = torch.zeros(1, 4, 8, 16), torch.zeros(1, 2, 8, 16), torch.zeros(1, 2, 8, 16)
    assert attention(shims, kind, q, k, v, dropout=0.1) == E_UNSUPPORTED
    assert "inference only (dropout 0)" in last_error(shims)
    assert attention(shims, kind, q[0], k[0], v[0]) == E_RANK
    assert attention(shims, kind, q, torch.zeros(1, 3, 8, 16), torch.zeros(1, 3, 8, 16)) == E_SHAPE
    assert "4 query heads are not a multiple of 3 key/value heads" in last_error(shims)
    assert attention(shims, kind, q, k, torch.zeros(1, 2, 7, 16)) == E_SHAPE
    assert attention(shims, kind, q.double(), k.double(), v.double()) == E_DTYPE
    if kind != "flash":
        assert attention(shims, kind, q, k, v, mask=torch.zeros(8, 8, dtype=torch.int64)) == E_DTYPE
        assert attention(shims, kind, q, k, v, mask=torch.zeros(2, 1, 8, 8)) == E_SHAPE
        assert "does not broadcast to [B, H, L, S]" in last_error(shims)


# In a child: each library is loaded once per process, from the path its variable names.
_CHILD = textwrap.dedent(
    """
    import ctypes, sys
    import torch
    sys.path.insert(0, {tests!r})
    from test_shims_ops_torch import Shims, handle
    from shims_support import reference_library, reference_prefix
    from test_shims_cuda_nn import attention, conv, last_error
    shims = Shims(ctypes.CDLL(str(reference_library())), reference_prefix())
    code = conv(shims, torch.zeros(2, 4, 8, 8), torch.zeros(6, 4, 3, 3))
    print(code, last_error(shims))
    code = attention(shims, "efficient", torch.zeros(1, 2, 8, 16), torch.zeros(1, 2, 8, 16), torch.zeros(1, 2, 8, 16))
    print(code, last_error(shims))
    """
)


def test_a_missing_library_is_one_line_naming_the_fix(tmp_path) -> None:
    tests = os.path.dirname(os.path.abspath(__file__))
    env = dict(
        os.environ, AOTI_SHIM_CUDNN=str(tmp_path / "libcudnn.so.9"), AOTI_SHIM_CUBLAS=str(tmp_path / "libcublas.so.13")
    )
    proc = subprocess.run([sys.executable, "-c", _CHILD.format(tests=tests)], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    conv_line, attention_line = proc.stdout.splitlines()
    assert conv_line.startswith(f"{E_CUDA_UNAVAILABLE} ")
    assert "cuDNN could not be loaded" in conv_line and "pip install nvidia-cudnn-cu13" in conv_line
    assert str(tmp_path / "libcudnn.so.9") in conv_line
    assert attention_line.startswith(f"{E_CUDA_UNAVAILABLE} ")
    assert "cuBLAS could not be loaded" in attention_line and "pip install nvidia-cublas" in attention_line
