"""The smoke's oracle (smoke/compare.py): every entry of its tolerance tables at its edge,
the smallest step inside passing and the smallest step outside failing, in the entry's
own dtype. The oracle's functions are called directly (no torch compile)."""

from __future__ import annotations

import pytest
import torch  # in the test extra: its absence fails, it does not skip

from aoti_shim.smoke.compare import (
    CONTROL_FACTORS,
    EAGER_FACTORS,
    EXACT,
    TOLERANCES,
    Comparison,
    against_control,
    against_eager,
    compare,
    scaled_check,
)

pytestmark = pytest.mark.torch

_BITS = {
    torch.float64: torch.int64,
    torch.float32: torch.int32,
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
}


def _dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


def _around(limit: float, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The largest value of ``dtype`` at or below ``limit`` (> 0) and the smallest above it:
    neighbouring bit patterns, so nothing of the dtype lies between them."""
    t = torch.tensor([limit], dtype=torch.float64).to(dtype)
    if float(t) > limit:
        t = (t.view(_BITS[dtype]) - 1).view(dtype)
    above = (t.view(_BITS[dtype]) + 1).view(dtype)
    assert float(t) <= limit < float(above)
    return t, above


def test_every_table_names_torch_dtypes() -> None:
    for table in (TOLERANCES, CONTROL_FACTORS, EAGER_FACTORS):
        assert all(isinstance(_dtype(name), torch.dtype) and _dtype(name).is_floating_point for name in table)
    assert set(CONTROL_FACTORS) == set(EAGER_FACTORS) == set(TOLERANCES) == set(_BITS_NAMES)
    assert EXACT == (0.0, 0.0)


_BITS_NAMES = ("float64", "float32", "float16", "bfloat16")


# -- compare: (atol, rtol) per dtype ---------------------------------------------------------


@pytest.mark.parametrize("name", _BITS_NAMES)
def test_compare_allows_atol_next_to_zero(name: str) -> None:
    dtype = _dtype(name)
    atol, _ = TOLERANCES[name]
    inside, outside = _around(atol, dtype)
    zero = torch.zeros(1, dtype=dtype)
    assert compare([inside], [zero]).within_tolerance
    assert compare([-inside], [zero]).within_tolerance
    bad = compare([outside], [zero])
    assert not bad.within_tolerance and bad.max_abs == float(outside)
    assert bad.detail == f"output 0: 1 elements beyond atol={atol} rtol={TOLERANCES[name][1]}"
    assert not compare([-outside], [zero]).within_tolerance


@pytest.mark.parametrize("name", _BITS_NAMES)
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_compare_allows_rtol_of_the_expected_magnitude(name: str, sign: float) -> None:
    dtype = _dtype(name)
    atol, rtol = TOLERANCES[name]
    expected = torch.tensor([sign * 64.0], dtype=dtype)  # a power of two: exact in every dtype
    bound = atol + rtol * 64.0
    inside, outside = _around(64.0 + bound, dtype)
    while float(inside) - 64.0 > bound:  # 64 + bound rounded up (float64): one step down
        inside, outside = (inside.view(_BITS[dtype]) - 1).view(dtype), inside
    assert float(inside) - 64.0 <= bound < float(outside) - 64.0  # exact: neighbours of 64 + bound
    assert compare([sign * inside], [expected]).within_tolerance
    assert not compare([sign * outside], [expected]).within_tolerance
    # Without the relative term (atol alone) the inside value would fail: rtol is what lets it pass.
    assert float(inside) - 64.0 > atol


def test_compare_at_the_exact_edge_passes() -> None:
    atol, rtol = TOLERANCES["float64"]
    zero = torch.zeros(1, dtype=torch.float64)
    assert compare([torch.tensor([atol], dtype=torch.float64)], [zero]).within_tolerance  # diff == atol: not beyond


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool])
def test_compare_wants_other_dtypes_equal(dtype: torch.dtype) -> None:
    expected = torch.tensor([0, 1, 1], dtype=dtype)
    assert compare([expected.clone()], [expected]).within_tolerance
    changed = expected.clone()
    changed[0] = 1
    done = compare([changed], [expected])
    assert not done.within_tolerance and done.max_abs == 1.0
    assert done.detail == "output 0: 1 elements beyond atol=0.0 rtol=0.0"


def test_compare_reports_the_largest_errors_and_the_first_bad_output() -> None:
    e = torch.tensor([1.0, 2.0, 0.0], dtype=torch.float64)
    a = torch.tensor([1.5, 2.0, 1e-6], dtype=torch.float64)
    ok = torch.tensor([4.0], dtype=torch.float64)
    got = compare([ok, a, a.clone()], [ok, e, e])
    assert got == Comparison(0.5, 1e-6 / 1e-12, False, "output 1: 2 elements beyond atol=1e-10 rtol=1e-07")
    assert compare([a[:2]], [e[:2]]).max_rel == 0.5  # |1.5 - 1| / 1
    # Empty outputs are skipped, NaN where NaN is expected passes, NaN elsewhere fails.
    nan = torch.tensor([float("nan"), 1.0])
    assert compare([torch.zeros(0), nan.clone()], [torch.zeros(0), nan]).within_tolerance
    assert not compare([nan], [torch.tensor([0.0, 1.0])]).within_tolerance
    assert not compare([torch.tensor([0.0, 1.0])], [nan]).within_tolerance


def test_compare_of_equal_outputs_says_nothing() -> None:
    x = torch.tensor([1.0, -2.0])
    assert compare([x.clone(), torch.zeros(0)], [x, torch.zeros(0)]) == Comparison(0.0, 0.0, True, "")
    # An empty output is skipped, not the end of the list: a bad output after it still fails.
    got = compare([torch.zeros(0), x + 1], [torch.zeros(0), x])
    assert not got.within_tolerance and got.detail == "output 1: 2 elements beyond atol=0.0001 rtol=0.001"


def test_compare_refuses_other_counts_shapes_and_dtypes() -> None:
    x = torch.zeros(2, 3)
    inf = float("inf")
    assert compare([x], [x, x]) == Comparison(inf, inf, False, "1 outputs, expected 2")
    assert compare([x, x[:1]], [x, x]) == Comparison(
        inf, inf, False, "output 1: torch.float32[1, 3], expected torch.float32[2, 3]"
    )
    assert compare([x.double()], [x]) == Comparison(
        inf, inf, False, "output 0: torch.float64[2, 3], expected torch.float32[2, 3]"
    )


# -- scaled checks: a factor per dtype times the reference's magnitude --------------------------


@pytest.mark.parametrize("table", ["control", "eager"])
@pytest.mark.parametrize("name", _BITS_NAMES)
@pytest.mark.parametrize("scale", [1.0, 2.0**-10, 2.0**12])
def test_each_factor_at_its_edge(table: str, name: str, scale: float) -> None:
    check, factors = (against_control, CONTROL_FACTORS) if table == "control" else (against_eager, EAGER_FACTORS)
    dtype = _dtype(name)
    # The control is the same dtype as the output; eager's reference is float64.
    ref_dtype = dtype if table == "control" else torch.float64
    allowed = factors[name] * scale
    inside, outside = _around(allowed, dtype)
    # The reference's largest magnitude is `scale` (exact: a power of two), negative on purpose.
    reference = torch.tensor([-scale, 0.0], dtype=ref_dtype)
    ok = check([torch.cat([torch.tensor([-scale], dtype=dtype), inside])], [reference])
    assert ok.ok and ok.bound == allowed and ok.max_abs == float(inside) and not ok.bitwise and ok.detail == ""
    bad = check([torch.cat([torch.tensor([-scale], dtype=dtype), outside])], [reference])
    assert not bad.ok and bad.max_abs == float(outside) and bad.bound == allowed
    assert bad.detail == f"output 0: 1 element(s) differ by more than {allowed:.1e} (max {float(outside):.1e})"
    # The other table's factor is another number: the entry is this table's own.
    other = EAGER_FACTORS if table == "control" else CONTROL_FACTORS
    assert other[name] != factors[name]


@pytest.mark.parametrize("factors", [CONTROL_FACTORS, EAGER_FACTORS])
def test_a_scaled_check_at_the_exact_edge_passes(factors: dict[str, float]) -> None:
    allowed = factors["float64"]
    ref = torch.tensor([1.0, 0.0], dtype=torch.float64)
    assert scaled_check([torch.tensor([1.0, allowed], dtype=torch.float64)], [ref], factors).ok


def test_a_scaled_check_reports_the_bound_of_its_worst_output() -> None:
    ref_small, ref_big = torch.tensor([1.0], dtype=torch.float64), torch.tensor([1024.0], dtype=torch.float64)
    f = CONTROL_FACTORS["float64"]
    # Output 0 uses half of its bound, output 1 four fifths of its (larger absolute error first).
    got = scaled_check(
        [
            torch.tensor([1024.0 + 0.5 * f * 1024], dtype=torch.float64),
            torch.tensor([1.0 + 0.8 * f], dtype=torch.float64),
        ],
        [ref_big, ref_small],
        CONTROL_FACTORS,
    )
    assert got.ok and got.bound == f * 1.0 and got.max_abs == pytest.approx(0.5 * f * 1024)
    # Two failing outputs: the detail is the first's, the bound the worse one's.
    bad = scaled_check([ref_big + 4 * f * 1024, ref_small + 8 * f], [ref_big, ref_small], CONTROL_FACTORS)
    assert not bad.ok and bad.bound == f * 1.0 and bad.detail.startswith("output 0: 1 element(s)")
    assert bad.to_json() == {
        "max_abs": bad.max_abs,
        "bound": bad.bound,
        "ok": False,
        "bitwise": False,
        "detail": bad.detail,
    }


def test_a_scaled_check_refuses_other_counts_shapes_and_dtypes_whole() -> None:
    from aoti_shim.smoke.compare import Check

    x, inf = torch.zeros(2, 3), float("inf")
    assert against_control([x], [x, x]) == Check(inf, 0.0, False, False, "1 outputs, expected 2")
    assert against_eager([x, x[:1]], [x, x]) == Check(inf, 0.0, False, False, "output 1: shape [1, 3], expected [2, 3]")
    assert against_eager([x.long()], [x]) == Check(
        inf, 0.0, False, False, "output 0: torch.int64, expected torch.float32"
    )
    # Nothing to compare (only empty outputs): no error, no bound.
    assert against_control([torch.zeros(0)], [torch.zeros(0)]) == Check(0.0, 0.0, True, True, "")


def test_a_scaled_check_bound_with_outputs_that_allow_nothing() -> None:
    """Integer outputs allow no error (a bound of 0): equal ones rank below any float
    output's use of its bound, unequal ones above it; of equal ranks the first counts."""
    from aoti_shim.smoke.compare import Check

    f = CONTROL_FACTORS["float64"]
    floats, ints = torch.tensor([1.0], dtype=torch.float64), torch.tensor([5, 6])
    half_used = torch.tensor([1.0 + 0.5 * f], dtype=torch.float64)
    assert against_control([half_used, ints.clone()], [floats, ints]).bound == f
    assert against_control([ints.clone(), half_used], [ints, floats]).bound == f
    off = against_control([half_used, ints + 1], [floats, ints])
    assert off == Check(1.0, 0.0, False, False, "output 1: 2 element(s) differ by more than 0.0e+00 (max 1.0e+00)")
    # Two exact outputs of other magnitudes: the first one's bound is reported.
    big = torch.tensor([8.0], dtype=torch.float64)
    assert against_control([floats.clone(), big.clone()], [floats, big]) == Check(0.0, f, True, True, "")
    assert against_control([big.clone(), floats.clone()], [big, floats]) == Check(0.0, 8 * f, True, True, "")
    # A reference with no finite value allows nothing, whatever the dtype's factor.
    only = torch.tensor([float("inf"), float("nan")], dtype=torch.float64)
    assert against_eager([only.clone()], [only]) == Check(0.0, 0.0, True, True, "")


def test_a_scaled_check_wants_other_dtypes_equal_and_matching() -> None:
    ints = torch.tensor([3, -1, 7])
    same = against_eager([ints.clone()], [ints])
    assert same.ok and same.bitwise and same.max_abs == 0 and same.bound == 0.0
    off = against_eager([ints + torch.tensor([0, 0, 1])], [ints])
    assert (
        not off.ok
        and off.max_abs == 1.0
        and off.detail == "output 0: 1 element(s) differ by more than 0.0e+00 (max 1.0e+00)"
    )
    assert against_eager([ints.float()], [ints]) == type(same)(
        float("inf"), 0.0, False, False, "output 0: torch.float32, expected torch.int64"
    )
    assert against_control([ints[:2]], [ints]).detail == "output 0: shape [2], expected [3]"
    assert against_control([ints], [ints, ints]).detail == "1 outputs, expected 2"


def test_a_scaled_check_counts_equal_non_finite_values_as_equal() -> None:
    inf, nan = float("inf"), float("nan")
    ref = torch.tensor([inf, -inf, nan, 2.0], dtype=torch.float64)
    same = against_eager([ref.float()], [ref])
    # The scale is the largest finite magnitude (2): inf and NaN where they are expected cost nothing.
    assert same.ok and same.max_abs == 0 and same.bound == EAGER_FACTORS["float32"] * 2.0
    assert not same.bitwise  # float32 against float64 is never bitwise
    assert against_control([ref.clone()], [ref]).bitwise
    for wrong in ([inf, -inf, 1.0, 2.0], [inf, inf, nan, 2.0], [inf, -inf, nan, nan]):
        got = against_eager([torch.tensor(wrong, dtype=torch.float32)], [ref])
        # inf against -inf counts as the largest finite error (nan_to_num's default for inf).
        assert not got.ok and got.max_abs >= 1.7e308, wrong
    # No finite reference: nothing is allowed, equal non-finite values still pass.
    only = torch.tensor([inf, nan], dtype=torch.float64)
    assert against_eager([only.clone()], [only]).ok
    assert not against_eager([torch.tensor([inf, 0.0], dtype=torch.float64)], [only]).ok


def test_a_scaled_check_skips_empty_outputs_and_is_bitwise_only_when_equal() -> None:
    x = torch.tensor([1.0, 2.0])
    got = against_control([torch.zeros(0), x.clone()], [torch.zeros(0), x])
    assert got.ok and got.bitwise and got.bound == CONTROL_FACTORS["float32"] * 2.0
    nudged = x.clone()
    nudged[1] = torch.nextafter(nudged[1], torch.tensor(3.0))
    near = against_control([nudged], [x])
    assert near.ok and not near.bitwise and near.max_abs == float(nudged[1]) - 2.0


def test_compare_uses_a_tolerance_per_dtype() -> None:
    import torch

    from aoti_shim.smoke.compare import compare

    x = torch.linspace(-1, 1, 16)
    assert compare([x + 5e-5], [x]).within_tolerance
    assert not compare([x + 5e-3], [x]).within_tolerance
    half = x.half()
    assert compare([half + 5e-3], [half]).within_tolerance
    ints = torch.arange(4)
    assert not compare([ints + 1], [ints]).within_tolerance
    assert compare([ints.clone()], [ints]).max_abs == 0
    assert not compare([x[:8]], [x]).within_tolerance  # shape mismatch
    nan = x.clone()
    nan[3] = float("nan")
    assert not compare([nan], [x]).within_tolerance
