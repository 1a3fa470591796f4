// What the CUDA ops that load an NVIDIA library at their first call share (cuBLAS:
// ops_cuda_blas.cpp, cuDNN: ops_cuda_conv.cpp): opening it, its handles, and torch's TF32
// override. Only for builds with CUDA (AOTI_SHIM_WITH_CUDA).
#pragma once

#include "tensor.h"

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <unordered_map>

namespace aotishim {

// The library that $env names, when set, alone (the user's choice failing is said rather
// than another one picked), else the first of `names` that loads; RTLD_LOCAL, so its
// symbols serve no one else. nullptr when none loads, with *why holding each failure
// ("; " between them). *loaded is the name that loaded.
inline void* open_library(const char* env, std::initializer_list<const char*> names, std::string* why, const char** loaded) {
  const char* named = std::getenv(env);
  const bool chosen = named != nullptr && *named != '\0';
  const char* const* first = chosen ? &named : names.begin();
  const char* const* last = chosen ? &named + 1 : names.end();
  for (const char* const* at = first; at != last; ++at) {
    const char* name = *at;
    void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      *loaded = name;
      return lib;
    }
    const char* error = dlerror();
    *why += std::string(why->empty() ? "" : "; ") + (error ? error : name);
  }
  return nullptr;
}

// A library's handles (cublasHandle_t, cudnnHandle_t), one a device, held thread_local by
// its user: a handle must not serve two threads at once. A call points the device's
// handle at `stream` when it is not there already. Handles live until the process ends (destroying them at
// thread exit could run after the CUDA context is gone). create(Handle*) and
// set_stream(Handle, void*) make the library's status an AOTITorchError.
template <typename Handle>
class DeviceHandles {
 public:
  template <typename Create, typename SetStream>
  AOTITorchError get(int32_t device, void* stream, Create&& create, SetStream&& set_stream, Handle* out) {
    auto found = handles_.find(device);
    if (found == handles_.end()) {
      Handle h = nullptr;
      AOTISHIM_TRY(create(&h));
      found = handles_.emplace(device, Bound{h, nullptr, false}).first;
    }
    Bound& bound = found->second;
    // Only when the stream changes: the handle is this thread's alone, and setting a
    // stream is a library call per GEMM or convolution otherwise (issue 38).
    if (!bound.stream_set || bound.stream != stream) {
      bound.stream_set = false;
      AOTISHIM_TRY(set_stream(bound.handle, stream));
      bound.stream = stream;
      bound.stream_set = true;
    }
    *out = bound.handle;
    return AOTI_SHIM_OK;
  }

 private:
  struct Bound {
    Handle handle;
    void* stream;     // the stream last set on it
    bool stream_set;  // whether `stream` is known to be set
  };
  std::unordered_map<int32_t, Bound> handles_;
};

// TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, torch's one TF32 override: float32 GEMMs and
// convolutions may use TF32. Read once.
inline bool allow_tf32() {
  static const bool allowed = [] {
    const char* v = std::getenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE");
    return v != nullptr && std::string(v) == "1";
  }();
  return allowed;
}

}  // namespace aotishim
