// The Hopper attention kernels (attention_hopper.cu, built for sm_90a only): wgmma tensor-core
// products fed by TMA, a producer warpgroup and two consumer warpgroups in ping-pong.
// fused_attention() tries them first; they take the bfloat16 and float16 calls they run faster
// than the mma.sync kernel (hopper_attention_takes says which) on a device of compute
// capability 9.0.
#pragma once

#include "attention_fused.h"

namespace aotishim::kernels {

// Whether the Hopper kernel takes this call (the plan already passed fused_attention_takes):
// its dtype, head dim and mask, and the device's compute capability (`major`, `minor`).
bool hopper_attention_takes(const FusedPlan& plan, int major, int minor);

// Launches it on `stream` of CUDA device `device` (the current one); returns the CUDA status
// of the launch (0: launched).
int hopper_attention(const FusedPlan& plan, int device, void* stream);

}  // namespace aotishim::kernels
