// Constants with c10's numbering, grad mode, warnings and checks.
#include "tensor.h"

#include <cstdio>
#include <stdexcept>
#include <string>

using namespace aotishim;

extern "C" {

// c10::DeviceType
int32_t aoti_torch_device_type_cpu() { return 0; }
int32_t aoti_torch_device_type_cuda() { return 1; }
int32_t aoti_torch_device_type_xpu() { return 12; }
int32_t aoti_torch_device_type_mps() { return 13; }
int32_t aoti_torch_device_type_meta() { return 14; }
int32_t aoti_torch_device_type_privateuse1() { return 20; }

// c10::ScalarType
int32_t aoti_torch_dtype_uint8() { return 0; }
int32_t aoti_torch_dtype_int8() { return 1; }
int32_t aoti_torch_dtype_int16() { return 2; }
int32_t aoti_torch_dtype_int32() { return 3; }
int32_t aoti_torch_dtype_int64() { return 4; }
int32_t aoti_torch_dtype_float16() { return 5; }
int32_t aoti_torch_dtype_float32() { return 6; }
int32_t aoti_torch_dtype_float64() { return 7; }
int32_t aoti_torch_dtype_complex32() { return 8; }
int32_t aoti_torch_dtype_complex64() { return 9; }
int32_t aoti_torch_dtype_complex128() { return 10; }
int32_t aoti_torch_dtype_bool() { return 11; }
int32_t aoti_torch_dtype_bfloat16() { return 15; }
int32_t aoti_torch_dtype_float8_e5m2() { return 23; }
int32_t aoti_torch_dtype_float8_e4m3fn() { return 24; }
int32_t aoti_torch_dtype_float8_e5m2fnuz() { return 25; }
int32_t aoti_torch_dtype_float8_e4m3fnuz() { return 26; }
int32_t aoti_torch_dtype_uint16() { return 27; }
int32_t aoti_torch_dtype_uint32() { return 28; }
int32_t aoti_torch_dtype_uint64() { return 29; }
int32_t aoti_torch_dtype_float8_e8m0fnu() { return 44; }
int32_t aoti_torch_dtype_float4_e2m1fn_x2() { return 45; }

size_t aoti_torch_dtype_element_size(int32_t dtype) { return dtype_size(dtype); }

// c10::Layout
int32_t aoti_torch_layout_strided() { return 0; }
int32_t aoti_torch_layout_sparse_coo() { return 1; }
int32_t aoti_torch_layout_sparse_csr() { return 2; }
int32_t aoti_torch_layout__mkldnn() { return 3; }
int32_t aoti_torch_layout_sparse_csc() { return 4; }
int32_t aoti_torch_layout_sparse_bsr() { return 5; }
int32_t aoti_torch_layout_sparse_bsc() { return 6; }
int32_t aoti_torch_layout_jagged() { return 7; }

// c10::MemoryFormat
int32_t aoti_torch_memory_format_contiguous_format() { return 0; }
int32_t aoti_torch_memory_format_preserve_format() { return 1; }
int32_t aoti_torch_memory_format_channels_last() { return 2; }
int32_t aoti_torch_memory_format_channels_last_3d() { return 3; }

// Inference only: grad mode is off and stays off.
bool aoti_torch_grad_mode_is_enabled() { return false; }

void aoti_torch_grad_mode_set_enabled(bool enabled) {
  if (enabled) {
    fail_format(AOTI_SHIM_E_UNSUPPORTED, "aoti_torch_grad_mode_set_enabled(true): aoti_shim runs inference only");
    std::fprintf(stderr, "aoti_shim: error: %s\n", aoti_shim_last_error());
  }
}

void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg) {
  std::fprintf(
      stderr, "aoti_shim: warning: %s (%s at %s:%u)\n", msg ? msg : "", func ? func : "?", file ? file : "?",
      static_cast<unsigned>(line));
}

void aoti_torch_check(bool cond, const char* func, const char* file, uint32_t line, const char* msg) {
  if (cond) {
    return;
  }
  fail_format(
      AOTI_SHIM_E_FAILURE, "check failed: %s (%s at %s:%u)", msg ? msg : "", func ? func : "?", file ? file : "?",
      static_cast<unsigned>(line));
  // As torch does (c10::Error): the blob's run wrapper catches it and returns its error code.
  throw std::runtime_error(aoti_shim_last_error());
}

}  // extern "C"
