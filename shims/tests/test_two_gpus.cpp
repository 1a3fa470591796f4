// Copies between two GPUs (issue 16), in the `cuda` group: skipped below two devices.
// A stream is held by a host function that sleeps (cudaLaunchHostFunc): work queued on
// it after that cannot start before the sleep ends, so a copy that sees a value written
// behind the hold was ordered after the write.
#include "helpers.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <thread>

using namespace testing_helpers;

namespace {

constexpr int64_t kElements = 1 << 20;
constexpr size_t kBytes = kElements * sizeof(float);

void require_two_gpus() {
  // The library's answer first, checked against the machine like every CUDA test's.
  if (!has_cuda_device()) {
    SKIP("no CUDA device");
  }
  int32_t count = 0;
  if (aoti_shim_cuda_device_count(&count) != AOTI_SHIM_OK || count < 2) {
    SKIP("needs two CUDA devices");
  }
}

void CUDART_CB sleep_300ms(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }

struct DeviceStream {
  int device;
  cudaStream_t stream = nullptr;
  explicit DeviceStream(int d) : device(d) {
    CHECK_EQ(cudaSetDevice(d), cudaSuccess);
    CHECK_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    CHECK_EQ(cudaSetDevice(0), cudaSuccess);
  }
  ~DeviceStream() { cudaStreamDestroy(stream); }
  void hold() { CHECK_EQ(cudaLaunchHostFunc(stream, sleep_300ms, nullptr), cudaSuccess); }
  bool idle() const { return cudaStreamQuery(stream) == cudaSuccess; }
};

// The shims' current stream per device, as a blob's stream guards set it.
struct Guards {
  CUDAStreamGuardHandle first = nullptr;
  CUDAStreamGuardHandle second = nullptr;
  Guards(const DeviceStream& a, const DeviceStream& b) {
    CHECK_OK(aoti_torch_create_cuda_stream_guard(a.stream, a.device, &first));
    CHECK_OK(aoti_torch_create_cuda_stream_guard(b.stream, b.device, &second));
  }
  ~Guards() {
    CHECK_OK(aoti_torch_delete_cuda_stream_guard(second));
    CHECK_OK(aoti_torch_delete_cuda_stream_guard(first));
  }
};

void fill_bytes(AtenTensorHandle t, int device, int value) {
  CHECK_EQ(cudaSetDevice(device), cudaSuccess);
  CHECK_EQ(cudaMemset(data_of<void>(t), value, kBytes), cudaSuccess);
  CHECK_EQ(cudaSetDevice(0), cudaSuccess);
}

bool all_bytes(AtenTensorHandle t, unsigned char value) {
  std::vector<unsigned char> host(kBytes);
  CHECK_EQ(cudaMemcpy(host.data(), data_of<void>(t), kBytes, cudaMemcpyDefault), cudaSuccess);
  for (unsigned char b : host) {
    if (b != value) {
      return false;
    }
  }
  return true;
}

void sync_both() {
  for (int d = 0; d < 2; ++d) {
    CHECK_EQ(cudaSetDevice(d), cudaSuccess);
    CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  CHECK_EQ(cudaSetDevice(0), cudaSuccess);
}

}  // namespace

TEST(cuda, copy_between_gpus_waits_for_the_source_stream) {
  require_two_gpus();
  DeviceStream s0(0), s1(1);
  Owned src = empty({kElements}, {}, kFloat32, kCUDA, 1);
  Owned dst = empty({kElements}, {}, kFloat32, kCUDA, 0);
  fill_bytes(src, 1, 0x11);
  fill_bytes(dst, 0, 0x00);
  sync_both();  // the fills ran on the legacy streams, which the non-blocking streams ignore
  s1.hold();
  CHECK_EQ(cudaSetDevice(1), cudaSuccess);
  CHECK_EQ(cudaMemsetAsync(data_of<void>(src), 0x22, kBytes, s1.stream), cudaSuccess);  // behind the hold
  CHECK_EQ(cudaSetDevice(0), cudaSuccess);
  {
    Guards guards(s0, s1);
    CHECK_OK(aoti_torch_copy_(dst, src, 0));
  }
  CHECK(!s1.idle());  // the proof needs the write still pending when the copy was queued
  sync_both();
  CHECK(all_bytes(dst, 0x22));
}

TEST(cuda, copy_between_gpus_holds_back_the_source_streams_next_write) {
  require_two_gpus();
  DeviceStream s0(0), s1(1);
  Owned src = empty({kElements}, {}, kFloat32, kCUDA, 1);
  Owned dst = empty({kElements}, {}, kFloat32, kCUDA, 0);
  fill_bytes(src, 1, 0x11);
  fill_bytes(dst, 0, 0x00);
  sync_both();  // the fills ran on the legacy streams, which the non-blocking streams ignore
  s0.hold();  // the copy runs on the destination's stream: it stays pending
  {
    Guards guards(s0, s1);
    CHECK_OK(aoti_torch_copy_(dst, src, 0));
  }
  CHECK_EQ(cudaSetDevice(1), cudaSuccess);
  CHECK_EQ(cudaMemsetAsync(data_of<void>(src), 0x33, kBytes, s1.stream), cudaSuccess);  // after the copy
  CHECK_EQ(cudaSetDevice(0), cudaSuccess);
  CHECK(!s0.idle());
  sync_both();
  CHECK(all_bytes(dst, 0x11));
  CHECK(all_bytes(src, 0x33));
}
