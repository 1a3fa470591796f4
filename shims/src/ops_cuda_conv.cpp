// CUDA convolution through cuDNN: aoti_torch_cuda_convolution, the fallback a compile
// without autotuning leaves for every convolution (ATen's). 1 to 3 spatial dims, stride,
// padding, dilation, groups (depthwise included), bias, transposed with output padding;
// NCHW or channels-last; float32, float64, float16, bfloat16.
//
// cuDNN is loaded at the first call with dlopen, as cuBLAS is (ops_cuda_blas.cpp):
// libcudnn.so.9 from the nvidia-cudnn-cu13 wheel that torch's CUDA wheels install (found
// through this library's RUNPATH, or the copy torch already loaded); AOTI_SHIM_CUDNN names
// another file. Building the shims needs no cuDNN: the few declarations used are below,
// with cuDNN 9's values.
//
// Each shape's first call builds a cuDNN graph (backend API) of one forward (or, for a
// transposed convolution, backward-data) operation and keeps its execution plan; later
// calls only bind pointers and execute it. cuDNN 9's legacy entry points
// (cudnnConvolutionForward) cost 80 to 130 us of host time per call on an H200, with
// descriptors and algorithm kept, against a few for an executed plan: 85 % of a
// mobilenet_v3_small inference went there. The legacy API stays the path where the graph
// has no engine for a shape (float64: no graph engine takes it), and for every call with
// AOTI_SHIM_CUDNN_LEGACY=1 set, the comparison point.
//
// Precision as torch's cuDNN convolutions in a float32 compile: no TF32 (the smoke's
// compile and run switch torch's cudnn.allow_tf32 off, and a blob's float32 should compute
// in float32) unless TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, torch's one TF32 override, which
// the shims read for their GEMMs and their convolutions alike; half types sum in float32.
//
// The output's layout is the one torch's FakeTensor reports for a CUDA convolution (and
// Inductor indexes it so): channels-last (2-D) or channels-last-3d (3-D) when the input or
// the weight has channels-last strides and the dtype is not float64; contiguous otherwise,
// 1-D convolutions included.
#include "conv_direct.h"
#include "cuda_api.h"
#include "kernels_nn.h"
#include "ops.h"
#include "profile.h"
#include "tensor.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#if AOTI_SHIM_WITH_CUDA
#include "nvidia_library.h"

#include <mutex>
#include <unordered_map>
#endif

namespace aotishim {
namespace {

constexpr const char* kWhere = "cuda_convolution";
constexpr int kMaxSpatial = 3;

#if AOTI_SHIM_WITH_CUDA

// cuDNN 9 declarations (cudnn_graph.h, cudnn_ops.h, cudnn_cnn.h), by value.
using Handle = void*;
using Desc = void*;
using Status = int;
constexpr int kDataFloat = 0;         // CUDNN_DATA_FLOAT
constexpr int kDataDouble = 1;        // CUDNN_DATA_DOUBLE
constexpr int kDataHalf = 2;          // CUDNN_DATA_HALF
constexpr int kDataBfloat16 = 9;      // CUDNN_DATA_BFLOAT16
constexpr int kFormatNchw = 0;        // CUDNN_TENSOR_NCHW
constexpr int kFormatNhwc = 1;        // CUDNN_TENSOR_NHWC
constexpr int kCrossCorrelation = 1;  // CUDNN_CROSS_CORRELATION: torch's convolution
constexpr int kTensorOpMath = 1;      // CUDNN_TENSOR_OP_MATH
constexpr int kTensorOpAllowConversion = 2;  // CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
constexpr int kFmaMath = 3;           // CUDNN_FMA_MATH: no TF32
constexpr int kMaxAlgos = 16;         // above CUDNN_CONVOLUTION_{FWD,BWD_DATA}_ALGO_COUNT
// The backend (graph) API, cudnn_graph.h: descriptor types, attribute names and types.
namespace graph {
constexpr int kConvolutionDesc = 1;      // CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR
constexpr int kEngineDesc = 2;           // CUDNN_BACKEND_ENGINE_DESCRIPTOR
constexpr int kEngineCfgDesc = 3;        // CUDNN_BACKEND_ENGINECFG_DESCRIPTOR
constexpr int kEngineHeurDesc = 4;       // CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR
constexpr int kPlanDesc = 5;             // CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR
constexpr int kForwardDesc = 10;         // CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR
constexpr int kBackwardDataDesc = 12;    // CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
constexpr int kOpGraphDesc = 15;         // CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR
constexpr int kVariantPackDesc = 16;     // CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR
constexpr int kTensorDesc = 17;          // CUDNN_BACKEND_TENSOR_DESCRIPTOR
constexpr int kTypeHandle = 0;           // CUDNN_TYPE_HANDLE
constexpr int kTypeDataType = 1;         // CUDNN_TYPE_DATA_TYPE
constexpr int kTypeInt64 = 3;            // CUDNN_TYPE_INT64
constexpr int kTypeFloat = 4;            // CUDNN_TYPE_FLOAT
constexpr int kTypeVoidPtr = 6;          // CUDNN_TYPE_VOID_PTR
constexpr int kTypeConvMode = 7;         // CUDNN_TYPE_CONVOLUTION_MODE
constexpr int kTypeHeurMode = 8;         // CUDNN_TYPE_HEUR_MODE
constexpr int kTypeNumericalNote = 11;   // CUDNN_TYPE_NUMERICAL_NOTE
constexpr int kTypeDescriptor = 15;      // CUDNN_TYPE_BACKEND_DESCRIPTOR
constexpr int kTypeBehaviorNote = 19;    // CUDNN_TYPE_BEHAVIOR_NOTE
constexpr int kConvCompType = 100;       // CUDNN_ATTR_CONVOLUTION_COMP_TYPE
constexpr int kConvMode = 101;           // CUDNN_ATTR_CONVOLUTION_CONV_MODE
constexpr int kConvDilations = 102;      // CUDNN_ATTR_CONVOLUTION_DILATIONS
constexpr int kConvStrides = 103;        // CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES
constexpr int kConvPostPaddings = 104;   // CUDNN_ATTR_CONVOLUTION_POST_PADDINGS
constexpr int kConvPrePaddings = 105;    // CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS
constexpr int kConvSpatialDims = 106;    // CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS
constexpr int kHeurMode = 200;           // CUDNN_ATTR_ENGINEHEUR_MODE
constexpr int kHeurGraph = 201;          // CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH
constexpr int kHeurResults = 202;        // CUDNN_ATTR_ENGINEHEUR_RESULTS
constexpr int kCfgEngine = 300;          // CUDNN_ATTR_ENGINECFG_ENGINE
constexpr int kPlanHandle = 400;         // CUDNN_ATTR_EXECUTION_PLAN_HANDLE
constexpr int kPlanConfig = 401;         // CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG
constexpr int kPlanWorkspace = 402;      // CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE
constexpr int kFwdAlpha = 700;           // CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA
constexpr int kFwdBeta = 701;            // ..._FORWARD_BETA
constexpr int kFwdConv = 702;            // ..._FORWARD_CONV_DESC
constexpr int kFwdW = 703;               // ..._FORWARD_W
constexpr int kFwdX = 704;               // ..._FORWARD_X
constexpr int kFwdY = 705;               // ..._FORWARD_Y
constexpr int kBwdAlpha = 706;           // CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA
constexpr int kBwdBeta = 707;            // ..._BWD_DATA_BETA
constexpr int kBwdConv = 708;            // ..._BWD_DATA_CONV_DESC
constexpr int kBwdW = 709;               // ..._BWD_DATA_W
constexpr int kBwdDx = 710;              // ..._BWD_DATA_DX
constexpr int kBwdDy = 711;              // ..._BWD_DATA_DY
constexpr int kGraphHandle = 800;        // CUDNN_ATTR_OPERATIONGRAPH_HANDLE
constexpr int kGraphOps = 801;           // CUDNN_ATTR_OPERATIONGRAPH_OPS
constexpr int kTensorAlignment = 900;    // CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT
constexpr int kTensorDataType = 901;     // CUDNN_ATTR_TENSOR_DATA_TYPE
constexpr int kTensorDims = 902;         // CUDNN_ATTR_TENSOR_DIMENSIONS
constexpr int kTensorStrides = 903;      // CUDNN_ATTR_TENSOR_STRIDES
constexpr int kTensorId = 906;           // CUDNN_ATTR_TENSOR_UNIQUE_ID
constexpr int kPackIds = 1000;           // CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS
constexpr int kPackPointers = 1001;      // CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS
constexpr int kPackWorkspace = 1003;     // CUDNN_ATTR_VARIANT_PACK_WORKSPACE
constexpr int kEngineNumericalNote = 1303;  // CUDNN_ATTR_ENGINE_NUMERICAL_NOTE
constexpr int kEngineBehaviorNote = 1305;   // CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE
constexpr int kHeurInstant = 0;          // CUDNN_HEUR_MODE_INSTANT
constexpr int kHeurFallback = 2;         // CUDNN_HEUR_MODE_FALLBACK
constexpr int kNoteTensorCore = 0;       // CUDNN_NUMERICAL_NOTE_TENSOR_CORE (TF32 for float32 data)
constexpr int kNoteDownConvert = 1;      // CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS
constexpr int kNoteReducedReduction = 2; // CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION
constexpr int kNoteNondeterministic = 4; // CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC
constexpr int kNoteCount = 10;           // CUDNN_NUMERICAL_NOTE_TYPE_COUNT
constexpr int kBehaviorRuntimeCompiled = 0;  // CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION
constexpr int kBehaviorCount = 5;        // CUDNN_BEHAVIOR_NOTE_TYPE_COUNT
constexpr int64_t kIdX = 'x', kIdW = 'w', kIdY = 'y';
}  // namespace graph
// A workspace past this is passed over for an algorithm that needs less.
constexpr size_t kMaxWorkspace = size_t(1) << 30;

// cudnnConvolutionFwdAlgoPerf_t and cudnnConvolutionBwdDataAlgoPerf_t share this layout.
struct AlgoPerf {
  int algo;
  Status status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

struct Cudnn {
  size_t (*get_version)() = nullptr;
  Status (*create)(Handle*) = nullptr;
  Status (*set_stream)(Handle, void*) = nullptr;
  const char* (*error_string)(Status) = nullptr;
  Status (*create_tensor)(Desc*) = nullptr;
  Status (*destroy_tensor)(Desc) = nullptr;
  Status (*set_tensor)(Desc, int, int, const int*, const int*) = nullptr;
  Status (*create_filter)(Desc*) = nullptr;
  Status (*destroy_filter)(Desc) = nullptr;
  Status (*set_filter)(Desc, int, int, int, const int*) = nullptr;
  Status (*create_conv)(Desc*) = nullptr;
  Status (*destroy_conv)(Desc) = nullptr;
  Status (*set_conv)(Desc, int, const int*, const int*, const int*, int, int) = nullptr;
  Status (*set_groups)(Desc, int) = nullptr;
  Status (*set_math)(Desc, int) = nullptr;
  Status (*forward_algos)(Handle, Desc, Desc, Desc, Desc, int, int*, AlgoPerf*) = nullptr;
  Status (*forward_workspace)(Handle, Desc, Desc, Desc, Desc, int, size_t*) = nullptr;
  Status (*forward)(Handle, const void*, Desc, const void*, Desc, const void*, Desc, int, void*, size_t, const void*,
                    Desc, void*) = nullptr;
  Status (*backward_algos)(Handle, Desc, Desc, Desc, Desc, int, int*, AlgoPerf*) = nullptr;
  Status (*backward_workspace)(Handle, Desc, Desc, Desc, Desc, int, size_t*) = nullptr;
  Status (*backward_data)(Handle, const void*, Desc, const void*, Desc, const void*, Desc, int, void*, size_t,
                          const void*, Desc, void*) = nullptr;
  Status (*backend_create)(int, Desc*) = nullptr;
  Status (*backend_destroy)(Desc) = nullptr;
  Status (*backend_finalize)(Desc) = nullptr;
  Status (*backend_set)(Desc, int, int, int64_t, const void*) = nullptr;
  Status (*backend_get)(Desc, int, int, int64_t, int64_t*, void*) = nullptr;
  Status (*backend_execute)(Handle, Desc, Desc) = nullptr;
  std::string error;  // why loading failed; empty when loaded
};

// Loaded once per process; the library stays loaded.
const Cudnn& cudnn() {
  static const Cudnn loaded = [] {
    Cudnn api;
    std::string why;
    const char* name = nullptr;
    void* lib = open_library("AOTI_SHIM_CUDNN", {"libcudnn.so.9"}, &why, &name);
    if (lib == nullptr) {
      api.error = "cuDNN could not be loaded (" + why +
                  "): install it with `pip install nvidia-cudnn-cu13` (torch's CUDA wheels bring it), set "
                  "AOTI_SHIM_CUDNN to libcudnn.so.9, or compile with autotuning on (Triton convolutions, no ATen "
                  "convolution fallback)";
      return api;
    }
    auto sym = [&](const char* symbol) {
      void* p = dlsym(lib, symbol);
      if (p == nullptr && api.error.empty()) {
        api.error = std::string("cuDNN (") + name + ") lacks " + symbol + ": the shims need cuDNN 9";
      }
      return p;
    };
#define AOTISHIM_CUDNN_SYM(field, symbol) api.field = reinterpret_cast<decltype(api.field)>(sym(symbol))
    AOTISHIM_CUDNN_SYM(get_version, "cudnnGetVersion");
    AOTISHIM_CUDNN_SYM(create, "cudnnCreate");
    AOTISHIM_CUDNN_SYM(set_stream, "cudnnSetStream");
    AOTISHIM_CUDNN_SYM(error_string, "cudnnGetErrorString");
    AOTISHIM_CUDNN_SYM(create_tensor, "cudnnCreateTensorDescriptor");
    AOTISHIM_CUDNN_SYM(destroy_tensor, "cudnnDestroyTensorDescriptor");
    AOTISHIM_CUDNN_SYM(set_tensor, "cudnnSetTensorNdDescriptor");
    AOTISHIM_CUDNN_SYM(create_filter, "cudnnCreateFilterDescriptor");
    AOTISHIM_CUDNN_SYM(destroy_filter, "cudnnDestroyFilterDescriptor");
    AOTISHIM_CUDNN_SYM(set_filter, "cudnnSetFilterNdDescriptor");
    AOTISHIM_CUDNN_SYM(create_conv, "cudnnCreateConvolutionDescriptor");
    AOTISHIM_CUDNN_SYM(destroy_conv, "cudnnDestroyConvolutionDescriptor");
    AOTISHIM_CUDNN_SYM(set_conv, "cudnnSetConvolutionNdDescriptor");
    AOTISHIM_CUDNN_SYM(set_groups, "cudnnSetConvolutionGroupCount");
    AOTISHIM_CUDNN_SYM(set_math, "cudnnSetConvolutionMathType");
    AOTISHIM_CUDNN_SYM(forward_algos, "cudnnGetConvolutionForwardAlgorithm_v7");
    AOTISHIM_CUDNN_SYM(forward_workspace, "cudnnGetConvolutionForwardWorkspaceSize");
    AOTISHIM_CUDNN_SYM(forward, "cudnnConvolutionForward");
    AOTISHIM_CUDNN_SYM(backward_algos, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    AOTISHIM_CUDNN_SYM(backward_workspace, "cudnnGetConvolutionBackwardDataWorkspaceSize");
    AOTISHIM_CUDNN_SYM(backward_data, "cudnnConvolutionBackwardData");
    AOTISHIM_CUDNN_SYM(backend_create, "cudnnBackendCreateDescriptor");
    AOTISHIM_CUDNN_SYM(backend_destroy, "cudnnBackendDestroyDescriptor");
    AOTISHIM_CUDNN_SYM(backend_finalize, "cudnnBackendFinalize");
    AOTISHIM_CUDNN_SYM(backend_set, "cudnnBackendSetAttribute");
    AOTISHIM_CUDNN_SYM(backend_get, "cudnnBackendGetAttribute");
    AOTISHIM_CUDNN_SYM(backend_execute, "cudnnBackendExecute");
#undef AOTISHIM_CUDNN_SYM
    if (api.error.empty()) {
      size_t version = api.get_version();
      if (version < 90000 || version >= 100000) {
        api.error = std::string("cuDNN (") + name + ") is version " + std::to_string(version) +
                    ": the shims need cuDNN 9 (pip install nvidia-cudnn-cu13)";
      }
    }
    return api;
  }();
  return loaded;
}

AOTITorchError check(Status status, const char* call) {
  if (status == 0) {
    return AOTI_SHIM_OK;
  }
  const char* text = cudnn().error_string ? cudnn().error_string(status) : "unknown status";
  return fail_format(AOTI_SHIM_E_CUDA_ERROR, "%s: %s failed (%d: %s)", kWhere, call, status, text);
}

// The calling thread's handle for the device, on `stream` (DeviceHandles); convolution()
// has checked that cuDNN loaded.
AOTITorchError handle_for(int32_t device, void* stream, Handle* out) {
  thread_local DeviceHandles<Handle> handles;
  return handles.get(
      device, stream, [](Handle* h) { return check(cudnn().create(h), "cudnnCreate"); },
      [](Handle h, void* s) { return check(cudnn().set_stream(h, s), "cudnnSetStream"); }, out);
}

// The descriptors of one call, destroyed with it.
struct Descriptors {
  Desc x = nullptr, y = nullptr, w = nullptr, conv = nullptr;
  ~Descriptors() {
    const Cudnn& api = cudnn();
    if (x) (void)api.destroy_tensor(x);
    if (y) (void)api.destroy_tensor(y);
    if (w) (void)api.destroy_filter(w);
    if (conv) (void)api.destroy_conv(conv);
  }
};

struct Choice {
  int algo = 0;
  int math = 0;
  size_t workspace = 0;
};

// One convolution's descriptors and chosen algorithm, kept per thread by the call's shapes,
// layouts and dtype: a model calls the same convolutions on every inference, and cuDNN 9's
// legacy entry points cost far more with descriptors made afresh for each call.
struct Prepared {
  Descriptors desc;
  Choice choice;
  // The graph path: the finalized plan (null: the legacy path) and the descriptors it was
  // built from, kept with it.
  Desc plan = nullptr;
  int64_t plan_workspace = 0;
  std::vector<Desc> graph_parts;
};

std::unordered_map<std::string, Prepared*>& prepared() {
  // Never destroyed (the descriptors may outlive a thread's exit handlers safely unfreed).
  thread_local auto* map = new std::unordered_map<std::string, Prepared*>();
  return *map;
}

#endif  // AOTI_SHIM_WITH_CUDA

AOTITorchError read_param(
    const int64_t* values, int64_t length, int spatial, const char* name, int64_t minimum, int64_t* out) {
  if (length != 1 && length != spatial) {
    return fail_format(
        AOTI_SHIM_E_INVALID_ARGUMENT, "%s: %s has %lld values for %d spatial dims", kWhere, name,
        static_cast<long long>(length), spatial);
  }
  if (values == nullptr) {
    return fail_format(AOTI_SHIM_E_NULL_ARGUMENT, "%s: %s is null", kWhere, name);
  }
  for (int d = 0; d < spatial; ++d) {
    int64_t v = values[length == 1 ? 0 : d];
    if (v < minimum || v > std::numeric_limits<int32_t>::max()) {
      return fail_format(
          AOTI_SHIM_E_INVALID_ARGUMENT, "%s: %s %lld is out of range (at least %lld)", kWhere, name,
          static_cast<long long>(v), static_cast<long long>(minimum));
    }
    out[d] = v;
  }
  return AOTI_SHIM_OK;
}

// Whether t's memory is already packed in the layout `packed` describes (dims of size 1 may
// have any stride), so cuDNN can read it in place.
[[maybe_unused]] bool packed_as(const Tensor& t, const Dims& packed) {
  for (size_t d = 0; d < t.sizes.size(); ++d) {
    if (t.sizes[d] != 1 && t.strides[d] != packed[d]) {
      return false;
    }
  }
  return true;
}

struct Params {
  int spatial = 0;
  int64_t stride[kMaxSpatial] = {}, padding[kMaxSpatial] = {}, dilation[kMaxSpatial] = {};
  int64_t output_padding[kMaxSpatial] = {};
  bool transposed = false;
  int64_t groups = 1;
};

// Checks everything that needs no device and works out the output's sizes.
AOTITorchError check_arguments(
    const Tensor& x, const Tensor& w, const Tensor* bias, const Params& p, Dims* out_sizes) {
  int64_t ndim = x.dim();
  if (ndim < 3 || ndim > 5) {
    return fail_format(
        AOTI_SHIM_E_RANK_MISMATCH, "%s: input has %lld dims: it must be [N, C, 1 to 3 spatial dims] (unbatched "
        "inputs are unsupported)", kWhere, static_cast<long long>(ndim));
  }
  if (w.dim() != ndim) {
    return fail_format(
        AOTI_SHIM_E_RANK_MISMATCH, "%s: weight has %lld dims, input has %lld", kWhere, static_cast<long long>(w.dim()),
        static_cast<long long>(ndim));
  }
  if (x.dtype != 6 && x.dtype != 7 && x.dtype != 5 && x.dtype != 15) {
    return fail_format(
        AOTI_SHIM_E_DTYPE_MISMATCH, "%s: %s is not supported (float32, float64, float16, bfloat16)", kWhere,
        dtype_name(x.dtype));
  }
  for (const Tensor* t : {&w, bias}) {
    if (t != nullptr && t->dtype != x.dtype) {
      return fail_format(
          AOTI_SHIM_E_DTYPE_MISMATCH, "%s: input is %s, weight or bias %s", kWhere, dtype_name(x.dtype),
          dtype_name(t->dtype));
    }
  }
  if (p.groups < 1 || p.groups > std::numeric_limits<int32_t>::max()) {
    return fail_format(AOTI_SHIM_E_INVALID_ARGUMENT, "%s: groups %lld is out of range", kWhere, static_cast<long long>(p.groups));
  }
  int64_t in_channels = x.sizes[1];
  int64_t out_channels = 0;
  if (!p.transposed) {
    out_channels = w.sizes[0];
    if (w.sizes[1] * p.groups != in_channels || out_channels % p.groups != 0) {
      return fail_format(
          AOTI_SHIM_E_SHAPE_MISMATCH, "%s: weight [%lld, %lld, ...] with groups %lld does not fit %lld input channels",
          kWhere, static_cast<long long>(w.sizes[0]), static_cast<long long>(w.sizes[1]),
          static_cast<long long>(p.groups), static_cast<long long>(in_channels));
    }
  } else {
    out_channels = w.sizes[1] * p.groups;
    if (w.sizes[0] != in_channels || in_channels % p.groups != 0) {
      return fail_format(
          AOTI_SHIM_E_SHAPE_MISMATCH,
          "%s: transposed weight [%lld, %lld, ...] with groups %lld does not fit %lld input channels", kWhere,
          static_cast<long long>(w.sizes[0]), static_cast<long long>(w.sizes[1]), static_cast<long long>(p.groups),
          static_cast<long long>(in_channels));
    }
  }
  if (bias != nullptr && (bias->dim() != 1 || bias->sizes[0] != out_channels)) {
    return fail_format(
        AOTI_SHIM_E_SHAPE_MISMATCH, "%s: bias must be 1-dim of size %lld", kWhere, static_cast<long long>(out_channels));
  }
  out_sizes->assign({x.sizes[0], out_channels});
  for (int d = 0; d < p.spatial; ++d) {
    int64_t in = x.sizes[2 + d], k = w.sizes[2 + d];
    int64_t extent = p.dilation[d] * (k - 1) + 1;
    int64_t size = 0;
    if (!p.transposed) {
      size = (in + 2 * p.padding[d] - extent) / p.stride[d] + 1;
      if (in + 2 * p.padding[d] < extent) {
        size = 0;
      }
    } else {
      if (p.output_padding[d] >= std::max(p.stride[d], p.dilation[d])) {
        return fail_format(
            AOTI_SHIM_E_INVALID_ARGUMENT, "%s: output_padding %lld must be smaller than stride or dilation", kWhere,
            static_cast<long long>(p.output_padding[d]));
      }
      size = (in - 1) * p.stride[d] - 2 * p.padding[d] + extent + p.output_padding[d];
    }
    if (size <= 0) {
      return fail_format(
          AOTI_SHIM_E_SHAPE_MISMATCH, "%s: spatial dim %d of the output would be %lld (input %lld, kernel %lld)",
          kWhere, d, static_cast<long long>(size), static_cast<long long>(in), static_cast<long long>(k));
    }
    out_sizes->push_back(size);
  }
  return AOTI_SHIM_OK;
}

#if AOTI_SHIM_WITH_CUDA

int cudnn_type(int32_t dtype) {
  switch (dtype) {
    case 7:
      return kDataDouble;
    case 5:
      return kDataHalf;
    case 15:
      return kDataBfloat16;
    default:
      return kDataFloat;
  }
}

// Sizes and strides as cuDNN's ints.
AOTITorchError as_ints(const Dims& values, std::vector<int>* out) {
  out->clear();
  for (int64_t v : values) {
    if (v > std::numeric_limits<int32_t>::max()) {
      return fail_format(AOTI_SHIM_E_UNSUPPORTED, "%s: a size or stride of %lld does not fit cuDNN's int", kWhere,
                         static_cast<long long>(v));
    }
    out->push_back(static_cast<int>(v));
  }
  return AOTI_SHIM_OK;
}

// The 4-dim view cuDNN gets of a 1-D convolution's operand: a unit dim before the length.
Dims widened(const Dims& v, int64_t unit) {
  if (v.size() != 3) {
    return v;
  }
  return Dims{v[0], v[1], unit, v[2]};
}

AOTITorchError packed_operand(const Tensor& t, bool channels_last, std::unique_ptr<Tensor>* copy, const Tensor** use) {
  Dims packed = channels_last ? channels_last_strides(t.sizes) : contiguous_strides(t.sizes);
  *use = &t;
  if (!packed_as(t, packed)) {
    AOTISHIM_PROFILE_STEP("conv: operand copied to the packed layout");
    AOTISHIM_TRY(new_tensor(t.sizes, packed, t.dtype, kCUDA, t.device_index(), false, copy));
    AOTISHIM_TRY(copy_tensor(**copy, t, true));
    *use = copy->get();
  }
  return AOTI_SHIM_OK;
}

// AOTI_SHIM_CUDNN_LEGACY=1 (read once): every convolution through the legacy API.
bool legacy_only() {
  static const bool set = [] {
    const char* v = std::getenv("AOTI_SHIM_CUDNN_LEGACY");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return set;
}

// Backend descriptors made for one purpose, destroyed with it unless kept.
class Parts {
 public:
  Parts() = default;
  Parts(const Parts&) = delete;
  Parts& operator=(const Parts&) = delete;
  ~Parts() {
    for (Desc d : held_) {
      (void)cudnn().backend_destroy(d);
    }
  }
  Desc make(int type) {
    Desc d = nullptr;
    if (cudnn().backend_create(type, &d) != 0) {
      return nullptr;
    }
    held_.push_back(d);
    return d;
  }
  std::vector<Desc> keep() {
    std::vector<Desc> out;
    out.swap(held_);
    return out;
  }

 private:
  std::vector<Desc> held_;
};

// The largest power of two up to 16 that divides the address: part of the plan, as cuDNN
// picks vectorised kernels by it.
int64_t alignment(const void* p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  int64_t align = 16;
  while (align > 1 && address % static_cast<uintptr_t>(align) != 0) {
    align /= 2;
  }
  return align;
}

// One convolution as the graph sees it: our input, weight and output, cuDNN's geometry.
struct GraphShape {
  int type = kDataFloat;
  bool transposed = false;
  bool fp32_strict = false;
  Dims in_dims, in_strides, w_dims, w_strides, out_dims, out_strides;
  Dims pad, stride, dilation;
  int64_t in_align = 16, w_align = 16, out_align = 16;
};

// An engine whose numbers are the legacy path's: no TF32 for a strict float32, no inputs
// converted down, no half-precision sums, deterministic, and no kernel compiled at run
// time (NVRTC, and seconds on a shape's first call).
bool engine_fits(Desc config, bool fp32_strict) {
  const Cudnn& api = cudnn();
  Parts parts;
  Desc engine = parts.make(graph::kEngineDesc);
  int64_t n = 0;
  if (engine == nullptr || api.backend_get(config, graph::kCfgEngine, graph::kTypeDescriptor, 1, &n, &engine) != 0) {
    return false;
  }
  int notes[graph::kNoteCount] = {};
  if (api.backend_get(engine, graph::kEngineNumericalNote, graph::kTypeNumericalNote, graph::kNoteCount, &n, notes) !=
      0) {
    return false;
  }
  for (int64_t i = 0; i < n && i < graph::kNoteCount; ++i) {
    if (notes[i] == graph::kNoteDownConvert || notes[i] == graph::kNoteReducedReduction ||
        notes[i] == graph::kNoteNondeterministic || (fp32_strict && notes[i] == graph::kNoteTensorCore)) {
      return false;
    }
  }
  int behaviors[graph::kBehaviorCount] = {};
  if (api.backend_get(engine, graph::kEngineBehaviorNote, graph::kTypeBehaviorNote, graph::kBehaviorCount, &n,
                      behaviors) != 0) {
    return false;
  }
  for (int64_t i = 0; i < n && i < graph::kBehaviorCount; ++i) {
    if (behaviors[i] == graph::kBehaviorRuntimeCompiled) {
      return false;
    }
  }
  return true;
}

// Builds and keeps in `out` the execution plan of one convolution. False where cuDNN's
// graph has no fitting engine for it, or refuses it: the legacy path then runs it.
bool build_plan(Handle handle, const GraphShape& g, Prepared* out) {
  const Cudnn& api = cudnn();
  Parts parts;
  auto set = [&](Desc d, int name, int type, int64_t count, const void* values) {
    return api.backend_set(d, name, type, count, values) == 0;
  };
  auto tensor = [&](int64_t id, const Dims& dims, const Dims& strides,
                    int64_t align) -> Desc {
    Desc t = parts.make(graph::kTensorDesc);
    auto rank = static_cast<int64_t>(dims.size());
    bool ok = t != nullptr && set(t, graph::kTensorDataType, graph::kTypeDataType, 1, &g.type) &&
              set(t, graph::kTensorDims, graph::kTypeInt64, rank, dims.data()) &&
              set(t, graph::kTensorStrides, graph::kTypeInt64, rank, strides.data()) &&
              set(t, graph::kTensorId, graph::kTypeInt64, 1, &id) &&
              set(t, graph::kTensorAlignment, graph::kTypeInt64, 1, &align) && api.backend_finalize(t) == 0;
    return ok ? t : nullptr;
  };
  Desc in = tensor(graph::kIdX, g.in_dims, g.in_strides, g.in_align);
  Desc w = tensor(graph::kIdW, g.w_dims, g.w_strides, g.w_align);
  Desc y = tensor(graph::kIdY, g.out_dims, g.out_strides, g.out_align);
  if (in == nullptr || w == nullptr || y == nullptr) {
    return false;
  }
  Desc conv = parts.make(graph::kConvolutionDesc);
  int compute = kDataFloat, mode = kCrossCorrelation;
  auto spatial = static_cast<int64_t>(g.pad.size());
  if (conv == nullptr || !set(conv, graph::kConvCompType, graph::kTypeDataType, 1, &compute) ||
      !set(conv, graph::kConvMode, graph::kTypeConvMode, 1, &mode) ||
      !set(conv, graph::kConvSpatialDims, graph::kTypeInt64, 1, &spatial) ||
      !set(conv, graph::kConvDilations, graph::kTypeInt64, spatial, g.dilation.data()) ||
      !set(conv, graph::kConvStrides, graph::kTypeInt64, spatial, g.stride.data()) ||
      !set(conv, graph::kConvPrePaddings, graph::kTypeInt64, spatial, g.pad.data()) ||
      !set(conv, graph::kConvPostPaddings, graph::kTypeInt64, spatial, g.pad.data()) || api.backend_finalize(conv) != 0) {
    return false;
  }
  float alpha = 1.0f, beta = 0.0f;
  Desc op = parts.make(g.transposed ? graph::kBackwardDataDesc : graph::kForwardDesc);
  bool op_ok = op != nullptr;
  if (op_ok && !g.transposed) {
    op_ok = set(op, graph::kFwdX, graph::kTypeDescriptor, 1, &in) && set(op, graph::kFwdW, graph::kTypeDescriptor, 1, &w) &&
            set(op, graph::kFwdY, graph::kTypeDescriptor, 1, &y) &&
            set(op, graph::kFwdConv, graph::kTypeDescriptor, 1, &conv) &&
            set(op, graph::kFwdAlpha, graph::kTypeFloat, 1, &alpha) && set(op, graph::kFwdBeta, graph::kTypeFloat, 1, &beta);
  } else if (op_ok) {
    // A transposed convolution is the data gradient of the forward one from our output.
    op_ok = set(op, graph::kBwdDy, graph::kTypeDescriptor, 1, &in) && set(op, graph::kBwdW, graph::kTypeDescriptor, 1, &w) &&
            set(op, graph::kBwdDx, graph::kTypeDescriptor, 1, &y) &&
            set(op, graph::kBwdConv, graph::kTypeDescriptor, 1, &conv) &&
            set(op, graph::kBwdAlpha, graph::kTypeFloat, 1, &alpha) && set(op, graph::kBwdBeta, graph::kTypeFloat, 1, &beta);
  }
  if (!op_ok || api.backend_finalize(op) != 0) {
    return false;
  }
  Desc ops = parts.make(graph::kOpGraphDesc);
  if (ops == nullptr || !set(ops, graph::kGraphOps, graph::kTypeDescriptor, 1, &op) ||
      !set(ops, graph::kGraphHandle, graph::kTypeHandle, 1, &handle) || api.backend_finalize(ops) != 0) {
    return false;
  }
  // The quick heuristic's list first, then the fallback list (engines for any shape).
  for (int heur_mode : {graph::kHeurInstant, graph::kHeurFallback}) {
    Desc heur = parts.make(graph::kEngineHeurDesc);
    int64_t count = 0;
    if (heur == nullptr || !set(heur, graph::kHeurGraph, graph::kTypeDescriptor, 1, &ops) ||
        !set(heur, graph::kHeurMode, graph::kTypeHeurMode, 1, &heur_mode) || api.backend_finalize(heur) != 0 ||
        api.backend_get(heur, graph::kHeurResults, graph::kTypeDescriptor, 0, &count, nullptr) != 0 || count <= 0) {
      continue;
    }
    std::vector<Desc> configs;
    for (int64_t i = 0; i < count; ++i) {
      Desc c = parts.make(graph::kEngineCfgDesc);
      if (c == nullptr) {
        return false;
      }
      configs.push_back(c);
    }
    int64_t got = 0;
    if (api.backend_get(heur, graph::kHeurResults, graph::kTypeDescriptor, count, &got, configs.data()) != 0) {
      continue;
    }
    for (int64_t i = 0; i < got && i < count; ++i) {
      if (!engine_fits(configs[i], g.fp32_strict)) {
        continue;
      }
      Desc plan = parts.make(graph::kPlanDesc);
      int64_t bytes = 0, n = 0;
      if (plan == nullptr || !set(plan, graph::kPlanHandle, graph::kTypeHandle, 1, &handle) ||
          !set(plan, graph::kPlanConfig, graph::kTypeDescriptor, 1, &configs[i]) || api.backend_finalize(plan) != 0 ||
          api.backend_get(plan, graph::kPlanWorkspace, graph::kTypeInt64, 1, &n, &bytes) != 0 || bytes < 0 ||
          static_cast<uint64_t>(bytes) > kMaxWorkspace) {
        continue;
      }
      out->plan = plan;
      out->plan_workspace = bytes;
      out->graph_parts = parts.keep();
      return true;
    }
  }
  return false;
}

// One call of a kept plan: the pointers of this call, the workspace, on the handle's stream.
AOTITorchError execute_plan(Handle handle, const Prepared& prep, void* in, void* w, void* out, void* workspace) {
  const Cudnn& api = cudnn();
  Parts parts;
  Desc pack = parts.make(graph::kVariantPackDesc);
  void* pointers[3] = {in, w, out};
  int64_t ids[3] = {graph::kIdX, graph::kIdW, graph::kIdY};
  if (pack == nullptr) {
    return fail_format(AOTI_SHIM_E_CUDA_ERROR, "%s: cudnnBackendCreateDescriptor (variant pack) failed", kWhere);
  }
  AOTISHIM_TRY(check(api.backend_set(pack, graph::kPackPointers, graph::kTypeVoidPtr, 3, pointers),
                     "cudnnBackendSetAttribute (data pointers)"));
  AOTISHIM_TRY(check(api.backend_set(pack, graph::kPackIds, graph::kTypeInt64, 3, ids),
                     "cudnnBackendSetAttribute (unique ids)"));
  AOTISHIM_TRY(check(api.backend_set(pack, graph::kPackWorkspace, graph::kTypeVoidPtr, 1, &workspace),
                     "cudnnBackendSetAttribute (workspace)"));
  AOTISHIM_TRY(check(api.backend_finalize(pack), "cudnnBackendFinalize (variant pack)"));
  return check(api.backend_execute(handle, prep.plan, pack), "cudnnBackendExecute");
}

// A small 2-D depthwise convolution (groups == input channels == output channels, one weight
// channel each) runs on a direct kernel: launch-bound there whatever computes it, and cuDNN's
// plan for some 16-bit shapes took 2.3 ms of host time a call (a 5x5 depthwise convolution of
// 576 channels at 2x2 in mobilenet_v3_small, bfloat16: run13), torch's own depthwise kernel
// 10 us. Bigger ones, where cuDNN's kernels earn their keep, stay with cuDNN.
constexpr int64_t kDirectDepthwiseMacs = int64_t(1) << 22;

bool direct_depthwise(const Tensor& x, const Tensor& w, const Params& p, const Tensor& out) {
  if (x.dim() != 4 || p.transposed || p.spatial != 2 || w.dim() != 4 || p.groups != x.sizes[1] ||
      w.sizes[0] != p.groups || w.sizes[1] != 1 || out.sizes[1] != p.groups || w.dtype != x.dtype ||
      out.dtype != x.dtype || (x.dtype != 5 && x.dtype != 6 && x.dtype != 7 && x.dtype != 15)) {
    return false;
  }
  int64_t macs = out.numel();  // the bound checked before each product: no overflow
  if (macs > kDirectDepthwiseMacs) {
    return false;
  }
  for (int d = 2; d < 4; ++d) {
    if (w.sizes[d] <= 0 || macs > kDirectDepthwiseMacs / w.sizes[d]) {
      return false;
    }
    macs *= w.sizes[d];
  }
  return true;
}

AOTITorchError run_depthwise(const Tensor& x, const Tensor& w, const Tensor* bias, const Params& p, bool channels_last,
                             const Tensor& out) {
  AOTISHIM_PROFILE_STEP("conv: direct depthwise kernel");
  // The launch goes to the current device: the operands' one for the call.
  cuda::DeviceScope scope;
  AOTISHIM_TRY(scope.enter(out.device_index()));
  void* stream = current_stream(out.device_index());
  kernels::DepthwisePlan plan;
  plan.x = x.data();
  plan.w = w.data();
  plan.out = out.data();
  plan.dtype = x.dtype;
  for (int d = 0; d < 4; ++d) {
    plan.out_sizes[d] = out.sizes[d];
    plan.x_sizes[d] = x.sizes[d];
    plan.x_strides[d] = x.strides[d];
    plan.w_strides[d] = w.strides[d];
    plan.out_strides[d] = out.strides[d];
  }
  for (int d = 0; d < 2; ++d) {
    plan.kernel[d] = w.sizes[2 + d];
    plan.stride[d] = p.stride[d];
    plan.padding[d] = p.padding[d];
    plan.dilation[d] = p.dilation[d];
  }
  AOTISHIM_TRY(cuda::check_status(kernels::depthwise_conv2d(plan, stream), "cuda_convolution depthwise kernel"));
  if (bias != nullptr) {
    int64_t inner = channels_last ? 1 : out.sizes[2] * out.sizes[3];
    AOTISHIM_TRY(cuda::check_status(
        kernels::add_channel_bias(out.data(), out.dtype, bias->data(), bias->strides[0], out.numel(), out.sizes[1], inner,
                                  stream),
        "cuda_convolution bias kernel"));
  }
  return AOTI_SHIM_OK;
}

// AOTI_SHIM_CONV_ROUTE, read per call so that a test or a probe can compare the routes on the
// same shapes: cudnn keeps every dense convolution on cuDNN; direct gives the direct kernel
// every one it can take, whatever its size or dtype.
enum class ConvRoute { Any, Cudnn, Direct };
ConvRoute forced_conv_route() {
  const char* route = std::getenv("AOTI_SHIM_CONV_ROUTE");
  if (route == nullptr) {
    return ConvRoute::Any;
  }
  if (std::strcmp(route, "cudnn") == 0) {
    return ConvRoute::Cudnn;
  }
  return std::strcmp(route, "direct") == 0 ? ConvRoute::Direct : ConvRoute::Any;
}

// The furthest element a layout reaches, when every stride lies in [0, INT32_MAX] (a size-1
// dim's too: the kernel takes each stride as an int32); -1 otherwise.
int64_t last_offset(const Tensor& t) {
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.strides[d] < 0 || t.strides[d] > std::numeric_limits<int32_t>::max()) {
      return -1;
    }
    last += (t.sizes[d] - 1) * t.strides[d];  // sizes are positive here: no empty operand
  }
  return last;
}

// The direct kernel (conv_direct.h) takes a dense (groups 1) 2-D forward convolution of
// float32 by default, float64 and the half types when forced, whose every offset fits in
// int32 and whose channels fill at least half a warp. By default only small float32 outputs
// go there, where cuDNN's kernels, which split the work by output alone, leave most of the
// GPU idle (ResNet-18 at batch 2 and 64x64, every convolution but the first: 7.3 to 133 us of
// GPU time a call in cuDNN against 4.5 to 10.3 us, run33). Its lanes read an input channel
// each, so how far "small" reaches depends on the layout (run33's ladder of shapes):
// - channels-last input (channels adjacent): up to kDirectOutputs output elements;
// - otherwise (each lane's load its own plane): up to kDirectPixels output pixels (N x P x Q)
//   or kDirectSmallOutputs output elements; past that cuDNN's NCHW kernels win (ResNet-18's
//   first stage, 512 pixels: 16.7 us in cuDNN against 23.4).
// cuDNN's half types run on tensor cores, faster than this kernel at every shape measured.
constexpr int64_t kDirectOutputs = int64_t(1) << 16;
constexpr int64_t kDirectPixels = 128;
constexpr int64_t kDirectSmallOutputs = 8192;
constexpr int64_t kDirectMinChannels = 16;

bool small_for_direct(const Tensor& x, const Tensor& out) {
  const int64_t outputs = out.numel();
  if (x.strides[1] == 1) {
    return outputs <= kDirectOutputs;
  }
  return outputs <= kDirectSmallOutputs || out.sizes[0] * out.sizes[2] * out.sizes[3] <= kDirectPixels;
}

// After check_arguments: the weight has the input's rank, every operand its dtype (one the
// kernel takes), and p.spatial is the input's rank less two.
bool direct_dense(const Tensor& x, const Tensor& w, const Params& p, const Tensor& out, ConvRoute route) {
  if (route == ConvRoute::Cudnn || p.spatial != 2 || p.transposed || p.groups != 1 ||
      x.sizes[1] < kDirectMinChannels) {
    return false;
  }
  if (route == ConvRoute::Any && (x.dtype != 6 || !small_for_direct(x, out))) {
    return false;
  }
  constexpr int64_t kInt32 = std::numeric_limits<int32_t>::max();
  for (const Tensor* t : {&x, &w, &out}) {
    const int64_t last = last_offset(*t);
    if (last < 0 || last > kInt32 || t->numel() > kInt32) {
      return false;
    }
  }
  for (int d = 0; d < 2; ++d) {
    // Every input row or column a tap computes lies within int32 (padding included).
    const int64_t reach = p.stride[d] * out.sizes[2 + d] + p.dilation[d] * w.sizes[2 + d] + p.padding[d];
    if (p.stride[d] > kInt32 || p.dilation[d] > kInt32 || p.padding[d] > kInt32 || reach > kInt32) {
      return false;
    }
  }
  return true;
}

AOTITorchError run_direct(const Tensor& x, const Tensor& w, const Tensor* bias, const Params& p, const Tensor& out) {
  AOTISHIM_PROFILE_STEP("conv: direct kernel");
  kernels::DirectConvPlan plan;
  plan.x = x.data();
  plan.w = w.data();
  plan.out = out.data();
  plan.dtype = x.dtype;
  if (bias != nullptr) {
    plan.bias = bias->data();
    plan.bias_stride = bias->strides[0];
  }
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };  // sizes and strides: direct_dense bounds them
  plan.batch = i32(x.sizes[0]), plan.in_channels = i32(x.sizes[1]), plan.in_h = i32(x.sizes[2]), plan.in_w = i32(x.sizes[3]);
  plan.out_channels = i32(out.sizes[1]), plan.out_h = i32(out.sizes[2]), plan.out_w = i32(out.sizes[3]);
  for (int d = 0; d < 4; ++d) {
    plan.x_strides[d] = i32(x.strides[d]);
    plan.w_strides[d] = i32(w.strides[d]);
    plan.out_strides[d] = i32(out.strides[d]);
  }
  for (int d = 0; d < 2; ++d) {
    plan.kernel[d] = i32(w.sizes[2 + d]);
    plan.stride[d] = i32(p.stride[d]);
    plan.padding[d] = i32(p.padding[d]);
    plan.dilation[d] = i32(p.dilation[d]);
  }
  cuda::DeviceScope scope;  // the launch goes to the current device: the operands' one
  AOTISHIM_TRY(scope.enter(out.device_index()));
  return cuda::check_status(kernels::direct_conv2d(plan, current_stream(out.device_index())),
                            "cuda_convolution direct kernel");
}

AOTITorchError run_cudnn(
    const Tensor& x, const Tensor& w, const Tensor* bias, const Params& p, bool channels_last, const Tensor& out) {
  int32_t device = out.device_index();
  std::unique_ptr<Tensor> x_copy, w_copy;
  const Tensor *xs = nullptr, *ws = nullptr;
  AOTISHIM_TRY(packed_operand(x, channels_last, &x_copy, &xs));
  AOTISHIM_TRY(packed_operand(w, channels_last, &w_copy, &ws));
  const Cudnn& api = cudnn();
  // cuDNN's operands: the forward convolution's x (input), w, y (output); for a transposed
  // convolution the forward one whose data gradient it is (x = our output, y = our input).
  Dims x_sizes = widened(x.sizes, 1), out_sizes = widened(out.sizes, 1), w_sizes = widened(w.sizes, 1);
  auto packed = [&](const Dims& sizes) {
    return channels_last ? channels_last_strides(sizes) : contiguous_strides(sizes);
  };
  std::vector<int> x_dims, x_strides, out_dims, out_strides, w_dims;
  AOTISHIM_TRY(as_ints(x_sizes, &x_dims));
  AOTISHIM_TRY(as_ints(packed(x_sizes), &x_strides));
  AOTISHIM_TRY(as_ints(out_sizes, &out_dims));
  AOTISHIM_TRY(as_ints(packed(out_sizes), &out_strides));
  AOTISHIM_TRY(as_ints(w_sizes, &w_dims));
  int spatial = static_cast<int>(x_dims.size()) - 2;
  std::vector<int> pad, stride, dilation;
  if (p.spatial == 1) {
    pad.push_back(0), stride.push_back(1), dilation.push_back(1);
  }
  for (int d = 0; d < p.spatial; ++d) {
    pad.push_back(static_cast<int>(p.padding[d]));
    stride.push_back(static_cast<int>(p.stride[d]));
    dilation.push_back(static_cast<int>(p.dilation[d]));
  }
  int type = cudnn_type(x.dtype);
  bool fp32_strict = x.dtype == 6 && !allow_tf32();
  cuda::DeviceScope scope;
  AOTISHIM_TRY(scope.enter(device));
  void* stream = current_stream(device);
  Handle handle = nullptr;
  AOTISHIM_TRY(handle_for(device, stream, &handle));

  std::string key = std::to_string(device) + (p.transposed ? "T" : "F") + (channels_last ? "L" : "C") +
                    std::to_string(x.dtype) + (fp32_strict ? "s" : "t") + "g" + std::to_string(p.groups);
  for (const auto* v : {&x_dims, &out_dims, &w_dims, &pad, &stride, &dilation}) {
    key += '|';
    for (int i : *v) {
      key += std::to_string(i) + ',';
    }
  }
  // A plan holds the operands' alignment.
  const int64_t in_align = alignment(xs->data()), w_align = alignment(ws->data()), out_align = alignment(out.data());
  key += 'a' + std::to_string(in_align) + ',' + std::to_string(w_align) + ',' + std::to_string(out_align);
  auto known = prepared().find(key);
  if (known == prepared().end()) {
    AOTISHIM_PROFILE_STEP("cudnn: descriptors and algorithm (first call of a shape)");
    auto fresh = std::make_unique<Prepared>();
    if (!legacy_only() && x.dtype != 7) {
      auto to64 = [](const std::vector<int>& v) { return Dims(v.begin(), v.end()); };
      GraphShape g;
      g.type = type;
      g.transposed = p.transposed;
      g.fp32_strict = fp32_strict;
      g.in_dims = x_sizes, g.in_strides = packed(x_sizes);
      g.w_dims = w_sizes, g.w_strides = packed(w_sizes);
      g.out_dims = out_sizes, g.out_strides = packed(out_sizes);
      g.pad = to64(pad), g.stride = to64(stride), g.dilation = to64(dilation);
      g.in_align = in_align, g.w_align = w_align, g.out_align = out_align;
      (void)build_plan(handle, g, fresh.get());
    }
    if (fresh->plan == nullptr) {
      Descriptors& desc = fresh->desc;
      AOTISHIM_TRY(check(api.create_tensor(&desc.x), "cudnnCreateTensorDescriptor"));
      AOTISHIM_TRY(check(api.create_tensor(&desc.y), "cudnnCreateTensorDescriptor"));
      AOTISHIM_TRY(check(api.create_filter(&desc.w), "cudnnCreateFilterDescriptor"));
      AOTISHIM_TRY(check(api.create_conv(&desc.conv), "cudnnCreateConvolutionDescriptor"));
      Desc in_desc = p.transposed ? desc.y : desc.x;   // our input
      Desc out_desc = p.transposed ? desc.x : desc.y;  // our output
      int nb = static_cast<int>(x_dims.size());
      AOTISHIM_TRY(check(api.set_tensor(in_desc, type, nb, x_dims.data(), x_strides.data()), "cudnnSetTensorNdDescriptor"));
      AOTISHIM_TRY(
          check(api.set_tensor(out_desc, type, nb, out_dims.data(), out_strides.data()), "cudnnSetTensorNdDescriptor"));
      AOTISHIM_TRY(check(api.set_filter(desc.w, type, channels_last ? kFormatNhwc : kFormatNchw, nb, w_dims.data()),
                         "cudnnSetFilterNdDescriptor"));
      AOTISHIM_TRY(check(api.set_conv(desc.conv, spatial, pad.data(), stride.data(), dilation.data(), kCrossCorrelation,
                                      x.dtype == 7 ? kDataDouble : kDataFloat),
                         "cudnnSetConvolutionNdDescriptor"));
      AOTISHIM_TRY(check(api.set_groups(desc.conv, static_cast<int>(p.groups)), "cudnnSetConvolutionGroupCount"));
      AlgoPerf perf[kMaxAlgos] = {};
      int count = 0;
      AOTISHIM_TRY(check(api.set_math(desc.conv, fp32_strict ? kFmaMath : kTensorOpMath), "cudnnSetConvolutionMathType"));
      if (!p.transposed) {
        AOTISHIM_TRY(check(api.forward_algos(handle, desc.x, desc.w, desc.conv, desc.y, kMaxAlgos, &count, perf),
                           "cudnnGetConvolutionForwardAlgorithm_v7"));
      } else {
        AOTISHIM_TRY(check(api.backward_algos(handle, desc.w, desc.y, desc.conv, desc.x, kMaxAlgos, &count, perf),
                           "cudnnGetConvolutionBackwardDataAlgorithm_v7"));
      }
      bool found = false;
      for (int i = 0; i < count && !found; ++i) {
        const AlgoPerf& c = perf[i];
        if (c.status != 0 || (fp32_strict && (c.math_type == kTensorOpMath || c.math_type == kTensorOpAllowConversion))) {
          continue;
        }
        int math = fp32_strict ? kFmaMath : c.math_type;
        if (api.set_math(desc.conv, math) != 0) {
          continue;
        }
        size_t bytes = 0;
        Status sized = p.transposed
                           ? api.backward_workspace(handle, desc.w, desc.y, desc.conv, desc.x, c.algo, &bytes)
                           : api.forward_workspace(handle, desc.x, desc.w, desc.conv, desc.y, c.algo, &bytes);
        if (sized != 0 || bytes > kMaxWorkspace) {
          continue;
        }
        fresh->choice = Choice{c.algo, math, bytes};
        found = true;
      }
      if (!found) {
        return fail_format(
            AOTI_SHIM_E_UNSUPPORTED, "%s: cuDNN offers no %s algorithm for this convolution (%s, %s, %lld groups)",
            kWhere, p.transposed ? "transposed (backward-data)" : "forward", dtype_name(x.dtype),
            channels_last ? "channels-last" : "contiguous", static_cast<long long>(p.groups));
      }
      AOTISHIM_TRY(check(api.set_math(desc.conv, fresh->choice.math), "cudnnSetConvolutionMathType"));
    }
    known = prepared().emplace(key, fresh.release()).first;
  }
  const Prepared& prep = *known->second;
  const Descriptors& desc = prep.desc;
  const Choice& choice = prep.choice;
  size_t workspace_bytes = prep.plan != nullptr ? static_cast<size_t>(prep.plan_workspace) : choice.workspace;
  // The workspace comes from the shims' allocator on this stream: freed (stream-ordered)
  // when it goes out of scope, after cuDNN's kernels on the same stream.
  std::unique_ptr<Tensor> workspace;
  if (workspace_bytes > 0) {
    AOTISHIM_TRY(new_tensor({static_cast<int64_t>(workspace_bytes)}, {1}, 0, kCUDA, device, false, &workspace));
  }
  void* ws_data = workspace ? workspace->data() : nullptr;
  if (prep.plan != nullptr) {
    AOTISHIM_PROFILE_STEP("cudnn: execution plan (cudnnBackendExecute)");
    AOTISHIM_TRY(execute_plan(handle, prep, xs->data(), ws->data(), out.data(), ws_data));
  } else {
    AOTISHIM_PROFILE_STEP("cudnn: cudnnConvolutionForward / BackwardData");
    double one64 = 1.0, zero64 = 0.0;
    float one32 = 1.0f, zero32 = 0.0f;
    const void* alpha = x.dtype == 7 ? static_cast<const void*>(&one64) : &one32;
    const void* beta = x.dtype == 7 ? static_cast<const void*>(&zero64) : &zero32;
    if (!p.transposed) {
      AOTISHIM_TRY(check(api.forward(handle, alpha, desc.x, xs->data(), desc.w, ws->data(), desc.conv, choice.algo,
                                     ws_data, choice.workspace, beta, desc.y, out.data()),
                         "cudnnConvolutionForward"));
    } else {
      AOTISHIM_TRY(check(api.backward_data(handle, alpha, desc.w, ws->data(), desc.y, xs->data(), desc.conv, choice.algo,
                                           ws_data, choice.workspace, beta, desc.x, out.data()),
                         "cudnnConvolutionBackwardData"));
    }
  }
  if (bias != nullptr) {
    AOTISHIM_PROFILE_STEP("conv: bias kernel");
    int64_t inner = 1;
    if (!channels_last) {
      for (size_t d = 2; d < out.sizes.size(); ++d) {
        inner *= out.sizes[d];
      }
    }
    AOTISHIM_TRY(cuda::check_status(
        kernels::add_channel_bias(out.data(), out.dtype, bias->data(), bias->strides[0], out.numel(), out.sizes[1], inner,
                                  stream),
        "cuda_convolution bias kernel"));
  }
  return AOTI_SHIM_OK;
}

#endif  // AOTI_SHIM_WITH_CUDA

AOTITorchError convolution(const Tensor& x, const Tensor& w, const Tensor* bias, const Params& p, AtenTensorHandle* ret) {
  AOTISHIM_TRY(require_output(ret, "ret0"));
  Dims out_sizes;
  AOTISHIM_TRY(check_arguments(x, w, bias, p, &out_sizes));
#if AOTI_SHIM_WITH_CUDA
  // The library before the devices: a process without cuDNN learns that first, with its fix.
  if (!cudnn().error.empty()) {
    return fail_format(AOTI_SHIM_E_CUDA_UNAVAILABLE, "%s: %s", kWhere, cudnn().error.c_str());
  }
  int32_t device = x.device_index();
  for (const Tensor* t : {&x, &w, bias}) {
    if (t != nullptr && (t->device_type() != kCUDA || t->device_index() != device)) {
      return fail_format(AOTI_SHIM_E_DEVICE_MISMATCH, "%s: input, weight and bias must be on one CUDA device", kWhere);
    }
  }
  int64_t ndim = x.dim();
  bool channels_last = x.dtype != 7 && (ndim == 4 || ndim == 5) &&
                       (strides_like_channels_last(x) || strides_like_channels_last(w));
  Dims out_strides = channels_last ? channels_last_strides(out_sizes) : contiguous_strides(out_sizes);
  std::unique_ptr<Tensor> out;
  AOTISHIM_TRY(new_tensor(out_sizes, out_strides, x.dtype, kCUDA, device, false, &out));
  if (out->numel() > 0) {
    if (x.numel() == 0 || w.numel() == 0) {
      return fail_format(AOTI_SHIM_E_UNSUPPORTED, "%s: an empty input or weight with a non-empty output", kWhere);
    }
    if (direct_depthwise(x, w, p, *out)) {
      AOTISHIM_TRY(run_depthwise(x, w, bias, p, channels_last, *out));
    } else if (direct_dense(x, w, p, *out, forced_conv_route())) {
      AOTISHIM_TRY(run_direct(x, w, bias, p, *out));
    } else {
      AOTISHIM_TRY(run_cudnn(x, w, bias, p, channels_last, *out));
    }
  }
  *ret = to_handle(out.release());
  return AOTI_SHIM_OK;
#else
  (void)out_sizes;
  return fail_format(AOTI_SHIM_E_CUDA_UNAVAILABLE, "%s: the shims were built without CUDA", kWhere);
#endif
}

}  // namespace
}  // namespace aotishim

using namespace aotishim;

extern "C" AOTITorchError aoti_torch_cuda_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_,
    int32_t transposed, const int64_t* output_padding, int64_t output_padding_len_, int64_t groups,
    AtenTensorHandle* ret0) {
  return guarded("aoti_torch_cuda_convolution", [&]() -> AOTITorchError {
    Tensor *x = nullptr, *w = nullptr, *b = nullptr;
    AOTISHIM_TRY(unwrap(input, &x, "input"));
    AOTISHIM_TRY(unwrap(weight, &w, "weight"));
    AOTISHIM_TRY(unwrap_optional(bias, &b, "bias"));
    Params p;
    p.spatial = static_cast<int>(x->dim()) - 2;
    if (p.spatial < 1 || p.spatial > kMaxSpatial) {
      return fail_format(
          AOTI_SHIM_E_RANK_MISMATCH, "%s: input has %lld dims: it must be [N, C, 1 to 3 spatial dims]", kWhere,
          static_cast<long long>(x->dim()));
    }
    p.transposed = transposed != 0;
    p.groups = groups;
    AOTISHIM_TRY(read_param(stride, stride_len_, p.spatial, "stride", 1, p.stride));
    AOTISHIM_TRY(read_param(padding, padding_len_, p.spatial, "padding", 0, p.padding));
    AOTISHIM_TRY(read_param(dilation, dilation_len_, p.spatial, "dilation", 1, p.dilation));
    if (p.transposed) {
      AOTISHIM_TRY(read_param(output_padding, output_padding_len_, p.spatial, "output_padding", 0, p.output_padding));
    } else {
      // Ignored by torch for a plain convolution, whatever it holds.
      std::fill(std::begin(p.output_padding), std::end(p.output_padding), 0);
    }
    return convolution(*x, *w, b, p, ret0);
  });
}
