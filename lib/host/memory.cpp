#include "host/memory.hpp"

#include "base/status.hpp"
#include "host/copy.hpp"
#include "host/reduce.hpp"
#include "tutti_config.h"

namespace tutti {

// With CUDA these dispatch on the memory type in lib/cuda/memory_cuda.cpp;
// without it every buffer is host memory.
#if !TUTTI_HAVE_CUDA
MemoryType memory_type_of(const void*) { return MemoryType::Host; }

BufferDevice buffer_device_of(const void*) { return {}; }

void local_copy(void* dst, MemoryType, const void* src, MemoryType, size_t bytes) {
  host_copy(dst, src, bytes);
}

void local_reduce(void* dst, const void* a, const void* b, size_t count, Datatype dt, Op op,
                  MemoryType) {
  host_reduce(dst, a, b, count, dt, op);
}

void local_divide(void* dst, size_t count, Datatype dt, int divisor, MemoryType) {
  host_divide(dst, count, dt, divisor);
}
#endif

}  // namespace tutti
