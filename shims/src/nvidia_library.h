// What the CUDA ops that load an NVIDIA library at their first call share (cuBLAS:
// ops_cuda_blas.cpp, cuDNN: ops_cuda_conv.cpp): opening it, and torch's TF32 override.
// Only for builds with CUDA (AOTI_SHIM_WITH_CUDA).
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <initializer_list>
#include <string>

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
