// Helpers shared by the shim tests: owning handles, tensors from values, reading values back.
#pragma once

#include "aoti_shim/shim.h"
#include "harness.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace testing_helpers {

constexpr int32_t kFloat32 = 6;
constexpr int32_t kFloat64 = 7;
constexpr int32_t kCPU = 0;
constexpr int32_t kCUDA = 1;

// Deletes the handle at scope end.
struct Owned {
  AtenTensorHandle handle = nullptr;
  Owned() = default;
  explicit Owned(AtenTensorHandle h) : handle(h) {}
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Owned(Owned&& other) noexcept : handle(other.handle) { other.handle = nullptr; }
  ~Owned() {
    if (handle != nullptr) {
      CHECK_OK(aoti_torch_delete_tensor_object(handle));
    }
  }
  AtenTensorHandle* out() { return &handle; }
  operator AtenTensorHandle() const { return handle; }
};

// A sentinel an output argument must still hold after a failing call.
inline AtenTensorHandle sentinel() { return reinterpret_cast<AtenTensorHandle>(static_cast<uintptr_t>(0x5a5a5a)); }

// An empty strided CPU tensor.
inline Owned empty(std::vector<int64_t> sizes, std::vector<int64_t> strides, int32_t dtype = kFloat32,
                   int32_t device_type = kCPU, int32_t device_index = 0) {
  Owned t;
  CHECK_OK(aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(),
                                    strides.empty() ? nullptr : strides.data(), dtype, device_type, device_index,
                                    t.out()));
  return t;
}

template <typename T>
T* data_of(AtenTensorHandle t) {
  void* ptr = nullptr;
  CHECK_OK(aoti_torch_get_data_ptr(t, &ptr));
  return static_cast<T*>(ptr);
}

inline std::vector<int64_t> sizes_of(AtenTensorHandle t) {
  int64_t dim = 0;
  int64_t* sizes = nullptr;
  CHECK_OK(aoti_torch_get_dim(t, &dim));
  CHECK_OK(aoti_torch_get_sizes(t, &sizes));
  return std::vector<int64_t>(sizes, sizes + dim);
}

inline std::vector<int64_t> strides_of(AtenTensorHandle t) {
  int64_t dim = 0;
  int64_t* strides = nullptr;
  CHECK_OK(aoti_torch_get_dim(t, &dim));
  CHECK_OK(aoti_torch_get_strides(t, &strides));
  return std::vector<int64_t>(strides, strides + dim);
}

// Writes values in logical (row-major) order into a CPU tensor of any strides.
template <typename T>
void fill(AtenTensorHandle t, const std::vector<T>& values) {
  std::vector<int64_t> sizes = sizes_of(t);
  std::vector<int64_t> strides = strides_of(t);
  T* base = data_of<T>(t);
  std::vector<int64_t> index(sizes.size(), 0);
  for (size_t n = 0; n < values.size(); ++n) {
    int64_t offset = 0;
    for (size_t d = 0; d < sizes.size(); ++d) {
      offset += index[d] * strides[d];
    }
    base[offset] = values[n];
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
}

// Reads a CPU tensor's values in logical order.
template <typename T>
std::vector<T> values(AtenTensorHandle t) {
  std::vector<int64_t> sizes = sizes_of(t);
  std::vector<int64_t> strides = strides_of(t);
  int64_t numel = 0;
  CHECK_OK(aoti_torch_get_numel(t, &numel));
  const T* base = data_of<T>(t);
  std::vector<T> out;
  std::vector<int64_t> index(sizes.size(), 0);
  for (int64_t n = 0; n < numel; ++n) {
    int64_t offset = 0;
    for (size_t d = 0; d < sizes.size(); ++d) {
      offset += index[d] * strides[d];
    }
    out.push_back(base[offset]);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// A CPU float32 tensor with the given values (logical order) and layout.
inline Owned tensor(std::vector<int64_t> sizes, const std::vector<float>& vals, std::vector<int64_t> strides = {}) {
  Owned t = empty(sizes, strides, kFloat32);
  fill<float>(t, vals);
  return t;
}

inline Owned tensor64(std::vector<int64_t> sizes, const std::vector<double>& vals, std::vector<int64_t> strides = {}) {
  Owned t = empty(sizes, strides, kFloat64);
  fill<double>(t, vals);
  return t;
}

// Whether this process should see a GPU, decided without the library under test: the
// caller's AOTI_SHIM_TESTS_GPU=0/1 if set, else CUDA_VISIBLE_DEVICES hiding every device,
// else a /dev/nvidiaN node (the driver's own device files, which a container also gets).
inline bool gpu_expected() {
  if (const char* given = std::getenv("AOTI_SHIM_TESTS_GPU")) {
    return std::strcmp(given, "0") != 0;
  }
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    if (visible[0] == '\0' || visible[0] == '-') {
      return false;
    }
  }
  for (int i = 0; i < 64; ++i) {
    if (access(("/dev/nvidia" + std::to_string(i)).c_str(), F_OK) == 0) {
      return true;
    }
  }
  return false;
}

// The library's own answer, which the CUDA tests skip on; a broken detection that would
// turn a GPU machine's CUDA tests into skips fails the asking test instead.
inline bool has_cuda_device() {
  int32_t count = 0;
  const bool found = aoti_shim_cuda_device_count(&count) == AOTI_SHIM_OK && count > 0;
  const bool expected = gpu_expected();
  if (found != expected) {
    harness::record_failure(__FILE__, __LINE__,
                            std::string("aoti_shim_cuda_device_count says ") + std::to_string(count) +
                                " device(s), but a GPU is " + (expected ? "" : "not ") +
                                "expected (/dev/nvidiaN, CUDA_VISIBLE_DEVICES, AOTI_SHIM_TESTS_GPU)");
  }
  return found;
}

template <typename T>
void check_values(const std::vector<T>& got, const std::vector<T>& want, double tolerance = 1e-5) {
  CHECK_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    CHECK_NEAR(got[i], want[i], tolerance);
  }
}

}  // namespace testing_helpers
