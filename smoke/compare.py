"""Compare blob outputs with eager outputs, with a tolerance per dtype."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

# (absolute, relative) tolerance by dtype name. Generated GEMMs sum in another
# order than eager's BLAS, so float32 gets a little room; integers must match.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-10, 1e-7),
    "float32": (1e-4, 1e-3),
    "float16": (1e-2, 1e-2),
    "bfloat16": (5e-2, 5e-2),
}
EXACT = (0.0, 0.0)


@dataclass(frozen=True)
class Comparison:
    max_abs: float
    max_rel: float
    within_tolerance: bool
    detail: str = ""


def compare(actual: list[torch.Tensor], expected: list[torch.Tensor]) -> Comparison:
    import torch

    if len(actual) != len(expected):
        return Comparison(float("inf"), float("inf"), False, f"{len(actual)} outputs, expected {len(expected)}")
    max_abs = max_rel = 0.0
    ok = True
    detail = ""
    for i, (a, e) in enumerate(zip(actual, expected)):
        if a.shape != e.shape or a.dtype != e.dtype:
            return Comparison(float("inf"), float("inf"), False, f"output {i}: {a.dtype}{list(a.shape)}, expected {e.dtype}{list(e.shape)}")
        if a.numel() == 0:
            continue
        atol, rtol = TOLERANCES.get(str(e.dtype).removeprefix("torch."), EXACT)
        a64, e64 = a.double(), e.double()
        diff = (a64 - e64).abs()
        max_abs = max(max_abs, float(diff.max()))
        max_rel = max(max_rel, float((diff / e64.abs().clamp_min(1e-12)).max()))
        bad = diff > atol + rtol * e64.abs()
        if bool(torch.isnan(a64).ne(torch.isnan(e64)).any()) or bool(bad.any()):
            ok = False
            detail = detail or f"output {i}: {int(bad.sum())} elements beyond atol={atol} rtol={rtol}"
    return Comparison(max_abs, max_rel, ok, detail)
