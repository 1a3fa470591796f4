// copy_ with a kernel: the copies cudaMemcpy cannot do within one device, and host
// scalars broadcast into a CUDA tensor.
#pragma once

#include "tensor.h"

#include <vector>

namespace aotishim {

// sizes and byte strides are copy_'s merged plan of dst and src. Sets *done when a
// kernel was launched on `stream`; leaves it false (and returns OK) when this copy
// needs another route: built without CUDA, more dims than a launch takes, devices
// differ, a host source that is not one broadcast element, or a dtype without a kernel.
AOTITorchError copy_on_device(
    const Tensor& dst, const Tensor& src, const Dims& sizes, const Dims& dst_strides,
    const Dims& src_strides, void* stream, bool* done);

}  // namespace aotishim
