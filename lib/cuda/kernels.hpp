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

// Enqueues out0[i] (and out1[i]) = a[i] op b[i], i < count, on `stream`.
// The grid is what `sm_count` multiprocessors hold at once of this kernel
// (its occupancy, asked of the runtime once per kernel), or less for small
// inputs. out0 may be exactly a or b; any other overlap is not allowed.
// Nothing is launched for count 0.
int enqueue_reduce(const ReduceLaunch& r, CUstream_st* stream, unsigned sm_count);

// Enqueues out[i] = in[i] / divisor (integers truncate), i < count. out may
// be exactly in.
int enqueue_divide(void* out, const void* in, size_t count, ElemType type, int divisor,
                   CUstream_st* stream, unsigned sm_count);

// The grid a launch of `count` float32 sums would get (for tutti-bench).
unsigned reduce_grid_blocks(size_t count, unsigned sm_count);

}  // namespace tutti::cuda
