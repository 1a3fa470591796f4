#include "fixture_shim.h"

// c10 numbering: float32 is 6, CPU is 0.
extern "C" int32_t aoti_torch_dtype_float32(void) { return 6; }
extern "C" int32_t aoti_torch_device_type_cpu(void) { return 0; }

// One thread-local registry: whole-archive linking must keep exactly one definer.
thread_local int aoti_shim_fixture_registry = 0;
