// Hopper's asynchronous instructions as the attention kernels use them (sm_90a; included by
// attention_hopper.cu and the probe that builds its kernels at other tiles): warpgroup MMA and
// its shared-memory descriptors in the 128-byte swizzle, cp.async tile loads in that swizzle,
// mbarriers, TMA tile loads and the named barriers two warpgroups take turns by.
#pragma once

#include "attention_device.cuh"

#include <cuda.h>  // CUtensorMap

#include <cstdint>

namespace aotishim::kernels::device {

// ---- wgmma (PTX ISA 8.0, sm_90a), float32 accumulators in the mma.sync C layout per warp ----
// wgmma_ss: d (+)= A B with A (64 x 16) and B (16 x N) both K-major in shared memory;
// wgmma_rs: d (+)= A B with A from registers (the mma.sync m16n8k16 A layout per warp) and B
// (16 x N) N-major in shared memory. scale_d = 0 ignores d's old values.
// The accumulators as asm operands, 8 at a time, and their names in the instruction.
#define AOTISHIM_D8(i)                                                                                   \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])
#define AOTISHIM_D32 AOTISHIM_D8(0), AOTISHIM_D8(8), AOTISHIM_D8(16), AOTISHIM_D8(24)
#define AOTISHIM_D64 AOTISHIM_D32, AOTISHIM_D8(32), AOTISHIM_D8(40), AOTISHIM_D8(48), AOTISHIM_D8(56)
#define AOTISHIM_R32 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define AOTISHIM_R64 \
  AOTISHIM_R32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
// d (+)= A B, m64nNk16, TY bf16 or f16; N/2 accumulators, then the operands numbered from N/2.
// SS: a and b descriptors, scale_d (0: d's old values ignored).
#define AOTISHIM_WGMMA_SS(N, TY, REGS, DLIST, A, B, S)                                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #S ", 0;\n"                                          \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " {" REGS "}, %" #A ", %" #B \
               ", p, 1, 1, 0, 0;\n}\n"                                                                      \
               : DLIST                                                                                    \
               : "l"(a), "l"(b), "r"(scale_d))
// RS: four A-fragment registers, the b descriptor (N-major: imm-trans-b 1), scale_d.
#define AOTISHIM_WGMMA_RS(N, TY, REGS, DLIST, A0, A1, A2, A3, B, S)                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #S ", 0;\n"                                          \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " {" REGS "}, {%" #A0 ", %" #A1 \
               ", %" #A2 ", %" #A3 "}, %" #B ", p, 1, 1, 1;\n}\n"                                            \
               : DLIST                                                                                    \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d))

template <typename T>
__device__ inline void wgmma_ss(float (&d)[32], uint64_t a, uint64_t b, int scale_d) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    AOTISHIM_WGMMA_SS(64, "bf16", AOTISHIM_R32, AOTISHIM_D32, 32, 33, 34);
  } else {
    AOTISHIM_WGMMA_SS(64, "f16", AOTISHIM_R32, AOTISHIM_D32, 32, 33, 34);
  }
}
template <typename T>
__device__ inline void wgmma_ss(float (&d)[64], uint64_t a, uint64_t b, int scale_d) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    AOTISHIM_WGMMA_SS(128, "bf16", AOTISHIM_R64, AOTISHIM_D64, 64, 65, 66);
  } else {
    AOTISHIM_WGMMA_SS(128, "f16", AOTISHIM_R64, AOTISHIM_D64, 64, 65, 66);
  }
}
template <typename T>
__device__ inline void wgmma_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t b, int scale_d) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    AOTISHIM_WGMMA_RS(64, "bf16", AOTISHIM_R32, AOTISHIM_D32, 32, 33, 34, 35, 36, 37);
  } else {
    AOTISHIM_WGMMA_RS(64, "f16", AOTISHIM_R32, AOTISHIM_D32, 32, 33, 34, 35, 36, 37);
  }
}
template <typename T>
__device__ inline void wgmma_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t b, int scale_d) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    AOTISHIM_WGMMA_RS(128, "bf16", AOTISHIM_R64, AOTISHIM_D64, 64, 65, 66, 67, 68, 69);
  } else {
    AOTISHIM_WGMMA_RS(128, "f16", AOTISHIM_R64, AOTISHIM_D64, 64, 65, 66, 67, 68, 69);
  }
}

__device__ inline void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ inline void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// cp.async's writes reach the async proxy wgmma reads shared memory through.
__device__ inline void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Pins registers in place around an asynchronous wgmma: no read or write of them moves across.
template <int N>
__device__ inline void hold(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    asm volatile("" : "+f"(r[i])::"memory");
  }
}
// The same for A fragments a wgmma still reads: live, untouched, until this point.
template <int N>
__device__ inline void hold(uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    asm volatile("" : "+r"(r[i][0]), "+r"(r[i][1]), "+r"(r[i][2]), "+r"(r[i][3])::"memory");
  }
}

// A [rows][D] tile of 2-byte elements as D/64 column blocks of rows x 128 bytes, the 16-byte
// chunk c of row r at chunk position (c % 8) ^ (r % 8): the 128-byte swizzle (blocks 1024-byte
// aligned). It also keeps cp.async's stores and wgmma's reads free of bank conflicts.
__device__ inline uint32_t swizzled(int r, int c, int rows) {
  return static_cast<uint32_t>((c / 8) * rows * 128 + r * 128 + (((c % 8) ^ (r % 8)) << 4));
}

// Rows at or past `valid` are zero-filled (a zero value row times a zero probability: no NaN).
template <int D, int Rows, int Threads>
__device__ inline void load_swizzled(unsigned char* smem, const unsigned char* gmem, int64_t row_bytes, int valid,
                                     int tid) {
  constexpr int kChunks = D / 8;
#pragma unroll
  for (int i = tid; i < Rows * kChunks; i += Threads) {
    const int r = i / kChunks, c = i % kChunks;
    const bool ok = r < valid;
    cp_async16(smem + swizzled(r, c, Rows), ok ? gmem + r * row_bytes + c * 16 : gmem, ok ? 16 : 0);
  }
}

// A shared-memory matrix descriptor with the 128-byte swizzle: start address, leading and
// stride byte offsets (each in 16-byte units), the layout type in bits 62-63.
__device__ inline uint64_t descriptor(const void* smem, uint32_t leading, uint32_t stride) {
  const uint32_t a = shared_address(smem);
  return static_cast<uint64_t>((a & 0x3FFFF) >> 4) | (static_cast<uint64_t>((leading >> 4) & 0x3FFF) << 16) |
         (static_cast<uint64_t>((stride >> 4) & 0x3FFF) << 32) | (uint64_t{1} << 62);
}

// ---- mbarriers, TMA, named barriers ----

__device__ inline void barrier_init(uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(bar)), "r"(count));
}
// The producer's arrival, with the bytes the tile's copies will bring (they complete the phase).
__device__ inline void barrier_expect(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(bar)), "r"(bytes)
               : "memory");
}
__device__ inline void barrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(bar)) : "memory");
}
// Waits until the barrier's phase of this parity has completed.
__device__ inline void barrier_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\nwait:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait;\n}\n" ::"r"(shared_address(bar)),
      "r"(parity)
      : "memory");
}
// One box of a 4-D tensor map ({column, row, head, batch}) into shared memory, counted on `bar`.
__device__ inline void tma_load(void* dst, const CUtensorMap* map, uint64_t* bar, int column, int row, int head,
                                int batch) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, "
      "%6}], [%2];\n" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(shared_address(bar)), "r"(column), "r"(row), "r"(head), "r"(batch)
      : "memory");
}
// Named barriers 1 and 2 take turns between the two consumer warpgroups (0: __syncthreads).
__device__ inline void turn_wait(int group) { asm volatile("bar.sync %0, 256;\n" ::"r"(1 + group) : "memory"); }
__device__ inline void turn_pass(int group) { asm volatile("bar.arrive %0, 256;\n" ::"r"(2 - group) : "memory"); }

}  // namespace aotishim::kernels::device
