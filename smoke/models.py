"""The bundled smoke models and the loader for a user's ``module:callable``.

Models are tiny so that compiling them stays cheap in CI, and are written so that
AOTInductor leaves few ATen fallbacks: attention is spelled out as
matmul-softmax-matmul (no SDPA fallback).
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aoti_shim.errors import UsageError

if TYPE_CHECKING:
    import torch

# One seed for weights and inputs, so every run compares the same numbers.
SEED = 20261130


@dataclass(frozen=True)
class ModelCase:
    """A named model factory: calling ``build(device)`` gives (module, example inputs)."""

    name: str
    build: Callable[[str], tuple[Any, tuple[Any, ...]]]
    # Where the factory comes from, for the compile cache key of user models.
    origin: str = "bundled"


def _mlp(device: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    import torch

    torch.manual_seed(SEED)
    module = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64), torch.nn.GELU()
    )
    return module.eval().to(device), (torch.randn(8, 64, device=device),)


def _block_module() -> type:
    import torch

    class TransformerBlock(torch.nn.Module):
        """Pre-norm block: attention as explicit matmuls, then a GELU feed-forward."""

        def __init__(self, dim: int = 32, heads: int = 2) -> None:
            super().__init__()
            self.heads = heads
            self.norm1 = torch.nn.LayerNorm(dim)
            self.qkv = torch.nn.Linear(dim, 3 * dim)
            self.proj = torch.nn.Linear(dim, dim)
            self.norm2 = torch.nn.LayerNorm(dim)
            self.ff1 = torch.nn.Linear(dim, 2 * dim)
            self.ff2 = torch.nn.Linear(2 * dim, dim)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            batch, tokens, dim = x.shape
            head_dim = dim // self.heads
            q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)

            def split(t: torch.Tensor) -> torch.Tensor:
                return t.reshape(batch, tokens, self.heads, head_dim).transpose(1, 2)

            q, k, v = split(q), split(k), split(v)
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(head_dim)
            # Softmax as exp(log_softmax): the same numbers, but a graph that
            # inductor does not rewrite into an SDPA fallback (which would import
            # aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu).
            weights = torch.exp(torch.log_softmax(scores, dim=-1))
            attended = torch.matmul(weights, v)
            x = x + self.proj(attended.transpose(1, 2).reshape(batch, tokens, dim))
            return x + self.ff2(torch.nn.functional.gelu(self.ff1(self.norm2(x))))

    return TransformerBlock


def _block(device: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    import torch

    torch.manual_seed(SEED)
    module = _block_module()()
    return module.eval().to(device), (torch.randn(2, 16, 32, device=device),)


def _convnet(device: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    import torch

    torch.manual_seed(SEED)
    module = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, padding=1, stride=2),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(8, 10),
    )
    return module.eval().to(device), (torch.randn(2, 3, 16, 16, device=device),)


BUNDLED: dict[str, ModelCase] = {
    case.name: case
    for case in (
        ModelCase("mlp", _mlp),
        ModelCase("block", _block),
        ModelCase("convnet", _convnet),
    )
}


def bundled(names: tuple[str, ...] | None = None) -> tuple[ModelCase, ...]:
    """The bundled cases, all or the named ones in the given order."""
    if not names:
        return tuple(BUNDLED.values())
    unknown = [n for n in names if n not in BUNDLED]
    if unknown:
        raise UsageError(f"unknown bundled model {unknown[0]!r}; choose from {', '.join(BUNDLED)}")
    return tuple(BUNDLED[n] for n in names)


@contextmanager
def user_folder_first(folder: str | None) -> Iterator[None]:
    """``folder`` (the user's current folder) first on ``sys.path`` for the length of
    one import, as ``python -m`` puts it there; nothing else is imported from it."""
    if not folder:
        yield
        return
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        try:
            sys.path.remove(folder)  # the first occurrence: the one put there above
        except ValueError:
            pass


def user_module_file(module_name: str, folder: str | None) -> Path | None:
    """The file a user's module is loaded from (for the compile cache key), or None."""
    with user_folder_first(folder):
        try:
            found = importlib.util.find_spec(module_name)
        except (ImportError, ValueError):
            return None
    if found is None or not found.origin or not Path(found.origin).is_file():
        return None
    return Path(found.origin)


def user_case(spec: str, folder: str | None = None) -> ModelCase:
    """A ``module:callable`` given on the command line; the callable takes no
    argument or the device string, and returns (module, example inputs). The module
    is looked for in ``folder`` (the user's current folder) first, then on ``sys.path``."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"--model wants module:callable, got {spec!r}")
    try:
        with user_folder_first(folder):
            module = importlib.import_module(module_name)
    except ImportError as e:
        raise UsageError(f"--model {spec}: cannot import {module_name!r}: {e}") from None
    except (Exception, SystemExit) as e:  # noqa: BLE001 - the user's module may fail at import in any way
        first_line = next(iter(str(e).splitlines()), "")
        raise UsageError(f"--model {spec}: cannot import {module_name!r}: {type(e).__name__}: {first_line}") from None
    factory: Any = module
    for part in attr.split("."):
        factory = getattr(factory, part, None)
        if factory is None:
            raise UsageError(f"--model {spec}: {module_name!r} has no attribute {attr!r}")
    if not callable(factory):
        raise UsageError(f"--model {spec}: {attr!r} is not callable")
    return ModelCase(spec, _call_user(factory, spec), origin=spec)


def _call_user(factory: Callable[..., Any], spec: str) -> Callable[[str], tuple[Any, tuple[Any, ...]]]:
    import inspect

    def build(device: str) -> tuple[Any, tuple[Any, ...]]:
        import torch

        torch.manual_seed(SEED)
        try:
            takes_device = bool(inspect.signature(factory).parameters)
        except (TypeError, ValueError):
            takes_device = False
        result = factory(device) if takes_device else factory()
        if not (isinstance(result, tuple) and len(result) == 2):
            raise UsageError(f"--model {spec}: the callable must return (module, example_inputs)")
        module, inputs = result
        if isinstance(inputs, torch.Tensor):
            inputs = (inputs,)
        inputs = tuple(inputs)
        if not all(isinstance(t, torch.Tensor) for t in inputs):
            raise UsageError(f"--model {spec}: example inputs must be tensors")
        return module.eval().to(device), tuple(t.to(device) for t in inputs)

    return build
