// Local data movement and reduction for the engine, by memory type: host
// buffers go to the vectorised CPU reducer, device buffers to lib/cuda.
#pragma once

#include <cstddef>

#include "base/types.hpp"

namespace tutti {

// Which memory a buffer is in. Host unless tutti was built with CUDA and
// the pointer is device (or managed) memory.
MemoryType memory_type_of(const void* ptr);

void local_copy(void* dst, MemoryType dst_mem, const void* src, MemoryType src_mem, size_t bytes);
// dst = a op b, elementwise; all three in the same memory type.
void local_reduce(void* dst, const void* a, const void* b, size_t count, Datatype dt, Op op,
                  MemoryType mem);
void local_divide(void* dst, size_t count, Datatype dt, int divisor, MemoryType mem);

}  // namespace tutti
