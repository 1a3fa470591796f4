#include <cstdio>

#include "fixture_shim.h"

int main() {
  std::printf("dtype_float32=%d device_type_cpu=%d\n", aoti_torch_dtype_float32(), aoti_torch_device_type_cpu());
  return aoti_torch_dtype_float32() == 6 && aoti_torch_device_type_cpu() == 0 ? 0 : 1;
}
