// copy_ on the device: the launchers of kernels.cu behind copy_'s plan.
#include "copy_device.h"

#include "cuda_api.h"
#include "scalar_types.h"

#if AOTI_SHIM_WITH_CUDA
#include "kernels.h"
#endif

#include <cstring>

namespace aotishim {

#if AOTI_SHIM_WITH_CUDA

namespace {

// The host element converted to dst's dtype, as the host copy_ converts it.
bool convert_scalar(const Tensor& dst, const Tensor& src, unsigned char* out) {
  if (dst.dtype == src.dtype) {
    std::memcpy(out, src.data(), dst.element_size());
    return true;
  }
  return dispatch_dtype_pair(dst.dtype, src.dtype, [&](auto dst_type, auto src_type) {
    using D = decltype(dst_type);
    using S = decltype(src_type);
    S value;
    std::memcpy(&value, src.data(), sizeof(S));
    D converted = convert<D, S>(value);
    std::memcpy(out, &converted, sizeof(D));
  });
}

}  // namespace

AOTITorchError copy_on_device(
    const Tensor& dst, const Tensor& src, const Dims& sizes, const Dims& dst_strides,
    const Dims& src_strides, void* stream, bool* done) {
  *done = false;
  if (dst.device_type() != kCUDA || sizes.size() > static_cast<size_t>(kernels::kMaxDims)) {
    return AOTI_SHIM_OK;
  }
  kernels::StridedPlan plan;
  plan.ndim = static_cast<int32_t>(sizes.size());
  int64_t numel = 1;
  bool broadcast_source = true;
  for (size_t d = 0; d < sizes.size(); ++d) {
    plan.sizes[d] = sizes[d];
    plan.dst_strides[d] = dst_strides[d];
    plan.src_strides[d] = src_strides[d];
    numel *= sizes[d];
    broadcast_source = broadcast_source && src_strides[d] == 0;
  }
  int status = -1;
  if (src.device_type() == kCPU) {
    // One host element everywhere (zero_, fill_): it travels as a kernel argument.
    alignas(16) unsigned char value[16] = {};
    if (!broadcast_source || dst.element_size() > sizeof(value) || !convert_scalar(dst, src, value)) {
      return AOTI_SHIM_OK;
    }
    status = kernels::fill(dst.data(), plan, numel, value, dst.element_size(), stream);
  } else if (src.device_type() == kCUDA && src.device_index() == dst.device_index()) {
    status = dst.dtype == src.dtype
                 ? kernels::copy_same_dtype(dst.data(), src.data(), plan, numel, dst.element_size(), stream)
                 : kernels::copy_convert(dst.data(), dst.dtype, src.data(), src.dtype, plan, numel, stream);
  }
  if (status == -1) {
    return AOTI_SHIM_OK;
  }
  AOTISHIM_TRY(cuda::check_status(status, "copy_ kernel launch"));
  *done = true;
  return AOTI_SHIM_OK;
}

#else  // !AOTI_SHIM_WITH_CUDA

AOTITorchError copy_on_device(
    const Tensor&, const Tensor&, const Dims&, const Dims&,
    const Dims&, void*, bool* done) {
  *done = false;
  return AOTI_SHIM_OK;
}

#endif  // AOTI_SHIM_WITH_CUDA

}  // namespace aotishim
