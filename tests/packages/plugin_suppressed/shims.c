/* Prefixed shims, plus a BLAS routine exported under its standard name on purpose. */
#include <stdint.h>

#include "aoti_shim_rename.h"

int32_t aoti_torch_device_type_cpu(void) { return 0; }

/* Fortran-ABI sdot_: libtorch_cpu exports MKL's under the same name (suppressed in pyproject.toml). */
float sdot_(const int* n, const float* x, const int* incx, const float* y, const int* incy) {
  float sum = 0.0f;
  for (int i = 0; i < *n; ++i) sum += x[i * *incx] * y[i * *incy];
  return sum;
}
