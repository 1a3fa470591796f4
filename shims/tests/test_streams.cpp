// The caller-stream contract with fake stream handles (no GPU needed), and guard bad input.
#include "helpers.h"

#include <thread>

using namespace testing_helpers;

namespace {
void* fake(uintptr_t value) { return reinterpret_cast<void*>(value); }

AotiShimStreamSelection selection() {
  AotiShimStreamSelection current{-1, fake(0xdead)};
  CHECK_OK(aoti_shim_caller_stream_get(&current));
  return current;
}

void* current_stream(int32_t device) {
  void* stream = fake(0xdead);
  CHECK_OK(aoti_torch_get_current_cuda_stream(device, &stream));
  return stream;
}
}  // namespace

TEST(streams, no_selection_by_default) {
  AotiShimStreamSelection current = selection();
  CHECK_EQ(current.selected, 0);
  CHECK(current.stream == nullptr);
  CHECK(current_stream(0) == nullptr);  // the default stream
}

TEST(streams, select_and_restore) {
  AotiShimStreamSelection previous{-1, fake(0xdead)};
  CHECK_OK(aoti_shim_caller_stream_select(fake(0x1000), &previous));
  CHECK_EQ(previous.selected, 0);
  CHECK(previous.stream == nullptr);
  CHECK_EQ(selection().selected, 1);
  CHECK(selection().stream == fake(0x1000));
  // The selection applies to every device of the thread.
  CHECK(current_stream(0) == fake(0x1000));
  CHECK(current_stream(3) == fake(0x1000));
  CHECK_OK(aoti_shim_caller_stream_restore(&previous));
  CHECK_EQ(selection().selected, 0);
  CHECK(current_stream(0) == nullptr);
}

TEST(streams, explicit_null_stream_is_a_selection) {
  AotiShimStreamSelection outer{};
  CHECK_OK(aoti_shim_caller_stream_select(fake(0x2000), &outer));
  AotiShimStreamSelection inner{};
  CHECK_OK(aoti_shim_caller_stream_select(nullptr, &inner));
  // Selected, and the selected stream is the default one: not "nothing selected".
  CHECK_EQ(selection().selected, 1);
  CHECK(selection().stream == nullptr);
  CHECK(current_stream(0) == nullptr);
  CHECK_EQ(inner.selected, 1);
  CHECK(inner.stream == fake(0x2000));
  CHECK_OK(aoti_shim_caller_stream_restore(&inner));
  CHECK(current_stream(0) == fake(0x2000));
  CHECK_OK(aoti_shim_caller_stream_restore(&outer));
  CHECK_EQ(selection().selected, 0);
}

TEST(streams, guards_nest_and_restore) {
  {
    aoti_shim::CallerStreamGuard a(fake(0xa));
    CHECK(current_stream(0) == fake(0xa));
    {
      aoti_shim::CallerStreamGuard b(fake(0xb));
      CHECK(current_stream(0) == fake(0xb));
      {
        aoti_shim::CallerStreamGuard null_stream(nullptr);
        CHECK_EQ(selection().selected, 1);
        CHECK(current_stream(0) == nullptr);
      }
      CHECK(current_stream(0) == fake(0xb));
    }
    CHECK(current_stream(0) == fake(0xa));
  }
  CHECK_EQ(selection().selected, 0);
}

TEST(streams, selections_are_per_thread) {
  aoti_shim::CallerStreamGuard mine(fake(0x111));
  AotiShimStreamSelection seen_by_other{-1, fake(0xdead)};
  void* other_after_select = nullptr;
  std::thread other([&] {
    CHECK_OK(aoti_shim_caller_stream_get(&seen_by_other));
    aoti_shim::CallerStreamGuard theirs(fake(0x222));
    CHECK_OK(aoti_torch_get_current_cuda_stream(0, &other_after_select));
  });
  other.join();
  CHECK_EQ(seen_by_other.selected, 0);
  CHECK(seen_by_other.stream == nullptr);
  CHECK(other_after_select == fake(0x222));
  CHECK(current_stream(0) == fake(0x111));
}

TEST(streams, bad_input) {
  void* stream = fake(0xdead);
  CHECK_EQ(aoti_torch_get_current_cuda_stream(-1, &stream), AOTI_SHIM_E_NEGATIVE_DEVICE_INDEX);
  CHECK(stream == fake(0xdead));
  CHECK_EQ(aoti_torch_get_current_cuda_stream(0, nullptr), AOTI_SHIM_E_NULL_ARGUMENT);
  CHECK_EQ(aoti_shim_caller_stream_select(fake(1), nullptr), AOTI_SHIM_E_NULL_ARGUMENT);
  CHECK_EQ(selection().selected, 0);  // a failed select changes nothing
  CHECK_EQ(aoti_shim_caller_stream_restore(nullptr), AOTI_SHIM_E_NULL_ARGUMENT);
  CHECK_EQ(aoti_shim_caller_stream_get(nullptr), AOTI_SHIM_E_NULL_ARGUMENT);
  CHECK_EQ(aoti_torch_delete_cuda_stream_guard(nullptr), AOTI_SHIM_E_NULL_HANDLE);
  CHECK_EQ(aoti_torch_delete_device_guard(nullptr), AOTI_SHIM_E_NULL_HANDLE);
  CHECK_EQ(aoti_torch_delete_cuda_guard(nullptr), AOTI_SHIM_E_NULL_HANDLE);
  CHECK_EQ(aoti_torch_device_guard_set_index(nullptr, 0), AOTI_SHIM_E_NULL_HANDLE);
  CUDAStreamGuardHandle stream_guard = reinterpret_cast<CUDAStreamGuardHandle>(fake(0x77));
  CHECK_EQ(aoti_torch_create_cuda_stream_guard(fake(1), -1, &stream_guard), AOTI_SHIM_E_NEGATIVE_DEVICE_INDEX);
  CHECK_EQ(aoti_torch_create_cuda_stream_guard(fake(1), 0, nullptr), AOTI_SHIM_E_NULL_ARGUMENT);
  DeviceGuardHandle device_guard = reinterpret_cast<DeviceGuardHandle>(fake(0x77));
  CHECK_EQ(aoti_torch_create_device_guard(-3, &device_guard), AOTI_SHIM_E_NEGATIVE_DEVICE_INDEX);
  CHECK(device_guard == reinterpret_cast<DeviceGuardHandle>(fake(0x77)));
  if (!has_cuda_device()) {
    // No GPU: guards that must switch devices report it, and create nothing.
    CHECK_EQ(aoti_torch_create_cuda_stream_guard(fake(1), 0, &stream_guard), AOTI_SHIM_E_CUDA_UNAVAILABLE);
    CHECK_EQ(aoti_torch_create_device_guard(0, &device_guard), AOTI_SHIM_E_CUDA_UNAVAILABLE);
    int32_t index = 0;
    CHECK_EQ(aoti_torch_get_current_device_index(&index), AOTI_SHIM_E_CUDA_UNAVAILABLE);
    void* raw = fake(0x77);
    CHECK_EQ(aoti_torch_cuda_caching_allocator_raw_alloc(64, &raw), AOTI_SHIM_E_CUDA_UNAVAILABLE);
    CHECK(raw == fake(0x77));
    CHECK(current_stream(0) == nullptr);  // the failed stream guard selected nothing
  } else {
    CHECK_EQ(aoti_torch_create_cuda_stream_guard(fake(1), 4096, &stream_guard), AOTI_SHIM_E_DEVICE_INDEX_RANGE);
  }
  CHECK(stream_guard == reinterpret_cast<CUDAStreamGuardHandle>(fake(0x77)));
}
