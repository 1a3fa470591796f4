"""A CUDA shim project built from the nvcc wheels."""
