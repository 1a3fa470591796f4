// Template bodies for tensor.h.
#pragma once

#include "profile.h"

#include <exception>
#include <new>

namespace aotishim {

template <typename Body>
AOTITorchError guarded(const char* where, Body&& body) noexcept {
  AOTISHIM_PROFILE_API(where);
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail_format(AOTI_SHIM_E_OUT_OF_MEMORY, "%s: out of host memory", where);
  } catch (const std::exception& error) {
    return fail_format(AOTI_SHIM_E_FAILURE, "%s: %s", where, error.what());
  } catch (...) {
    return fail_format(AOTI_SHIM_E_FAILURE, "%s: unknown exception", where);
  }
}

}  // namespace aotishim
