// Device helpers both attention kernels share (attention_fused.cu, the mma.sync kernel for
// sm_80 and later; attention_hopper.cu, the wgmma kernel for sm_90a): asynchronous copies
// to shared memory, base-2 exponentials, 16-bit packing and stores, and the host's opt-in to
// large shared memory.
#pragma once

#include "attention_fused.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace aotishim::kernels::device {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// The shared-memory address (a 32-bit window offset) PTX's shared-state operands take.
__device__ inline uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ inline void cp_async16(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)), "l"(src), "r"(bytes));
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ inline void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

template <typename T>
__device__ inline uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    uint32_t u;
    memcpy(&u, &v, 4);
    return u;
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    uint32_t u;
    memcpy(&u, &v, 4);
    return u;
  }
}

template <typename T>
__device__ inline void store2(T* p, float a, float b) {
  if constexpr (std::is_same_v<T, float>) {
    *reinterpret_cast<float2*>(p) = make_float2(a, b);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
  } else {
    *reinterpret_cast<__half2*>(p) = __floats2half2_rn(a, b);
  }
}

__device__ inline float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Over 48 KiB of dynamic shared memory needs the kernel's opt-in, once per device (`done`:
// one bit per device, the kernel's own). Returns the CUDA status (0: done).
inline int opt_in_shared_memory(const void* kernel, size_t bytes, std::atomic<unsigned long long>& done) {
  if (bytes <= 48 * 1024) {
    return 0;
  }
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) {
    return static_cast<int>(e);
  }
  unsigned long long bit = device < 64 ? 1ull << device : 0;
  if (bit != 0 && (done.load(std::memory_order_relaxed) & bit) != 0) {
    return 0;
  }
  e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (e != cudaSuccess) {
    return static_cast<int>(e);
  }
  done.fetch_or(bit, std::memory_order_relaxed);
  return 0;
}

// One CTA per (batch * head, block_m query rows), the heaviest query tiles first: each kernel
// takes (plan, query tiles, batch * heads). `opted_in`: the kernel's own opt-in bits.
template <typename Kernel>
int launch_attention(Kernel kernel, const FusedPlan& p, int block_m, int threads, size_t smem,
                     std::atomic<unsigned long long>& opted_in, cudaStream_t stream) {
  int status = opt_in_shared_memory(reinterpret_cast<const void*>(kernel), smem, opted_in);
  if (status != 0) {
    return status;
  }
  int tiles = static_cast<int>((p.q_len + block_m - 1) / block_m);
  int64_t bh = p.batch * p.heads;
  kernel<<<static_cast<unsigned>(tiles * bh), threads, smem, stream>>>(p, tiles, bh);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace aotishim::kernels::device
