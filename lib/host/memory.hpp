// Local data movement and reduction for the engine, by memory type: host
// buffers go to the vectorised CPU reducer, device buffers to lib/cuda.
#pragma once

#include <cstddef>

#include "base/types.hpp"

namespace tutti {

// Which memory a buffer is in. Host unless tutti was built with CUDA and
// the pointer is device (or managed) memory.
MemoryType memory_type_of(const void* ptr);

// For a device buffer (cudaMalloc'd: not managed, not host), the device it
// lives on and the calling thread's current device; both -1 otherwise (and
// always without CUDA). A call's device buffers must be on the current
// device: tutti's kernels, copies and stream belong to it, and a pointer of
// another device reaching them is an illegal address that poisons the
// context (api.cpp rejects it first).
struct BufferDevice {
  int buffer = -1;
  int current = -1;
};
BufferDevice buffer_device_of(const void* ptr);

void local_copy(void* dst, MemoryType dst_mem, const void* src, MemoryType src_mem, size_t bytes);
// dst = a op b, elementwise; all three in the same memory type.
void local_reduce(void* dst, const void* a, const void* b, size_t count, Datatype dt, Op op,
                  MemoryType mem);
void local_divide(void* dst, size_t count, Datatype dt, int divisor, MemoryType mem);

}  // namespace tutti
