// copy_ on the host: layouts, broadcasting, dtype conversion, bad input.
#include "helpers.h"

#include <cmath>
#include <limits>

using namespace testing_helpers;

TEST(copy, contiguous_and_transposed) {
  Owned src = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  Owned dst = empty({2, 3}, {});
  CHECK_OK(aoti_torch_copy_(dst, src, 0));
  CHECK_EQ(values<float>(dst), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // Into a transposed (column-major) destination: the memory order changes, the values do not.
  Owned column_major = empty({2, 3}, {1, 2});
  CHECK_OK(aoti_torch_copy_(column_major, src, 0));
  CHECK_EQ(values<float>(column_major), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  const float* raw = data_of<float>(column_major);
  CHECK_EQ((std::vector<float>(raw, raw + 6)), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  // tensor_copy_ takes (src, dst).
  Owned again = empty({2, 3}, {});
  CHECK_OK(aoti_torch_tensor_copy_(column_major, again));
  CHECK_EQ(values<float>(again), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(copy, gapped_and_offset_views) {
  Owned base = tensor({4, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  // The inner 2x2 block (rows 1-2, cols 1-2) of the 4x4 matrix.
  Owned block;
  int64_t sizes[] = {2, 2};
  int64_t strides[] = {4, 1};
  CHECK_OK(aoti_torch__reinterpret_tensor(base, 2, sizes, strides, 5, block.out()));
  Owned dst = tensor({2, 2}, {0, 0, 0, 0});
  CHECK_OK(aoti_torch_copy_(dst, block, 0));
  CHECK_EQ(values<float>(dst), (std::vector<float>{5, 6, 9, 10}));
  // And back into the block of another matrix: the rest stays untouched.
  Owned target = tensor({4, 4}, std::vector<float>(16, -1));
  Owned target_block;
  CHECK_OK(aoti_torch__reinterpret_tensor(target, 2, sizes, strides, 5, target_block.out()));
  CHECK_OK(aoti_torch_copy_(target_block, dst, 0));
  CHECK_EQ(values<float>(target), (std::vector<float>{-1, -1, -1, -1, -1, 5, 6, -1, -1, 9, 10, -1, -1, -1, -1, -1}));
}

TEST(copy, broadcasting) {
  Owned row = tensor({3}, {1, 2, 3});
  Owned dst = empty({2, 3}, {});
  CHECK_OK(aoti_torch_copy_(dst, row, 0));
  CHECK_EQ(values<float>(dst), (std::vector<float>{1, 2, 3, 1, 2, 3}));
  Owned column = tensor({2, 1}, {7, 8});
  CHECK_OK(aoti_torch_copy_(dst, column, 0));
  CHECK_EQ(values<float>(dst), (std::vector<float>{7, 7, 7, 8, 8, 8}));
  Owned scalar;
  CHECK_OK(aoti_torch_scalar_to_tensor_float32(4.0f, scalar.out()));
  CHECK_OK(aoti_torch_copy_(dst, scalar, 0));
  CHECK_EQ(values<float>(dst), (std::vector<float>(6, 4.0f)));
}

TEST(copy, bad_input) {
  Owned dst = empty({2, 3}, {});
  Owned wrong = tensor({2}, {1, 2});
  CHECK_EQ(aoti_torch_copy_(dst, wrong, 0), AOTI_SHIM_E_SHAPE_MISMATCH);
  Owned deeper = empty({1, 2, 3}, {});
  CHECK_EQ(aoti_torch_copy_(dst, deeper, 0), AOTI_SHIM_E_RANK_MISMATCH);
  CHECK_EQ(aoti_torch_copy_(nullptr, dst, 0), AOTI_SHIM_E_NULL_HANDLE);
  CHECK_EQ(aoti_torch_copy_(dst, nullptr, 0), AOTI_SHIM_E_NULL_HANDLE);
  // A destination whose elements alias each other.
  Owned base = tensor({3}, {1, 2, 3});
  Owned aliased;
  int64_t sizes[] = {3};
  int64_t strides[] = {0};
  CHECK_OK(aoti_torch__reinterpret_tensor(base, 1, sizes, strides, 0, aliased.out()));
  CHECK_EQ(aoti_torch_copy_(aliased, base, 0), AOTI_SHIM_E_INVALID_ARGUMENT);
  // Complex numbers are stored but not converted.
  Owned complex = empty({3}, {}, 9);
  CHECK_EQ(aoti_torch_copy_(complex, base, 0), AOTI_SHIM_E_DTYPE_MISMATCH);
  // The same dtype copies bytes, whatever the dtype.
  Owned complex_copy = empty({3}, {}, 9);
  CHECK_OK(aoti_torch_copy_(complex_copy, complex, 0));
}

TEST(copy, dtype_conversions) {
  Owned src = tensor({5}, {-1.75f, 0.0f, 0.5f, 2.9f, 100.25f});
  Owned ints = empty({5}, {}, 3);
  CHECK_OK(aoti_torch_copy_(ints, src, 0));
  CHECK_EQ(values<int32_t>(ints), (std::vector<int32_t>{-1, 0, 0, 2, 100}));  // truncation toward zero
  Owned flags = empty({5}, {}, 11);
  CHECK_OK(aoti_torch_copy_(flags, src, 0));
  CHECK_EQ(values<bool>(flags), (std::vector<bool>{true, false, true, true, true}));
  Owned doubles = empty({5}, {}, kFloat64);
  CHECK_OK(aoti_torch_copy_(doubles, flags, 0));
  CHECK_EQ(values<double>(doubles), (std::vector<double>{1, 0, 1, 1, 1}));
  Owned big = empty({1}, {}, 4);
  fill<int64_t>(big, {INT64_C(9007199254740993)});  // 2^53 + 1: exact in int64, not in double
  Owned big_copy = empty({1}, {}, 4);
  CHECK_OK(aoti_torch_copy_(big_copy, big, 0));
  CHECK_EQ(values<int64_t>(big_copy)[0], INT64_C(9007199254740993));
  Owned narrow = empty({1}, {}, 1);
  Owned wide = tensor64({1}, {-7.0});
  CHECK_OK(aoti_torch_copy_(narrow, wide, 0));
  CHECK_EQ(values<int8_t>(narrow)[0], -7);
}

TEST(copy, half_and_bfloat16_bits) {
  // Reference bit patterns from the IEEE 754 binary16 and bfloat16 definitions.
  Owned src = tensor({8}, {1.0f, -2.0f, 65504.0f, 65520.0f, 5.9604645e-8f, 0.0f,
                           std::numeric_limits<float>::infinity(), 1.0009765625f});
  Owned half = empty({8}, {}, 5);
  CHECK_OK(aoti_torch_copy_(half, src, 0));
  CHECK_EQ(values<uint16_t>(half),
           (std::vector<uint16_t>{0x3c00, 0xc000, 0x7bff, 0x7c00, 0x0001, 0x0000, 0x7c00, 0x3c01}));
  Owned back = empty({8}, {});
  CHECK_OK(aoti_torch_copy_(back, half, 0));
  std::vector<float> restored = values<float>(back);
  CHECK_EQ(restored[0], 1.0f);
  CHECK_EQ(restored[2], 65504.0f);
  CHECK(std::isinf(restored[3]));
  CHECK_EQ(restored[4], 5.9604645e-8f);
  CHECK_EQ(restored[7], 1.0009765625f);

  // bfloat16 rounds to nearest even: 1 + 2^-8 is a tie that goes down, 1 + 3*2^-8 a tie that goes up.
  Owned bsrc = tensor({5}, {1.0f, 1.00390625f, 1.01171875f, -3.0f, std::nanf("")});
  Owned bf = empty({5}, {}, 15);
  CHECK_OK(aoti_torch_copy_(bf, bsrc, 0));
  std::vector<uint16_t> bits = values<uint16_t>(bf);
  CHECK_EQ(bits[0], 0x3f80);
  CHECK_EQ(bits[1], 0x3f80);
  CHECK_EQ(bits[2], 0x3f82);
  CHECK_EQ(bits[3], 0xc040);
  CHECK_EQ(bits[4] & 0x7f80, 0x7f80);
  CHECK((bits[4] & 0x007f) != 0);
  // half -> bfloat16 goes through float.
  Owned bf_from_half = empty({8}, {}, 15);
  CHECK_OK(aoti_torch_copy_(bf_from_half, half, 0));
  CHECK_EQ(values<uint16_t>(bf_from_half)[1], 0xc000);
}

TEST(copy, fill_scalar) {
  // fill_.Scalar converts the double as copy_ converts (truncation, nonzero, half rounding),
  // into every element of a view and nothing around it.
  Owned wide = empty({2, 5}, {}, kFloat32);
  CHECK_OK(aoti_torch_zero_(wide));
  Owned block;
  int64_t sizes[] = {2, 3};
  int64_t strides[] = {5, 1};
  CHECK_OK(aoti_torch__reinterpret_tensor(wide, 2, sizes, strides, 1, block.out()));
  CHECK_OK(aoti_torch_cpu_fill__Scalar(block, 2.5));
  CHECK_EQ(values<float>(wide), (std::vector<float>{0, 2.5f, 2.5f, 2.5f, 0, 0, 2.5f, 2.5f, 2.5f, 0}));
  Owned ints = empty({3}, {2}, 4);  // int64 with a stride of 2
  CHECK_OK(aoti_torch_cuda_fill__Scalar(ints, -3.9));  // either name takes a host tensor
  CHECK_EQ(values<int64_t>(ints), (std::vector<int64_t>{-3, -3, -3}));
  Owned flags = empty({2}, {}, 11);
  CHECK_OK(aoti_torch_cpu_fill__Scalar(flags, 0.25));
  CHECK_EQ(values<bool>(flags), (std::vector<bool>{true, true}));
  Owned half = empty({2}, {}, 5);
  CHECK_OK(aoti_torch_cpu_fill__Scalar(half, 65520.0));  // rounds past the largest half: inf
  CHECK_EQ(values<uint16_t>(half), (std::vector<uint16_t>{0x7c00, 0x7c00}));
  CHECK_EQ(aoti_torch_cpu_fill__Scalar(nullptr, 1.0), AOTI_SHIM_E_NULL_HANDLE);
}
