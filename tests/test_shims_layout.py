"""How the reference shims read a layout (sizes, strides, storage offset), against the rules
worked out in Python's exact integers: which fault is reported first, and what a view that
passes holds. Layouts come from a seeded generator over the values where int64 arithmetic
breaks (zero, one, 2**31, 2**62, INT64_MAX, negatives), so the sums and products that
overflow in C are the ones checked; a view is read back through the ABI.
"""

from __future__ import annotations

import ctypes
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from shims_support import reference_shims

P = ctypes.c_void_p
I64 = ctypes.c_int64
INT64_MAX = 2**63 - 1
FLOAT32 = 6
BASE_ELEMENTS = 64  # the storage every view is cut from: 64 float32, 256 bytes
OK, NEGATIVE_SIZE, NEGATIVE_STRIDE, SIZE_OVERFLOW, OUT_OF_BOUNDS = 0, 6, 7, 17, 18
EDGES = (0, 1, 1, 2, 3, 7, 64, 2**31, 2**32 + 1, 2**62, INT64_MAX, -1, -(2**63))
# A view of the base: its error code, and on success the sizes and strides it holds.
Reader = Callable[[list[int], "list[int] | None", int], tuple[int, list[int], list[int]]]


def expected(sizes: list[int], strides: list[int] | None, offset: int) -> tuple[int, list[int]]:
    """The shims' answer for a float32 view of the base: an error code, or OK and the strides."""
    if any(s < 0 for s in sizes):
        return NEGATIVE_SIZE, []
    if strides is not None and any(t < 0 for t in strides):
        return NEGATIVE_STRIDE, []
    numel = 1
    for s in sizes:
        numel *= s
        if numel > INT64_MAX:
            return SIZE_OVERFLOW, []
    if strides is None:
        running, strides = 1, [0] * len(sizes)
        for d in reversed(range(len(sizes))):
            strides[d] = running - 2**64 if running > INT64_MAX else running
            running = running * max(sizes[d], 1) % 2**64
        span = numel
    elif 0 in sizes:
        span = 0
    else:
        span = 1
        for s, t in zip(sizes, strides):
            span += (s - 1) * t
            if (s - 1) * t > INT64_MAX or span > INT64_MAX:
                return SIZE_OVERFLOW, []
    if offset < 0:
        return OUT_OF_BOUNDS, []
    if span > 0:
        end = offset + span
        if end > INT64_MAX or end * 4 > INT64_MAX:
            return SIZE_OVERFLOW, []
        if end * 4 > BASE_ELEMENTS * 4:
            return OUT_OF_BOUNDS, []
    return OK, strides


def layouts(count: int, seed: int) -> Iterator[tuple[list[int], list[int] | None, int]]:
    rng = random.Random(seed)
    small = (0, 1, 2, 3, 4, 8)
    for _ in range(count):
        rank = rng.randrange(0, 6)
        pool = EDGES if rng.random() < 0.6 else small  # some layouts that fit the base
        sizes = [rng.choice(pool) for _ in range(rank)]
        strides = None if rng.random() < 0.3 else [rng.choice(pool) for _ in range(rank)]
        offset = rng.choice((0, 0, 1, 5, -1, INT64_MAX, 2**61))
        yield sizes, strides, offset


@pytest.fixture(scope="module")
def view_of() -> Iterator[Reader]:
    library, prefix = reference_shims()
    lib = ctypes.CDLL(str(library))

    def fn(name: str, *argtypes: object) -> Any:
        f = getattr(lib, prefix + name)
        f.restype, f.argtypes = ctypes.c_int32, list(argtypes)
        return f

    empty = fn("aoti_torch_empty_strided", I64, P, P, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, P)
    view = fn("aoti_torch__reinterpret_tensor", P, I64, P, P, I64, P)
    sizes_of = fn("aoti_torch_get_sizes", P, P)
    strides_of = fn("aoti_torch_get_strides", P, P)
    delete = fn("aoti_torch_delete_tensor_object", P)
    base = P()
    assert empty(1, (I64 * 1)(BASE_ELEMENTS), (I64 * 1)(1), FLOAT32, 0, 0, ctypes.byref(base)) == 0

    def read(sizes: list[int], strides: list[int] | None, offset: int) -> tuple[int, list[int], list[int]]:
        rank = len(sizes)
        out = P()
        given = (I64 * rank)(*strides) if strides is not None else None
        code = view(base, rank, (I64 * max(rank, 1))(*sizes), given, offset, ctypes.byref(out))
        if code != OK:
            return code, [], []
        got_sizes, got_strides = ctypes.POINTER(I64)(), ctypes.POINTER(I64)()
        assert sizes_of(out, ctypes.byref(got_sizes)) == 0 and strides_of(out, ctypes.byref(got_strides)) == 0
        held = [got_sizes[d] for d in range(rank)], [got_strides[d] for d in range(rank)]
        assert delete(out) == 0
        return code, *held

    yield read
    assert delete(base) == 0


@pytest.mark.parametrize("seed", range(4))
def test_a_view_reports_the_first_fault_and_holds_what_it_was_given(view_of: Reader, seed: int) -> None:
    codes = set()
    for sizes, strides, offset in layouts(1500, seed):
        code, want_strides = expected(sizes, strides, offset)
        got, got_sizes, got_strides = view_of(sizes, strides, offset)
        assert got == code, (sizes, strides, offset)
        if code == OK:
            assert (got_sizes, got_strides) == (sizes, want_strides), (sizes, strides, offset)
        codes.add(code)
    # The generator reaches every answer, so a rule the shims drop shows here.
    assert codes == {OK, NEGATIVE_SIZE, NEGATIVE_STRIDE, SIZE_OVERFLOW, OUT_OF_BOUNDS}, codes
