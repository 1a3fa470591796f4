// CUDA scaled dot-product attention, the fused-attention fallbacks a compile that keeps
// PyTorch's default attention imports: _scaled_dot_product_efficient_attention (torch 2.11
// picks it on the H200 for float32), _scaled_dot_product_cudnn_attention (bfloat16 and
// float16) and _scaled_dot_product_flash_attention. Inference only: dropout must be 0.
//
// One implementation serves all three, by two routes. The fused kernel (attention_fused.cu,
// issue 38): one launch, the scores kept on chip, for float32/float16/bfloat16 at head dims
// 32, 64, 96 and 128 with 16-byte aligned, unit-stride rows. Everything else takes the GEMM
// route (issue 25): scores = scale * Q @ K^T by a strided-batched cuBLAS GEMM into float32,
// a softmax kernel of ours (kernels_nn.cu) that adds the mask, applies the causal cut,
// writes the probabilities in the inputs' dtype and the logsumexp, then out = P @ V by a
// second GEMM straight into the output's layout (the scores make a round trip through
// memory, B*H*L*S floats). docs/gpu/attention.md has both, which calls go where, and their
// speed against torch's fused kernels.
//
// Grouped-query attention: query head h reads key/value head h / (Hq / Hk). Each op's
// outputs have the sizes, strides, dtypes and devices torch 2.11's CUDA kernels return
// (read on the H200: docs/gpu/results-2026-12-01/run7_probe.log), which is what a blob
// compiled against them indexes.
#include "attention_fused.h"
#include "blas.h"
#include "cuda_api.h"
#include "kernels_nn.h"
#include "tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <vector>

namespace aotishim {
namespace {

enum class Kind { Efficient, Cudnn, Flash };

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::Efficient:
      return "_scaled_dot_product_efficient_attention";
    case Kind::Cudnn:
      return "_scaled_dot_product_cudnn_attention";
    case Kind::Flash:
      return "_scaled_dot_product_flash_attention";
  }
  return "attention";
}

// Which outputs the caller takes: a blob passes nullptr for those it never reads, and an
// output nobody takes is neither made nor computed.
struct Takes {
  bool lse = true;
  bool rng = true;    // the philox seed or offset
  bool debug = true;  // flash's empty debug mask
};

struct Request {
  Kind kind = Kind::Efficient;
  const Tensor* q = nullptr;
  const Tensor* k = nullptr;
  const Tensor* v = nullptr;
  const Tensor* mask = nullptr;  // additive bias or bool mask, broadcastable to [B, H, L, S]
  double dropout = 0.0;
  bool causal = false;
  bool want_lse = false;
  const double* scale = nullptr;
  Takes takes;
};

// The philox seed and offset's shared device block, still to be zeroed (null: none, or
// zeroed already): the fused kernel writes its zeros, the GEMM route a memset.
struct Zeros {
  void* data = nullptr;
  size_t bytes = 0;
};

// Strides of `sizes` in the dim order of `like`'s strides (largest first), as torch's
// alloc_with_matching_layout (cuDNN attention's output) and empty_like (flash's) do.
Dims matching_layout(const Tensor& like, const Dims& sizes) {
  if (like.sizes == sizes && non_overlapping_and_dense(like)) {
    return like.strides;
  }
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return like.strides[a] > like.strides[b]; });
  Dims strides(sizes.size());
  int64_t running = 1;
  for (size_t i = order.size(); i-- > 0;) {
    strides[order[i]] = running;
    running *= std::max<int64_t>(sizes[order[i]], 1);
  }
  return strides;
}

AOTITorchError check_arguments(const Request& r) {
  const char* where = kind_name(r.kind);
  if (r.dropout != 0.0) {
    return fail_format(
        AOTI_SHIM_E_UNSUPPORTED, "%s: dropout_p %g: the shims run inference only (dropout 0)", where, r.dropout);
  }
  const Tensor &q = *r.q, &k = *r.k, &v = *r.v;
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) {
    return fail_format(AOTI_SHIM_E_RANK_MISMATCH, "%s: query, key and value must be 4-dim [B, H, L, E]", where);
  }
  if (q.dtype != 6 && q.dtype != 5 && q.dtype != 15) {
    return fail_format(
        AOTI_SHIM_E_DTYPE_MISMATCH, "%s: %s is not supported (float32, float16, bfloat16)", where, dtype_name(q.dtype));
  }
  if (k.dtype != q.dtype || v.dtype != q.dtype) {
    return fail_format(AOTI_SHIM_E_DTYPE_MISMATCH, "%s: query, key and value must have one dtype", where);
  }
  int64_t batch = q.sizes[0], heads = q.sizes[1], e = q.sizes[3];
  int64_t kv_heads = k.sizes[1], s = k.sizes[2];
  if (k.sizes[0] != batch || v.sizes[0] != batch || v.sizes[1] != kv_heads || k.sizes[3] != e || v.sizes[2] != s) {
    return fail_format(AOTI_SHIM_E_SHAPE_MISMATCH, "%s: query, key and value shapes do not match", where);
  }
  if (kv_heads < 1 || heads % kv_heads != 0) {
    return fail_format(
        AOTI_SHIM_E_SHAPE_MISMATCH, "%s: %lld query heads are not a multiple of %lld key/value heads", where,
        static_cast<long long>(heads), static_cast<long long>(kv_heads));
  }
  if (r.mask != nullptr) {
    const Tensor& m = *r.mask;
    if (m.dtype != 11 && m.dtype != q.dtype) {
      return fail_format(
          AOTI_SHIM_E_DTYPE_MISMATCH, "%s: attn_bias is %s: it must be bool or %s", where, dtype_name(m.dtype),
          dtype_name(q.dtype));
    }
    if (m.dim() > 4) {
      return fail_format(AOTI_SHIM_E_RANK_MISMATCH, "%s: attn_bias has more than 4 dims", where);
    }
    const int64_t target[4] = {batch, heads, q.sizes[2], s};
    int64_t lead = 4 - m.dim();
    for (int64_t d = lead; d < 4; ++d) {
      int64_t size = m.sizes[d - lead];
      if (size != target[d] && size != 1) {
        return fail_format(AOTI_SHIM_E_SHAPE_MISMATCH, "%s: attn_bias does not broadcast to [B, H, L, S]", where);
      }
    }
  }
  return AOTI_SHIM_OK;
}

// A row-major [rows, cols] matrix per (b, head) of a 4-dim tensor [B, H, rows, cols] whose
// last dim is unit-stride: the view cuBLAS reads (or writes) in place.
struct Matrices {
  const Tensor* t = nullptr;
  int64_t row_stride = 0;  // elements between rows (>= cols)
  int64_t b_stride = 0, h_stride = 0;
};

bool as_matrices(const Tensor& t, Matrices* out) {
  int64_t rows = t.sizes[2], cols = t.sizes[3];
  int64_t col_stride = cols == 1 ? 1 : t.strides[3];
  int64_t row_stride = rows == 1 ? std::max<int64_t>(cols, 1) : t.strides[2];
  if (col_stride != 1 || row_stride < std::max<int64_t>(cols, 1)) {
    return false;
  }
  *out = Matrices{&t, row_stride, t.sizes[0] == 1 ? 0 : t.strides[0], t.sizes[1] == 1 ? 0 : t.strides[1]};
  return true;
}

[[maybe_unused]] AOTITorchError readable(const Tensor& t, std::unique_ptr<Tensor>* copy, Matrices* out) {
  if (as_matrices(t, out)) {
    return AOTI_SHIM_OK;
  }
  AOTISHIM_TRY(new_tensor(t.sizes, contiguous_strides(t.sizes), t.dtype, kCUDA, t.device_index(), false, copy));
  AOTISHIM_TRY(copy_tensor(**copy, t, true));
  as_matrices(**copy, out);
  return AOTI_SHIM_OK;
}

AOTITorchError new_cuda(Dims sizes, Dims strides, int32_t dtype, int32_t device,
                        std::unique_ptr<Tensor>* out) {
  return new_tensor(std::move(sizes), std::move(strides), dtype, kCUDA, device, false, out);
}

// AOTI_SHIM_ATTENTION_ROUTE, read per call so that a test can compare the routes on the same
// shapes: gemm sends every call down the GEMM route; mma keeps fused calls off the Hopper
// kernels (the mma.sync kernel takes them); pipelined gives the Hopper calls to its pipelined
// kernel, the fallback of operands no tensor map describes.
enum class Route { Any, Mma, Gemm, Pipelined };
// Unused in a build without CUDA, as fused_plan below.
[[maybe_unused]] Route forced_route() {
  const char* route = std::getenv("AOTI_SHIM_ATTENTION_ROUTE");
  if (route == nullptr) {
    return Route::Any;
  }
  if (std::strcmp(route, "gemm") == 0) {
    return Route::Gemm;
  }
  if (std::strcmp(route, "mma") == 0) {
    return Route::Mma;
  }
  return std::strcmp(route, "pipelined") == 0 ? Route::Pipelined : Route::Any;
}

// The fused kernel's plan for this call, or false where an operand's layout rules it out
// here (a last dim that is not unit-stride, value and query head dims that differ);
// fused_attention_takes() has the kernel's own conditions.
[[maybe_unused]] bool fused_plan(const Request& r, const Tensor& out, float* lse, const int64_t* lse_strides,
                                 double scale, kernels::FusedPlan* plan) {
  const Tensor &q = *r.q, &k = *r.k, &v = *r.v;
  if (v.sizes[3] != q.sizes[3]) {
    return false;
  }
  for (const Tensor* t : {&q, &k, &v, &out}) {
    if (t->strides[3] != 1) {
      return false;
    }
  }
  kernels::FusedPlan& p = *plan;
  p.q = q.data(), p.k = k.data(), p.v = v.data(), p.out = out.data();
  p.dtype = q.dtype;
  p.batch = q.sizes[0], p.heads = q.sizes[1], p.kv_heads = k.sizes[1];
  p.q_len = q.sizes[2], p.k_len = k.sizes[2], p.head_dim = q.sizes[3];
  std::copy(q.strides.begin(), q.strides.begin() + 3, p.q_strides);
  std::copy(k.strides.begin(), k.strides.begin() + 3, p.k_strides);
  std::copy(v.strides.begin(), v.strides.begin() + 3, p.v_strides);
  std::copy(out.strides.begin(), out.strides.begin() + 3, p.out_strides);
  p.scale = static_cast<float>(scale);
  p.causal = r.causal;
  if (r.mask != nullptr) {
    const Tensor& m = *r.mask;
    int64_t lead = 4 - m.dim();
    for (int64_t d = lead; d < 4; ++d) {
      p.mask_strides[d] = m.sizes[d - lead] == 1 ? 0 : m.strides[d - lead];
    }
    p.mask = m.data();
    p.mask_dtype = m.dtype;
  }
  if (lse != nullptr) {
    p.lse = lse;
    std::copy(lse_strides, lse_strides + 3, p.lse_strides);
  }
  return true;
}

// The attention itself into `out` (and `lse` with its [b, h, l] strides, when not null),
// and `zeros` zeroed: the fused kernel where it takes the call, else the GEMM route.
AOTITorchError run(const Request& r, const Tensor& out, float* lse, const int64_t* lse_strides, const Zeros& zeros) {
#if AOTI_SHIM_WITH_CUDA
  const Tensor &q = *r.q, &k = *r.k, &v = *r.v;
  int32_t device = q.device_index();
  const Route route = forced_route();
  if (route != Route::Gemm) {
    kernels::FusedPlan plan;
    plan.hopper = route != Route::Mma;
    plan.tensor_maps = route != Route::Pipelined;
    plan.zeros = static_cast<uint64_t*>(zeros.data);
    plan.zero_count = static_cast<int32_t>(zeros.bytes / sizeof(uint64_t));
    double fused_scale = r.scale != nullptr ? *r.scale : 1.0 / std::sqrt(static_cast<double>(q.sizes[3]));
    if (fused_plan(r, out, lse, lse_strides, fused_scale, &plan) && kernels::fused_attention_takes(plan, device)) {
      cuda::DeviceScope fused_scope;
      AOTISHIM_TRY(fused_scope.enter(device));
      return cuda::check_status(kernels::fused_attention(plan, device, current_stream(device)), "fused attention kernel");
    }
  }
  int64_t batch = q.sizes[0], heads = q.sizes[1], lq = q.sizes[2], e = q.sizes[3];
  int64_t kv_heads = k.sizes[1], lk = k.sizes[2], ev = v.sizes[3];
  int64_t group = heads / kv_heads;
  std::unique_ptr<Tensor> q_copy, k_copy, v_copy;
  Matrices Q, K, V, O;
  AOTISHIM_TRY(readable(q, &q_copy, &Q));
  AOTISHIM_TRY(readable(k, &k_copy, &K));
  AOTISHIM_TRY(readable(v, &v_copy, &V));
  // The output is ours, made in a layout with a unit-stride last dim: written in place.
  if (!as_matrices(out, &O)) {
    return fail_format(AOTI_SHIM_E_FAILURE, "%s: output layout without a unit-stride last dim", kind_name(r.kind));
  }
  cuda::DeviceScope scope;
  AOTISHIM_TRY(scope.enter(device));
  void* stream = current_stream(device);
  if (zeros.data != nullptr) {
    AOTISHIM_TRY(cuda::memset_async(zeros.data, 0, zeros.bytes, stream));
  }
  int64_t rows = batch * heads * lq;
  std::unique_ptr<Tensor> scores, probs;
  AOTISHIM_TRY(new_cuda({rows, lk}, {lk, 1}, 6, device, &scores));
  if (q.dtype != 6) {
    AOTISHIM_TRY(new_cuda({rows, lk}, {lk, 1}, q.dtype, device, &probs));
  }
  const Tensor& p = probs ? *probs : *scores;  // float32: probabilities over the scores in place
  double softmax_scale = r.scale != nullptr ? *r.scale : 1.0 / std::sqrt(static_cast<double>(e));
  size_t qe = q.element_size();

  // Launches: one per (b, j) where j is a query head's place in its group; each batches the
  // key/value heads g (query head g * group + j). Folding b into the batch needs every
  // operand's batch stride to continue its head stride.
  auto folds = [&](const Matrices& m, int64_t head_step) { return batch == 1 || m.b_stride == kv_heads * head_step; };
  bool fold_b = folds(Q, group * Q.h_stride) && folds(K, K.h_stride) && folds(V, V.h_stride) &&
                folds(O, group * O.h_stride);
  int64_t outer = fold_b ? 1 : batch;
  int64_t count = fold_b ? batch * kv_heads : kv_heads;
  int64_t scores_step = group * lq * lk;  // elements between heads g and g + 1 of one j
  auto at = [](const Matrices& m, int64_t b, int64_t h) {
    return m.t->data() + (b * m.b_stride + h * m.h_stride) * static_cast<int64_t>(m.t->element_size());
  };
  for (int64_t b = 0; b < outer; ++b) {
    for (int64_t j = 0; j < group; ++j) {
      // scores[b, h] (lq x lk) = Q[b, h] (lq x e) @ K[b, g]^T; column-major: (lk x lq) = K^T' ... as
      // cuBLAS sees it: op(A) = K read transposed (lda = K's row stride), B = Q^T (ldb = Q's row stride).
      char* s_ptr = scores->data() + ((b * heads + j) * lq * lk) * 4;
      AOTISHIM_TRY(blas::gemm_strided_batched(
          device, stream, true, false, lk, lq, e, static_cast<float>(softmax_scale), at(K, b, 0), k.dtype, K.row_stride,
          K.h_stride, at(Q, b, j), q.dtype, Q.row_stride, group * Q.h_stride, 0.0f, s_ptr, 6, lk, scores_step, count));
    }
  }
  kernels::SoftmaxPlan plan;
  plan.scores = reinterpret_cast<const float*>(scores->data());
  plan.probs = p.data();
  plan.probs_dtype = p.dtype;
  plan.batch = batch, plan.heads = heads, plan.q_len = lq, plan.k_len = lk;
  plan.causal = r.causal;
  if (r.mask != nullptr) {
    const Tensor& m = *r.mask;
    int64_t lead = 4 - m.dim();
    for (int64_t d = lead; d < 4; ++d) {
      plan.mask_strides[d] = m.sizes[d - lead] == 1 ? 0 : m.strides[d - lead];
    }
    plan.mask = m.data();
    plan.mask_dtype = m.dtype;
  }
  if (lse != nullptr) {
    plan.lse = lse;
    std::copy(lse_strides, lse_strides + 3, plan.lse_strides);
  }
  AOTISHIM_TRY(cuda::check_status(kernels::attention_softmax(plan, stream), "attention softmax kernel"));
  for (int64_t b = 0; b < outer; ++b) {
    for (int64_t j = 0; j < group; ++j) {
      // out[b, h] (lq x ev) = P[b, h] (lq x lk) @ V[b, g] (lk x ev); cuBLAS: A = V^T (lda = V's
      // row stride), B = P^T (ldb = lk), C = out^T (ldc = the output's row stride).
      const char* p_ptr = p.data() + ((b * heads + j) * lq * lk) * static_cast<int64_t>(qe);
      AOTISHIM_TRY(blas::gemm_strided_batched(
          device, stream, false, false, ev, lq, lk, 1.0f, at(V, b, 0), v.dtype, V.row_stride, V.h_stride, p_ptr, p.dtype,
          lk, scores_step, 0.0f, const_cast<char*>(at(O, b, j)), out.dtype, O.row_stride, group * O.h_stride, count));
    }
  }
  // Scratch and copies are freed on this stream (stream-ordered) after the kernels above.
  return AOTI_SHIM_OK;
#else
  (void)r, (void)out, (void)lse, (void)lse_strides, (void)zeros;
  return fail_format(AOTI_SHIM_E_CUDA_UNAVAILABLE, "attention: the shims were built without CUDA");
#endif
}

struct Outputs {
  std::unique_ptr<Tensor> out, lse, seed, offset, debug;
};

// A contiguous tensor over `nbytes` of `block` from byte `at`. Its own storage (offset 0,
// its own size, as torch's separate tensors have) keeps the block alive.
std::unique_ptr<Tensor> part_of(const std::shared_ptr<Storage>& block, int64_t at, int64_t nbytes,
                                Dims sizes, int32_t dtype) {
  auto storage = std::make_shared<Storage>();
  storage->data = static_cast<char*>(block->data) + at;
  storage->nbytes = nbytes;
  storage->device_type = block->device_type;
  storage->device_index = block->device_index;
  storage->parent = block;
  auto part = std::make_unique<Tensor>();
  part->storage = std::move(storage);
  part->strides = contiguous_strides(sizes);
  part->sizes = std::move(sizes);
  part->dtype = dtype;
  return part;
}

// The philox seed (`seed_sizes` of 8-byte `dtype`) and offset ([]): torch 2.11's zeros
// without dropout. One allocation holds both (one device allocation, not two) and one
// zeroing covers both: on the GPU it is left to *zeros (run()'s kernel writes them). Not a
// never-freed zero block shared by every call: the caller owns these tensors and may write
// them (a blob may reuse a freed output's buffer for a later kernel's output).
AOTITorchError rng_outputs(int32_t dtype, Dims seed_sizes, int32_t device_type, int32_t device,
                           Outputs* o, Zeros* zeros) {
  int64_t seed_bytes = 8 * std::accumulate(seed_sizes.begin(), seed_sizes.end(), int64_t{1}, std::multiplies<>());
  std::shared_ptr<Storage> block;
  AOTISHIM_TRY(allocate_storage(seed_bytes + 8, device_type, device, false, &block));
  o->seed = part_of(block, 0, seed_bytes, std::move(seed_sizes), dtype);
  o->offset = part_of(block, seed_bytes, 8, {}, dtype);
  if (device_type == kCUDA) {
    *zeros = Zeros{block->data, static_cast<size_t>(seed_bytes + 8)};
  } else {
    std::memset(block->data, 0, static_cast<size_t>(seed_bytes + 8));
  }
  return AOTI_SHIM_OK;
}

// Zeroes the block where run() will not (a call with nothing to compute).
AOTITorchError zero_now(const Zeros& zeros, int32_t device) {
  if (zeros.data == nullptr) {
    return AOTI_SHIM_OK;
  }
  cuda::DeviceScope scope;
  AOTISHIM_TRY(scope.enter(device));
  return cuda::memset_async(zeros.data, 0, zeros.bytes, current_stream(device));
}

// Makes the outputs torch 2.11's kernel of this kind returns (sizes, strides, dtypes,
// devices), those the caller takes, and runs the attention into them.
AOTITorchError attention(const Request& r, Outputs* o) {
  AOTISHIM_TRY(check_arguments(r));
  const char* where = kind_name(r.kind);
  AOTISHIM_TRY(blas::available());
  const Tensor &q = *r.q, &k = *r.k, &v = *r.v;
  int32_t device = q.device_index();
  for (const Tensor* t : {&q, &k, &v, r.mask}) {
    if (t != nullptr && (t->device_type() != kCUDA || t->device_index() != device)) {
      return fail_format(AOTI_SHIM_E_DEVICE_MISMATCH, "%s: every operand must be on one CUDA device", where);
    }
  }
  int64_t batch = q.sizes[0], heads = q.sizes[1], lq = q.sizes[2], lk = k.sizes[2], ev = v.sizes[3];
  Dims out_sizes = {batch, heads, lq, ev};
  Dims lse_strides = {heads * lq, lq, 1};
  Zeros zeros;
  switch (r.kind) {
    case Kind::Efficient: {
      // [B, L, H, Ev] transposed to [B, H, L, Ev]; logsumexp [B, H, L rounded up to 32] (or 0);
      // seed and offset int64 scalars on the CPU.
      AOTISHIM_TRY(new_cuda(out_sizes, {lq * heads * ev, ev, heads * ev, 1}, q.dtype, device, &o->out));
      int64_t padded = r.want_lse ? (lq + 31) / 32 * 32 : 0;
      if (r.takes.lse) {
        AOTISHIM_TRY(new_cuda({batch, heads, padded}, contiguous_strides({batch, heads, padded}), 6, device, &o->lse));
      }
      if (r.takes.rng) {
        AOTISHIM_TRY(rng_outputs(4, {}, kCPU, -1, o, &zeros));
      }
      lse_strides = {heads * padded, padded, 1};
      break;
    }
    case Kind::Cudnn: {
      // The logsumexp [B, H, L, 1] only when asked for: torch's kernel returns None otherwise.
      AOTISHIM_TRY(new_cuda(out_sizes, matching_layout(q, out_sizes), q.dtype, device, &o->out));
      if (r.want_lse && r.takes.lse) {
        AOTISHIM_TRY(new_cuda({batch, heads, lq, 1}, {heads * lq, lq, 1, 1}, 6, device, &o->lse));
      }
      if (r.takes.rng) {
        AOTISHIM_TRY(rng_outputs(4, {}, kCUDA, device, o, &zeros));
      }
      break;
    }
    case Kind::Flash: {
      AOTISHIM_TRY(new_cuda(out_sizes, matching_layout(q, out_sizes), q.dtype, device, &o->out));
      if (r.takes.lse) {
        AOTISHIM_TRY(new_cuda({batch, heads, lq}, contiguous_strides({batch, heads, lq}), 6, device, &o->lse));
      }
      if (r.takes.rng) {
        AOTISHIM_TRY(rng_outputs(29, {2}, kCUDA, device, o, &zeros));  // uint64 rng state [2] and offset []
      }
      if (r.takes.debug) {
        AOTISHIM_TRY(new_cuda({0}, {1}, q.dtype, device, &o->debug));
      }
      break;
    }
  }
  if (batch * heads * lq == 0 || ev == 0) {
    return zero_now(zeros, device);
  }
  if (lk == 0) {
    return fail_format(AOTI_SHIM_E_UNSUPPORTED, "%s: an empty key sequence", where);
  }
  bool lse_wanted = o->lse != nullptr && (r.kind == Kind::Flash || r.want_lse);
  return run(r, *o->out, lse_wanted ? reinterpret_cast<float*>(o->lse->data()) : nullptr, lse_strides.data(), zeros);
}

// An entry point's call: its handles unwrapped into a Request of `kind` with its options,
// computed into *o. *r keeps the tensors, for the outputs that report their sizes.
AOTITorchError attend(
    Kind kind, AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    double dropout_p, int32_t is_causal, bool want_lse, const double* scale, Takes takes, Request* r, Outputs* o) {
  Tensor *q = nullptr, *k = nullptr, *v = nullptr, *m = nullptr;
  AOTISHIM_TRY(unwrap(query, &q, "query"));
  AOTISHIM_TRY(unwrap(key, &k, "key"));
  AOTISHIM_TRY(unwrap(value, &v, "value"));
  AOTISHIM_TRY(unwrap_optional(attn_bias, &m, "attn_bias"));
  r->kind = kind;
  r->q = q, r->k = k, r->v = v, r->mask = m;
  r->dropout = dropout_p, r->causal = is_causal != 0, r->want_lse = want_lse, r->scale = scale;
  r->takes = takes;
  return attention(*r, o);
}

// The nine outputs that torch's flash and cuDNN attention share: output, logsumexp,
// cum_seq_q, cum_seq_k, max_q, max_k, philox_seed, philox_offset, debug_attn_mask. As
// torch 2.11's kernels: the logsumexp only when asked for (flash always asks; cuDNN's meta
// function describes one regardless), no cumulative lengths (None), and the debug mask
// flash's empty tensor or cuDNN's None (attention() makes them so).
void deliver_flash_layout(const Request& r, Outputs* o, AtenTensorHandle* ret0, AtenTensorHandle* ret1,
                          AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5,
                          AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8) {
  deliver(ret0, std::move(o->out));
  deliver(ret1, std::move(o->lse));
  deliver(ret2, nullptr);
  deliver(ret3, nullptr);
  deliver(ret4, r.q->sizes[2]);
  deliver(ret5, r.k->sizes[2]);
  deliver(ret6, std::move(o->seed));
  deliver(ret7, std::move(o->offset));
  deliver(ret8, std::move(o->debug));
}

}  // namespace
}  // namespace aotishim

using namespace aotishim;

extern "C" {

AOTITorchError aoti_torch_cuda__scaled_dot_product_efficient_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  return guarded("aoti_torch_cuda__scaled_dot_product_efficient_attention", [&]() -> AOTITorchError {
    Request r;
    Outputs o;
    AOTISHIM_TRY(attend(
        Kind::Efficient, query, key, value, attn_bias, dropout_p, is_causal, compute_log_sumexp != 0, scale,
        Takes{ret1 != nullptr, ret2 != nullptr || ret3 != nullptr, false}, &r, &o));
    deliver(ret0, std::move(o.out));
    deliver(ret1, std::move(o.lse));
    deliver(ret2, std::move(o.seed));
    deliver(ret3, std::move(o.offset));
    return AOTI_SHIM_OK;
  });
}

AOTITorchError aoti_torch_cuda__scaled_dot_product_cudnn_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
    AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4,
    int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8) {
  return guarded("aoti_torch_cuda__scaled_dot_product_cudnn_attention", [&]() -> AOTITorchError {
    if (return_debug_mask != 0) {
      return fail_format(AOTI_SHIM_E_UNSUPPORTED, "_scaled_dot_product_cudnn_attention: return_debug_mask is unsupported");
    }
    Request r;
    Outputs o;
    AOTISHIM_TRY(attend(
        Kind::Cudnn, query, key, value, attn_bias, dropout_p, is_causal, compute_log_sumexp != 0, scale,
        Takes{ret1 != nullptr, ret6 != nullptr || ret7 != nullptr, false}, &r, &o));
    deliver_flash_layout(r, &o, ret0, ret1, ret2, ret3, ret4, ret5, ret6, ret7, ret8);
    return AOTI_SHIM_OK;
  });
}

AOTITorchError aoti_torch_cuda__scaled_dot_product_flash_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    int32_t return_debug_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7,
    AtenTensorHandle* ret8) {
  return guarded("aoti_torch_cuda__scaled_dot_product_flash_attention", [&]() -> AOTITorchError {
    if (return_debug_mask != 0) {
      return fail_format(AOTI_SHIM_E_UNSUPPORTED, "_scaled_dot_product_flash_attention: return_debug_mask is unsupported");
    }
    Request r;
    Outputs o;
    AOTISHIM_TRY(attend(Kind::Flash, query, key, value, nullptr, dropout_p, is_causal, true, scale,
                        Takes{ret1 != nullptr, ret6 != nullptr || ret7 != nullptr, ret8 != nullptr}, &r, &o));
    deliver_flash_layout(r, &o, ret0, ret1, ret2, ret3, ret4, ret5, ret6, ret7, ret8);
    return AOTI_SHIM_OK;
  });
}

}  // extern "C"
