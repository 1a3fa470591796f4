// Per-function call counts and host time of the shims, for finding where an
// inference's host time goes. Switched on by AOTI_SHIM_PROFILE=1 in the environment
// when the library loads (the table is written at exit), or at run time through
// aoti_shim_profile_enable (a bench reads it through aoti_shim_profile_read).
//
// Off, a scope costs one relaxed load of a cached flag and a predictable branch (plus
// a test of a null pointer when it ends): no clock, no lookup, no shared write.
#pragma once

#include <atomic>
#include <cstdint>

namespace aotishim::profile {

// Built with AOTI_SHIM_PROFILING=0 (CMake option AOTI_SHIM_PROFILING=OFF), every scope
// compiles to nothing: the reference for showing that "off" costs nothing measurable.
#ifndef AOTI_SHIM_PROFILING
#define AOTI_SHIM_PROFILING 1
#endif

extern std::atomic<bool> enabled_flag;

inline bool enabled() noexcept {
#if AOTI_SHIM_PROFILING
  return __builtin_expect(enabled_flag.load(std::memory_order_relaxed), 0);
#else
  return false;
#endif
}

// Adds one call of `name` (a string literal: its address is the key) and `nanos`.
void add(const char* name, uint64_t nanos) noexcept;
uint64_t now_ns() noexcept;

// Times one entry point of the C ABI. Only the outermost one on a thread adds to the
// "shim total" row, so an entry point calling another is not counted twice there.
class ApiScope {
 public:
  explicit ApiScope(const char* name) noexcept {
    if (enabled()) {
      begin(name);
    }
  }
  ~ApiScope() {
    if (name_ != nullptr) {
      end();
    }
  }
  ApiScope(const ApiScope&) = delete;
  ApiScope& operator=(const ApiScope&) = delete;

 private:
  void begin(const char* name) noexcept;
  void end() noexcept;
  const char* name_ = nullptr;
  uint64_t start_ = 0;
};

// Times an internal step (a CUDA runtime call, an allocator path) inside an entry point.
class Scope {
 public:
  explicit Scope(const char* name) noexcept {
    if (enabled()) {
      name_ = name;
      start_ = now_ns();
    }
  }
  ~Scope() {
    if (name_ != nullptr) {
      add(name_, now_ns() - start_);
    }
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const char* name_ = nullptr;
  uint64_t start_ = 0;
};

// Counts an event without timing it.
inline void count(const char* name) noexcept {
  if (enabled()) {
    add(name, 0);
  }
}

}  // namespace aotishim::profile

#define AOTISHIM_PROFILE_CAT_(a, b) a##b
#define AOTISHIM_PROFILE_CAT(a, b) AOTISHIM_PROFILE_CAT_(a, b)
// An entry point of the C ABI (functions that do not go through guarded()).
#define AOTISHIM_PROFILE_API(name) ::aotishim::profile::ApiScope AOTISHIM_PROFILE_CAT(aotishim_api_scope_, __LINE__)(name)
// An internal step.
#define AOTISHIM_PROFILE_STEP(name) ::aotishim::profile::Scope AOTISHIM_PROFILE_CAT(aotishim_step_scope_, __LINE__)(name)
