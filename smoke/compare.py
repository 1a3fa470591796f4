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
            return Comparison(
                float("inf"),
                float("inf"),
                False,
                f"output {i}: {a.dtype}{list(a.shape)}, expected {e.dtype}{list(e.shape)}",
            )
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


# The two checks of a smoke run.
#
# Against the control (the same blob run through libtorch's shims): the kernels are the
# same, so the outputs must be too: bitwise where the blob calls no fallback op, and
# within a few rounding steps where it does (a fallback op of the shims, cuBLAS or a
# loop of ours, sums in another order than libtorch's).
#
# Against eager: the reference is eager torch in float64 (a float64 copy of the
# module, so neither TF32 nor float32 rounding is in it). The error allowed scales with
# the output's magnitude: |blob - reference| <= factor * max|reference|, per output,
# the factor by the blob's dtype (roughly: the unit roundoff times the growth of
# rounding error through a few dozen layers).
CONTROL_FACTORS: dict[str, float] = {"float64": 1e-12, "float32": 1e-5, "float16": 1e-2, "bfloat16": 3e-2}
EAGER_FACTORS: dict[str, float] = {"float64": 1e-9, "float32": 1e-4, "float16": 2e-2, "bfloat16": 8e-2}


@dataclass(frozen=True)
class Check:
    """One check of a blob's outputs against a reference."""

    max_abs: float  # the largest |actual - reference| over all outputs
    bound: float  # the allowed error of the output where max_abs/bound is largest
    ok: bool
    bitwise: bool  # every output equal bit for bit (NaN payloads aside)
    detail: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "max_abs": self.max_abs,
            "bound": self.bound,
            "ok": self.ok,
            "bitwise": self.bitwise,
            "detail": self.detail,
        }


def _dtype_name(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def scaled_check(actual: list[torch.Tensor], reference: list[torch.Tensor], factors: dict[str, float]) -> Check:
    """``actual`` against ``reference`` (same shapes; the reference may be wider, float64),
    allowing factor(actual's dtype) * max|reference| per output; other dtypes must match."""
    import torch

    if len(actual) != len(reference):
        return Check(float("inf"), 0.0, False, False, f"{len(actual)} outputs, expected {len(reference)}")
    max_abs, bound, worst, ok, bitwise, detail = 0.0, 0.0, -1.0, True, True, ""
    for i, (a, r) in enumerate(zip(actual, reference)):
        if a.shape != r.shape:
            return Check(
                float("inf"), 0.0, False, False, f"output {i}: shape {list(a.shape)}, expected {list(r.shape)}"
            )
        same_dtype = a.dtype == r.dtype
        if not same_dtype and not (a.is_floating_point() and r.is_floating_point()):
            return Check(float("inf"), 0.0, False, False, f"output {i}: {a.dtype}, expected {r.dtype}")
        if a.numel() == 0:
            continue
        if not same_dtype or not torch.equal(a, r):
            bitwise = bitwise and same_dtype and bool(
                torch.isnan(a).logical_and(torch.isnan(r)).logical_or(a == r).all()
            )
        a64, r64 = a.double(), r.double()
        finite = torch.isfinite(r64)
        scale = float(r64[finite].abs().max()) if bool(finite.any()) else 0.0
        allowed = factors.get(_dtype_name(a), 0.0) * scale
        diff = (a64 - r64).abs()
        # Same non-finite values (inf where inf, NaN where NaN) count as equal.
        same = (a64 == r64) | (torch.isnan(a64) & torch.isnan(r64))
        diff = torch.where(same, torch.zeros_like(diff), diff.nan_to_num(nan=float("inf")))
        err = float(diff.max())
        max_abs = max(max_abs, err)
        ratio = err / allowed if allowed > 0 else (0.0 if err == 0 else float("inf"))
        if ratio > worst:
            worst, bound = ratio, allowed
        if err > allowed:
            ok = False
            bad = int((diff > allowed).sum())
            detail = detail or f"output {i}: {bad} element(s) differ by more than {allowed:.1e} (max {err:.1e})"
    return Check(max_abs, bound, ok, bitwise, detail)


def against_control(actual: list[torch.Tensor], control: list[torch.Tensor]) -> Check:
    return scaled_check(actual, control, CONTROL_FACTORS)


def against_eager(actual: list[torch.Tensor], reference: list[torch.Tensor]) -> Check:
    return scaled_check(actual, reference, EAGER_FACTORS)
