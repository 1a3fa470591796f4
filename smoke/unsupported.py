"""Fallback ops the reference shims do not provide, each with its workaround.

A blob that imports one of these is refused before anything runs (the smoke lists the
missing names); this table turns the bare name into what to do about it.
"""

from __future__ import annotations

_ATTENTION = (
    "lower attention to math: compile inside torch.nn.attention.sdpa_kernel([SDPBackend.MATH]) "
    "(the smoke's compile does), so Inductor generates and fuses it"
)
_CONV = (
    "keep autotuning on with Triton convolutions (the smoke's default: max_autotune_gemm with "
    'max_autotune_conv_backends="TRITON"); a compile without autotuning leaves ATen\'s convolution'
)

WORKAROUNDS: dict[str, str] = {
    "aoti_torch_cuda_convolution": _CONV,
    "aoti_torch_cuda__scaled_dot_product_efficient_attention": _ATTENTION,
    "aoti_torch_cuda__scaled_dot_product_flash_attention": _ATTENTION,
    "aoti_torch_cuda__scaled_dot_product_cudnn_attention": _ATTENTION,
    "aoti_torch_cuda__scaled_dot_product_attention_math_for_mps": _ATTENTION,
}


def workaround(name: str, prefix: str) -> str | None:
    """The workaround for a missing shim name (prefixed or not), if it is a known gap."""
    return WORKAROUNDS.get(name.removeprefix(prefix))
