// What the host pays for the questions the shims' block cache asks of CUDA about a stream,
// and for the locks and maps around it (issue 38, the call path). Each line: ns per call,
// the median of 11 rounds of 200000 calls, on a non-blocking stream of this process.
//
//   nvcc -O2 -std=c++17 stream_query_probe.cpp -o /tmp/stream_query_probe && /tmp/stream_query_probe
//
// The driver's own entry points come from cudaGetDriverEntryPointByVersion: no -lcuda.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRounds = 11;
constexpr long kCalls = 200000;

double median_ns(const std::function<void()>& call) {
  std::vector<double> rounds;
  for (long i = 0; i < kCalls / 10; ++i) call();  // warm-up
  for (int r = 0; r < kRounds; ++r) {
    auto start = Clock::now();
    for (long i = 0; i < kCalls; ++i) call();
    rounds.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() / kCalls);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[kRounds / 2];
}

void line(const char* what, double ns) { std::printf("%-64s %8.1f\n", what, ns); }

template <typename Fn>
Fn driver_entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    std::fprintf(stderr, "no driver entry point %s\n", name);
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}

}  // namespace

int main() {
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    std::fprintf(stderr, "cudaStreamCreateWithFlags failed: no usable GPU\n");
    return 1;
  }
  volatile int sink = 0;
  cudaStreamCaptureStatus status{};
  unsigned long long id = 0;
  line("cudaStreamIsCapturing", median_ns([&] { sink += cudaStreamIsCapturing(stream, &status); }));
  line("cudaStreamGetId", median_ns([&] { sink += cudaStreamGetId(stream, &id); }));
  line("cudaStreamIsCapturing + cudaStreamGetId (the shims' ask before run39)", median_ns([&] {
         sink += cudaStreamIsCapturing(stream, &status) + cudaStreamGetId(stream, &id);
       }));
  int device = 0;
  line("cudaGetDevice", median_ns([&] { sink += cudaGetDevice(&device); }));

  using IsCapturing = int (*)(void*, int*);
  using GetId = int (*)(void*, unsigned long long*);
  auto cu_is_capturing = driver_entry<IsCapturing>("cuStreamIsCapturing");
  auto cu_get_id = driver_entry<GetId>("cuStreamGetId");
  if (cu_is_capturing != nullptr && cu_get_id != nullptr) {
    int cu_status = 0;
    line("cuStreamIsCapturing (driver entry point)", median_ns([&] { sink += cu_is_capturing(stream, &cu_status); }));
    line("cuStreamGetId (driver entry point)", median_ns([&] { sink += cu_get_id(stream, &id); }));
    line("cuStreamIsCapturing + cuStreamGetId (the shims' ask)", median_ns([&] {
           sink += cu_is_capturing(stream, &cu_status) + cu_get_id(stream, &id);
         }));
  }

  std::mutex mutex;
  line("std::mutex lock + unlock (uncontended)", median_ns([&] {
         std::lock_guard<std::mutex> lock(mutex);
         sink += 1;
       }));
  std::unordered_map<void*, int> owned;
  std::vector<void*> keys;
  for (int i = 0; i < 64; ++i) {
    keys.push_back(reinterpret_cast<void*>(uintptr_t(0x7f0000000000) + uintptr_t(i) * 4096));
    owned.emplace(keys.back(), i);
  }
  long k = 0;
  line("unordered_map<void*, int>::find, 64 entries", median_ns([&] { sink += owned.find(keys[k++ & 63])->second; }));
  std::printf("sink %d\n", static_cast<int>(sink) & 1);
  (void)cudaStreamDestroy(stream);
  return 0;
}
