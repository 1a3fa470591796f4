// fill_.Scalar: torch's fallback for fill_ on a tensor (aoti_torch_{cpu,cuda}_fill__Scalar).
// The value is one host float64 element broadcast by copy_: converted as copy_ converts,
// written by a kernel on CUDA (copy_device.cpp) and by the element loop on the host.
#include "tensor.h"
#include "tensor_inl.h"

#include <memory>

namespace aotishim {
namespace {

AOTITorchError fill_scalar(const char* where, AtenTensorHandle self, double value) {
  return guarded(where, [&]() -> AOTITorchError {
    Tensor* t = nullptr;
    AOTISHIM_TRY(unwrap(self, &t, "self"));
    alignas(16) double element = value;
    Tensor scalar;
    scalar.storage = std::make_shared<Storage>();
    scalar.storage->data = &element;
    scalar.storage->nbytes = sizeof(element);
    scalar.dtype = 7;  // float64
    return copy_tensor(*t, scalar, false);
  });
}

}  // namespace
}  // namespace aotishim

using aotishim::fill_scalar;

AOTITorchError aoti_torch_cpu_fill__Scalar(AtenTensorHandle self, double value) {
  return fill_scalar("aoti_torch_cpu_fill__Scalar", self, value);
}

AOTITorchError aoti_torch_cuda_fill__Scalar(AtenTensorHandle self, double value) {
  return fill_scalar("aoti_torch_cuda_fill__Scalar", self, value);
}
