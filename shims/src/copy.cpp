// copy_: broadcasting, dtype conversion, strided layouts, host and CUDA memory.
//
// Host to host copies run an element loop. Copies touching CUDA memory of one
// dtype and no broadcast become cudaMemcpyAsync / cudaMemcpy2DAsync calls on the
// current stream. Other copies within one device, and host scalars broadcast into a
// CUDA tensor (zero_, fill_), run a kernel (copy_device.cpp). Anything else is staged
// through host memory.
// Between two GPUs: on the destination's current stream, after an event wait for the
// source's current stream, which in turn waits for the copy (see source_waits_for_copy).
#include "copy_device.h"
#include "cuda_api.h"
#include "scalar_types.h"
#include "tensor.h"

#include <algorithm>
#include <cstring>

namespace aotishim {
namespace {

// A view flattened for iteration: sizes with byte strides of the destination and source.
struct CopyPlan {
  Dims sizes;
  Dims dst_strides;  // bytes
  Dims src_strides;  // bytes
};

// Aligns src to dst's shape (broadcasting) and merges dims that are contiguous in both.
AOTITorchError plan_copy(const Tensor& dst, const Tensor& src, CopyPlan* plan) {
  int64_t ndim = dst.dim();
  if (src.dim() > ndim) {
    return fail_format(
        AOTI_SHIM_E_RANK_MISMATCH, "cannot copy a %lld-dim tensor into a %lld-dim tensor",
        static_cast<long long>(src.dim()), static_cast<long long>(ndim));
  }
  int64_t dst_element = static_cast<int64_t>(dst.element_size());
  int64_t src_element = static_cast<int64_t>(src.element_size());
  Dims sizes;
  Dims dst_strides;
  Dims src_strides;
  int64_t lead = ndim - src.dim();
  for (int64_t d = 0; d < ndim; ++d) {
    int64_t size = dst.sizes[d];
    int64_t src_stride = 0;
    if (d >= lead) {
      int64_t src_size = src.sizes[d - lead];
      if (src_size != size && src_size != 1) {
        return fail_format(
            AOTI_SHIM_E_SHAPE_MISMATCH, "source size %lld does not broadcast to %lld in dim %lld",
            static_cast<long long>(src_size), static_cast<long long>(size), static_cast<long long>(d));
      }
      src_stride = src_size == 1 ? 0 : src.strides[d - lead];
    }
    if (size == 1) {
      continue;
    }
    if (size > 1 && dst.strides[d] == 0) {
      return fail_format(
          AOTI_SHIM_E_INVALID_ARGUMENT, "the destination has dim %lld of size %lld with stride 0 (overlapping writes)",
          static_cast<long long>(d), static_cast<long long>(size));
    }
    sizes.push_back(size);
    // Wrapping, not signed: an empty tensor's strides may be anything (a zero size beside
    // sizes whose product passes INT64_MAX); a non-empty one's bytes fit its storage.
    dst_strides.push_back(static_cast<int64_t>(static_cast<uint64_t>(dst.strides[d]) * dst_element));
    src_strides.push_back(static_cast<int64_t>(static_cast<uint64_t>(src_stride) * src_element));
  }
  if (dst.numel() == 0) {
    *plan = CopyPlan{};  // nothing to copy: every caller returns before it iterates
    return AOTI_SHIM_OK;
  }
  // Merge dim i into dim i+1 when stepping over i+1 entirely equals one step of i in both tensors.
  CopyPlan merged;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!merged.sizes.empty()) {
      size_t last = merged.sizes.size() - 1;
      if (merged.dst_strides[last] == dst_strides[d] * sizes[d] &&
          merged.src_strides[last] == src_strides[d] * sizes[d]) {
        merged.sizes[last] *= sizes[d];
        merged.dst_strides[last] = dst_strides[d];
        merged.src_strides[last] = src_strides[d];
        continue;
      }
    }
    merged.sizes.push_back(sizes[d]);
    merged.dst_strides.push_back(dst_strides[d]);
    merged.src_strides.push_back(src_strides[d]);
  }
  *plan = std::move(merged);
  return AOTI_SHIM_OK;
}

// Calls row(dst_offset, src_offset) for every index of all dims but the last.
template <typename Row>
void for_each_row(const CopyPlan& plan, Row&& row) {
  size_t outer = plan.sizes.empty() ? 0 : plan.sizes.size() - 1;
  Dims index(outer, 0);
  int64_t dst_offset = 0;
  int64_t src_offset = 0;
  while (true) {
    row(dst_offset, src_offset);
    size_t d = outer;
    while (d > 0) {
      --d;
      if (++index[d] < plan.sizes[d]) {
        dst_offset += plan.dst_strides[d];
        src_offset += plan.src_strides[d];
        break;
      }
      dst_offset -= plan.dst_strides[d] * (plan.sizes[d] - 1);
      src_offset -= plan.src_strides[d] * (plan.sizes[d] - 1);
      index[d] = 0;
      if (d == 0) {
        return;
      }
    }
    if (outer == 0) {
      return;
    }
  }
}

template <typename D, typename S>
void convert_rows(const CopyPlan& plan, char* dst, const char* src) {
  int64_t n = plan.sizes.empty() ? 1 : plan.sizes.back();
  int64_t ds = plan.sizes.empty() ? 0 : plan.dst_strides.back();
  int64_t ss = plan.sizes.empty() ? 0 : plan.src_strides.back();
  for_each_row(plan, [&](int64_t dst_offset, int64_t src_offset) {
    char* d = dst + dst_offset;
    const char* s = src + src_offset;
    if constexpr (std::is_same_v<D, S> && std::is_arithmetic_v<D>) {
      if (ds == static_cast<int64_t>(sizeof(D)) && ss == static_cast<int64_t>(sizeof(S))) {
        std::memmove(d, s, static_cast<size_t>(n) * sizeof(D));
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      S value;
      std::memcpy(&value, s + i * ss, sizeof(S));
      D out = convert<D, S>(value);
      std::memcpy(d + i * ds, &out, sizeof(D));
    }
  });
}

// Byte-exact copy for one dtype (any dtype, including those without arithmetic here).
template <size_t N>
struct Bytes {
  unsigned char b[N];
};

void copy_bytes_rows(const CopyPlan& plan, char* dst, const char* src, size_t element) {
  int64_t n = plan.sizes.empty() ? 1 : plan.sizes.back();
  int64_t ds = plan.sizes.empty() ? 0 : plan.dst_strides.back();
  int64_t ss = plan.sizes.empty() ? 0 : plan.src_strides.back();
  int64_t e = static_cast<int64_t>(element);
  for_each_row(plan, [&](int64_t dst_offset, int64_t src_offset) {
    char* d = dst + dst_offset;
    const char* s = src + src_offset;
    if (ds == e && ss == e) {
      std::memmove(d, s, static_cast<size_t>(n * e));
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(d + i * ds, s + i * ss, element);
    }
  });
}

// Host to host.
AOTITorchError copy_on_host(const Tensor& dst, const Tensor& src) {
  CopyPlan plan;
  AOTISHIM_TRY(plan_copy(dst, src, &plan));
  if (dst.numel() == 0) {
    return AOTI_SHIM_OK;
  }
  char* d = dst.data();
  const char* s = src.data();
  if (dst.dtype == src.dtype) {
    copy_bytes_rows(plan, d, s, dst.element_size());
    return AOTI_SHIM_OK;
  }
  bool known = dispatch_dtype_pair(dst.dtype, src.dtype, [&](auto dst_type, auto src_type) {
    convert_rows<decltype(dst_type), decltype(src_type)>(plan, d, s);
  });
  if (!known) {
    return fail_format(
        AOTI_SHIM_E_DTYPE_MISMATCH, "no conversion from %s to %s", dtype_name(src.dtype), dtype_name(dst.dtype));
  }
  return AOTI_SHIM_OK;
}

cuda::CopyKind copy_kind(const Tensor& dst, const Tensor& src) {
  if (src.device_type() == kCPU) {
    return cuda::CopyKind::HostToDevice;
  }
  return dst.device_type() == kCPU ? cuda::CopyKind::DeviceToHost : cuda::CopyKind::DeviceToDevice;
}

// Same dtype, no broadcast, no zero strides: memcpy / memcpy2D calls on `stream`.
// Returns false in *done when the layout needs staging instead.
AOTITorchError copy_with_memcpy(const Tensor& dst, const Tensor& src, const CopyPlan& plan, void* stream, bool* done) {
  *done = false;
  for (size_t d = 0; d < plan.sizes.size(); ++d) {
    if (plan.src_strides[d] <= 0 || plan.dst_strides[d] <= 0) {
      return AOTI_SHIM_OK;
    }
  }
  cuda::CopyKind kind = copy_kind(dst, src);
  size_t element = dst.element_size();
  char* d = dst.data();
  const char* s = src.data();
  size_t n = plan.sizes.size();
  int64_t e = static_cast<int64_t>(element);
  if (n == 0) {
    AOTISHIM_TRY(cuda::memcpy_async(d, s, element, kind, stream));
    *done = true;
    return AOTI_SHIM_OK;
  }
  bool inner_contiguous = plan.dst_strides[n - 1] == e && plan.src_strides[n - 1] == e;
  if (n == 1 && inner_contiguous) {
    AOTISHIM_TRY(cuda::memcpy_async(d, s, static_cast<size_t>(plan.sizes[0] * e), kind, stream));
    *done = true;
    return AOTI_SHIM_OK;
  }
  // Rows of one 2D copy: the last dim (contiguous rows of bytes), or single elements with a pitch.
  CopyPlan outer = plan;
  size_t width = 0;
  size_t height = 0;
  size_t dst_pitch = 0;
  size_t src_pitch = 0;
  if (inner_contiguous) {
    width = static_cast<size_t>(plan.sizes[n - 1] * e);
    height = static_cast<size_t>(plan.sizes[n - 2]);
    dst_pitch = static_cast<size_t>(plan.dst_strides[n - 2]);
    src_pitch = static_cast<size_t>(plan.src_strides[n - 2]);
    if (dst_pitch < width || src_pitch < width) {
      inner_contiguous = false;
    } else {
      outer.sizes.resize(n - 1);
      outer.dst_strides.resize(n - 1);
      outer.src_strides.resize(n - 1);
    }
  }
  if (!inner_contiguous) {
    width = element;
    height = static_cast<size_t>(plan.sizes[n - 1]);
    dst_pitch = static_cast<size_t>(plan.dst_strides[n - 1]);
    src_pitch = static_cast<size_t>(plan.src_strides[n - 1]);
  }
  // for_each_row visits every index of all dims but the last of `outer`.
  AOTITorchError status = AOTI_SHIM_OK;
  for_each_row(outer, [&](int64_t dst_offset, int64_t src_offset) {
    if (status == AOTI_SHIM_OK) {
      status = cuda::memcpy2d_async(d + dst_offset, dst_pitch, s + src_offset, src_pitch, width, height, kind, stream);
    }
  });
  AOTISHIM_TRY(status);
  *done = true;
  return AOTI_SHIM_OK;
}

// A host copy of the bytes a CUDA tensor's view spans, viewed with the same layout.
AOTITorchError fetch_to_host(const Tensor& src, void* stream, std::unique_ptr<Tensor>* host) {
  int64_t span = 0;
  AOTISHIM_TRY(span_elements(src.sizes, src.strides, &span));
  std::unique_ptr<Tensor> copy;
  AOTISHIM_TRY(new_tensor({span}, {1}, src.dtype, kCPU, -1, false, &copy));
  if (span > 0) {
    AOTISHIM_TRY(cuda::memcpy_async(
        copy->data(), src.data(), static_cast<size_t>(span) * src.element_size(), cuda::CopyKind::DeviceToHost,
        stream));
    AOTISHIM_TRY(cuda::synchronize(stream));
  }
  copy->sizes = src.sizes;
  copy->strides = src.strides;
  *host = std::move(copy);
  return AOTI_SHIM_OK;
}

// After a copy between two GPUs: what the source's device does next must not overtake
// the copy's read. That is later work on its current stream (a write to the source),
// and the stream its block was allocated on, where the allocator frees it and hands it
// out again (a stream-ordered free is ordered on that stream only).
AOTITorchError source_waits_for_copy(
    const Tensor& src, int32_t src_device, void* src_stream, int32_t copy_device, void* copy_stream) {
  AOTISHIM_TRY(cuda::stream_wait(src_device, src_stream, copy_device, copy_stream));
  // A part of a shared block (Storage::parent) is freed with the block, on the block's stream.
  const Storage& owning = src.storage->parent ? *src.storage->parent : *src.storage;
  if (owning.owner == Owner::Device && owning.block.stream != src_stream) {
    AOTISHIM_TRY(cuda::stream_wait(src_device, owning.block.stream, copy_device, copy_stream));
  }
  return AOTI_SHIM_OK;
}

AOTITorchError copy_with_cuda(const Tensor& dst, const Tensor& src, bool non_blocking) {
  CopyPlan plan;
  AOTISHIM_TRY(plan_copy(dst, src, &plan));
  if (dst.numel() == 0) {
    return AOTI_SHIM_OK;
  }
  int32_t device = dst.device_type() == kCUDA ? dst.device_index() : src.device_index();
  cuda::DeviceScope scope;
  AOTISHIM_TRY(scope.enter(device));
  void* stream = current_stream(device);
  bool host_involved = dst.device_type() == kCPU || src.device_type() == kCPU;
  // Between two GPUs the copy runs on the destination's stream, so the source's own
  // stream is ordered against it by events, both ways.
  bool cross_device = !host_involved && src.device_index() != dst.device_index();
  int32_t src_device = src.device_index();
  void* src_stream = cross_device ? current_stream(src_device) : nullptr;
  if (cross_device) {
    // Before: the copy must not read the source before its pending writes are done.
    AOTISHIM_TRY(cuda::stream_wait(device, stream, src_device, src_stream));
  }

  if (dst.dtype == src.dtype) {
    bool done = false;
    AOTISHIM_TRY(copy_with_memcpy(dst, src, plan, stream, &done));
    if (done) {
      if (cross_device) {
        AOTISHIM_TRY(source_waits_for_copy(src, src_device, src_stream, device, stream));
      }
      if (host_involved && !non_blocking) {
        AOTISHIM_TRY(cuda::synchronize(stream));
      }
      return AOTI_SHIM_OK;
    }
  }

  bool on_device = false;
  AOTISHIM_TRY(copy_on_device(dst, src, plan.sizes, plan.dst_strides, plan.src_strides, stream, &on_device));
  if (on_device) {
    return host_involved && !non_blocking ? cuda::synchronize(stream) : AOTI_SHIM_OK;
  }

  // Staged: source on the host, converted and broadcast there, then written out.
  std::unique_ptr<Tensor> fetched;
  const Tensor* host_src = &src;
  if (src.device_type() == kCUDA) {
    AOTISHIM_TRY(fetch_to_host(src, stream, &fetched));
    host_src = fetched.get();
  }
  if (dst.device_type() == kCPU) {
    return copy_on_host(dst, *host_src);
  }
  std::unique_ptr<Tensor> packed;
  AOTISHIM_TRY(new_tensor(dst.sizes, contiguous_strides(dst.sizes), dst.dtype, kCPU, -1, false, &packed));
  AOTISHIM_TRY(copy_on_host(*packed, *host_src));
  CopyPlan out_plan;
  AOTISHIM_TRY(plan_copy(dst, *packed, &out_plan));
  bool done = false;
  AOTISHIM_TRY(copy_with_memcpy(dst, *packed, out_plan, stream, &done));
  if (!done) {
    return fail_format(AOTI_SHIM_E_UNSUPPORTED, "cannot copy into this CUDA layout without a kernel");
  }
  // The staging buffer dies here: wait until CUDA has read it.
  return cuda::synchronize(stream);
}

}  // namespace

AOTITorchError copy_tensor(const Tensor& dst, const Tensor& src, bool non_blocking) {
  if (dst.device_type() == kCPU && src.device_type() == kCPU) {
    return copy_on_host(dst, src);
  }
  return copy_with_cuda(dst, src, non_blocking);
}

}  // namespace aotishim
