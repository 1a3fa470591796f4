// The caller-stream contract, CUDA stream guards, device guards and raw device memory.
#include "cuda_api.h"
#include "tensor.h"

#include <atomic>
#include <cstdint>
#include <thread>

namespace aotishim {
namespace {

struct Selection {
  bool selected = false;
  void* stream = nullptr;
};

// Guard ids are unique in the process, so a guard handed to another thread can never
// match (and erase) one of that thread's own guards.
std::atomic<uint64_t> next_guard_id{1};

// A guard switching the current device; shared by device, CUDA and stream guards.
struct DeviceSwitch {
  int32_t original = -1;  // device to restore, -1 when the guard did not switch

  AOTITorchError move_to(int32_t index) {
    if (index < 0) {
      return fail_format(AOTI_SHIM_E_NEGATIVE_DEVICE_INDEX, "device index %d is negative", index);
    }
    int32_t count = 0;
    AOTISHIM_TRY(cuda::device_count(&count));
    if (index >= count) {
      return fail_format(AOTI_SHIM_E_DEVICE_INDEX_RANGE, "device index %d is past the device count %d", index, count);
    }
    int32_t current = 0;
    AOTISHIM_TRY(cuda::get_device(&current));
    if (current != index) {
      AOTISHIM_TRY(cuda::set_device(index));
      if (original < 0) {
        original = current;
      }
    }
    return AOTI_SHIM_OK;
  }

  AOTITorchError restore() {
    if (original >= 0) {
      AOTISHIM_TRY(cuda::set_device(original));
      original = -1;
    }
    return AOTI_SHIM_OK;
  }
};

struct StreamGuard {
  uint64_t id;
  DeviceSwitch device;
  int32_t device_index = 0;
  void* stream = nullptr;
  // Its thread's live stream guards, a list: `outer` was made before this one, `inner` after.
  StreamGuard* outer = nullptr;
  StreamGuard* inner = nullptr;
};

// A thread's streams, plain data in one thread_local (no constructor, no destructor):
// current_stream, twice per CUDA tensor, costs one __tls_get_addr where a guard of the
// device is live, two where none is (GCC looks the address up again on that branch). A
// std::vector here cost a TLS wrapper, its init guard and three lookups per read. This
// library is the only definer of the caller selection in a process; other code reaches
// it through aoti_shim_caller_stream_* only.
struct ThreadStreams {
  Selection caller;                   // the caller-stream selection
  StreamGuard* innermost = nullptr;   // the live stream guards made on this thread
};
thread_local ThreadStreams thread_streams;

template <typename Handle>
AOTITorchError create_device_switch(int32_t device_index, Handle* ret_guard) {
  AOTISHIM_TRY(require_output(ret_guard, "ret_guard"));
  auto guard = std::make_unique<DeviceSwitch>();
  AOTISHIM_TRY(guard->move_to(device_index));
  *ret_guard = reinterpret_cast<Handle>(guard.release());
  return AOTI_SHIM_OK;
}

template <typename Handle>
AOTITorchError delete_device_switch(Handle handle) {
  if (handle == nullptr) {
    return fail_format(AOTI_SHIM_E_NULL_HANDLE, "device guard handle is null");
  }
  std::unique_ptr<DeviceSwitch> guard(reinterpret_cast<DeviceSwitch*>(handle));
  return guard->restore();
}

template <typename Handle>
AOTITorchError set_device_switch(Handle handle, int32_t device_index) {
  if (handle == nullptr) {
    return fail_format(AOTI_SHIM_E_NULL_HANDLE, "device guard handle is null");
  }
  return reinterpret_cast<DeviceSwitch*>(handle)->move_to(device_index);
}

}  // namespace

void* current_stream(int32_t device_index) {
  const ThreadStreams& state = thread_streams;
  for (const StreamGuard* guard = state.innermost; guard != nullptr; guard = guard->outer) {
    if (guard->device_index == device_index) {
      return guard->stream;
    }
  }
  return state.caller.selected ? state.caller.stream : nullptr;
}

}  // namespace aotishim

using namespace aotishim;

extern "C" {

AOTITorchError aoti_shim_caller_stream_select(void* stream, AotiShimStreamSelection* previous) {
  AOTISHIM_PROFILE_API("aoti_shim_caller_stream_select");
  AOTISHIM_TRY(require_output(previous, "previous"));
  Selection& caller_selection = thread_streams.caller;
  previous->selected = caller_selection.selected ? 1 : 0;
  previous->stream = caller_selection.stream;
  caller_selection.selected = true;
  caller_selection.stream = stream;
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_shim_caller_stream_restore(const AotiShimStreamSelection* previous) {
  AOTISHIM_PROFILE_API("aoti_shim_caller_stream_restore");
  AOTISHIM_TRY(require_output(previous, "previous"));
  Selection& caller_selection = thread_streams.caller;
  caller_selection.selected = previous->selected != 0;
  caller_selection.stream = caller_selection.selected ? previous->stream : nullptr;
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_shim_caller_stream_get(AotiShimStreamSelection* current) {
  AOTISHIM_PROFILE_API("aoti_shim_caller_stream_get");
  AOTISHIM_TRY(require_output(current, "current"));
  const Selection& caller_selection = thread_streams.caller;
  current->selected = caller_selection.selected ? 1 : 0;
  current->stream = caller_selection.stream;
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_shim_cuda_device_count(int32_t* ret_count) {
  AOTISHIM_PROFILE_API("aoti_shim_cuda_device_count");
  AOTISHIM_TRY(require_output(ret_count, "ret_count"));
  return cuda::device_count(ret_count);
}

AOTITorchError aoti_shim_is_pinned(const void* ptr, bool* ret_pinned) {
  AOTISHIM_PROFILE_API("aoti_shim_is_pinned");
  AOTISHIM_TRY(require_output(ret_pinned, "ret_pinned"));
  return cuda::is_pinned(ptr, ret_pinned);
}

AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret_stream) {
  AOTISHIM_PROFILE_API("aoti_torch_get_current_cuda_stream");
  AOTISHIM_TRY(require_output(ret_stream, "ret_stream"));
  if (device_index < 0) {
    return fail_format(AOTI_SHIM_E_NEGATIVE_DEVICE_INDEX, "device index %d is negative", device_index);
  }
  *ret_stream = current_stream(device_index);
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_create_cuda_stream_guard(
    void* stream, int32_t device_index, CUDAStreamGuardHandle* ret_guard) {
  return guarded("aoti_torch_create_cuda_stream_guard", [&]() -> AOTITorchError {
    AOTISHIM_TRY(require_output(ret_guard, "ret_guard"));
    auto guard = std::make_unique<StreamGuard>();
    guard->id = next_guard_id.fetch_add(1, std::memory_order_relaxed);
    guard->device_index = device_index;
    guard->stream = stream;
    AOTISHIM_TRY(guard->device.move_to(device_index));
    ThreadStreams& state = thread_streams;
    guard->outer = state.innermost;
    if (state.innermost != nullptr) {
      state.innermost->inner = guard.get();
    }
    state.innermost = guard.get();
    cuda::remember_stream(guard->id, device_index, stream);  // the block cache's memo, until the delete
    *ret_guard = reinterpret_cast<CUDAStreamGuardHandle>(guard.release());
    return AOTI_SHIM_OK;
  });
}

AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardHandle handle) {
  AOTISHIM_PROFILE_API("aoti_torch_delete_cuda_stream_guard");
  if (handle == nullptr) {
    return fail_format(AOTI_SHIM_E_NULL_HANDLE, "stream guard handle is null");
  }
  // Only a guard in this thread's own list: one made on another thread has its stream current
  // there, in state this thread cannot reach, and stays alive to be deleted where it was
  // made. (Not by comparing thread ids: a thread that exited with a live guard may hand its
  // id to a new thread, whose list the guard is not in.)
  ThreadStreams& state = thread_streams;
  const StreamGuard* live = state.innermost;
  while (live != nullptr && live != reinterpret_cast<const StreamGuard*>(handle)) {
    live = live->outer;
  }
  if (live == nullptr) {
    return fail_format(
        AOTI_SHIM_E_INVALID_ARGUMENT, "a CUDA stream guard must be deleted on the thread that created it");
  }
  std::unique_ptr<StreamGuard> guard(reinterpret_cast<StreamGuard*>(handle));
  cuda::forget_stream(guard->id);
  // Unlinked wherever it is in this thread's list (guards may be deleted out of order).
  if (guard->inner != nullptr) {
    guard->inner->outer = guard->outer;
  } else {
    state.innermost = guard->outer;
  }
  if (guard->outer != nullptr) {
    guard->outer->inner = guard->inner;
  }
  return guard->device.restore();
}

AOTITorchError aoti_torch_create_device_guard(int32_t device_index, DeviceGuardHandle* ret_guard) {
  return guarded("aoti_torch_create_device_guard", [&] { return create_device_switch(device_index, ret_guard); });
}

AOTITorchError aoti_torch_delete_device_guard(DeviceGuardHandle guard) {
  AOTISHIM_PROFILE_API("aoti_torch_delete_device_guard");
  return delete_device_switch(guard);
}

AOTITorchError aoti_torch_device_guard_set_index(DeviceGuardHandle guard, int32_t device_index) {
  AOTISHIM_PROFILE_API("aoti_torch_device_guard_set_index");
  return set_device_switch(guard, device_index);
}

AOTITorchError aoti_torch_create_cuda_guard(int32_t device_index, CUDAGuardHandle* ret_guard) {
  return guarded("aoti_torch_create_cuda_guard", [&] { return create_device_switch(device_index, ret_guard); });
}

AOTITorchError aoti_torch_delete_cuda_guard(CUDAGuardHandle guard) {
  AOTISHIM_PROFILE_API("aoti_torch_delete_cuda_guard");
  return delete_device_switch(guard);
}

AOTITorchError aoti_torch_cuda_guard_set_index(CUDAGuardHandle guard, int32_t device_index) {
  AOTISHIM_PROFILE_API("aoti_torch_cuda_guard_set_index");
  return set_device_switch(guard, device_index);
}

AOTITorchError aoti_torch_get_current_device_index(int32_t* ret_device_index) {
  AOTISHIM_PROFILE_API("aoti_torch_get_current_device_index");
  AOTISHIM_TRY(require_output(ret_device_index, "ret_device_index"));
  return cuda::get_device(ret_device_index);
}

AOTITorchError aoti_torch_cuda_caching_allocator_raw_alloc(uint64_t nbytes, void** ret_ptr) {
  AOTISHIM_PROFILE_API("aoti_torch_cuda_caching_allocator_raw_alloc");
  AOTISHIM_TRY(require_output(ret_ptr, "ret_ptr"));
  int32_t device = 0;
  AOTISHIM_TRY(cuda::get_device(&device));
  void* ptr = nullptr;
  AOTISHIM_TRY(cuda::malloc_async(&ptr, static_cast<size_t>(nbytes), device, current_stream(device)));
  *ret_ptr = ptr;
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_cuda_caching_allocator_raw_delete(void* ptr) {
  AOTISHIM_PROFILE_API("aoti_torch_cuda_caching_allocator_raw_delete");
  if (ptr == nullptr) {
    return AOTI_SHIM_OK;
  }
  int32_t device = 0;
  AOTISHIM_TRY(cuda::get_device(&device));
  return cuda::free_async(ptr, device, current_stream(device));
}

}  // extern "C"
