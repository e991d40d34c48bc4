// Launching the reduction kernels (kernels.cu). No CUDA headers: callers pass
// the stream as the runtime's opaque CUstream_st pointer (cudaStream_t) and
// get a cudaError_t back as an int (0 = success).
#pragma once

#include <cstddef>

#include "cuda/elementwise.hpp"

struct CUstream_st;

namespace tutti::cuda {

// Threads per block of every elementwise launch.
inline constexpr unsigned kThreadsPerBlock = 256;

struct ReduceLaunch {
  void* out0 = nullptr;
  void* out1 = nullptr;  // optional: the same result written a second time
  const void* a = nullptr;
  const void* b = nullptr;
  size_t count = 0;
  ElemType type = ElemType::Float32;
  ReduceKind op = ReduceKind::Sum;
};

// Enqueues out0[i] (and out1[i]) = a[i] op b[i], i < count, on `stream`, in a
// grid of at most `max_blocks` blocks. out0 may be exactly a or b; any
// other overlap is not allowed. Nothing is launched for count 0.
int enqueue_reduce(const ReduceLaunch& r, CUstream_st* stream, unsigned max_blocks);

// Enqueues out[i] = in[i] / divisor (integers truncate), i < count. out may
// be exactly in.
int enqueue_divide(void* out, const void* in, size_t count, ElemType type, int divisor,
                   CUstream_st* stream, unsigned max_blocks);

}  // namespace tutti::cuda
