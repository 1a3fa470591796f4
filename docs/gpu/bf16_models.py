"""The bundled smoke models in bfloat16, for ``aoti-shim smoke --model bf16_models:mlp_bf16``.

The smoke CLI has no dtype option; its ``--model module:callable`` takes these instead
(put this folder on PYTHONPATH). Weights and inputs are the bundled ones (same seed),
cast to bfloat16, so blob and eager both compute in bfloat16 and the smoke's bfloat16
tolerance applies.
"""

from __future__ import annotations

from typing import Any


def _bf16(name: str, device: str) -> tuple[Any, tuple[Any, ...]]:
    import torch

    from aoti_shim.smoke.models import BUNDLED

    module, inputs = BUNDLED[name].build(device)
    return module.to(torch.bfloat16), tuple(t.to(torch.bfloat16) for t in inputs)


def mlp_bf16(device: str) -> tuple[Any, tuple[Any, ...]]:
    return _bf16("mlp", device)


def block_bf16(device: str) -> tuple[Any, tuple[Any, ...]]:
    return _bf16("block", device)


def convnet_bf16(device: str) -> tuple[Any, tuple[Any, ...]]:
    return _bf16("convnet", device)
