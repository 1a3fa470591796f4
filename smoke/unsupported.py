"""Fallback ops the reference shims do not provide, each with its workaround.

A blob that imports one of these is refused before anything runs (the smoke lists the
missing names); this table turns the bare name into what to do about it.
"""

from __future__ import annotations

_ATTENTION = (
    "lower attention to math: compile inside torch.nn.attention.sdpa_kernel([SDPBackend.MATH]) "
    "(the smoke's compile does), so Inductor generates and fuses it"
)
WORKAROUNDS: dict[str, str] = {
    # cuda_convolution and the efficient, cuDNN and flash attention fallbacks have shims since issue 25.
    "aoti_torch_cuda__scaled_dot_product_attention_math_for_mps": _ATTENTION,
}


def workaround(name: str, prefix: str) -> str | None:
    """The workaround for a missing shim name (prefixed or not), if it is a known gap."""
    return WORKAROUNDS.get(name.removeprefix(prefix))
