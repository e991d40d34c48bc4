// tutti's CUDA reduction kernels: one templated kernel over every element
// type and operator, whose body (elementwise.hpp) is shared with the host
// unit tests. Compiled by nvcc for sm_80, sm_90 and PTX (lib/cuda/meson.build).
#include <cuda_runtime.h>

#include "cuda/elementwise.hpp"
#include "cuda/kernels.hpp"

namespace tutti::cuda {
namespace {

template <typename T, typename Op>
__global__ void __launch_bounds__(kThreadsPerBlock)
    elementwise_kernel(const ElementwiseArgs args, const Op op) {
  elementwise_body<T>(args, op, blockIdx.x, threadIdx.x, gridDim.x, blockDim.x);
}

// Blocks of this kernel one multiprocessor holds at once (registers decide),
// asked once per kernel; devices of one process are assumed alike.
template <typename T, typename Op>
unsigned blocks_per_sm() {
  static const unsigned n = [] {
    int b = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, elementwise_kernel<T, Op>,
                                                      kThreadsPerBlock, 0) != cudaSuccess) {
      cudaGetLastError();
      b = 1;
    }
    return static_cast<unsigned>(b > 0 ? b : 1);
  }();
  return n;
}

template <typename T, typename Op>
int launch(const ElementwiseArgs& args, const Op& op, cudaStream_t stream, unsigned sm_count) {
  if (args.plan.n == 0) return cudaSuccess;
  const unsigned max_blocks = (sm_count ? sm_count : 1) * blocks_per_sm<T, Op>();
  const unsigned blocks = grid_blocks(args.plan, kThreadsPerBlock, max_blocks);
  // cudaLaunchKernel returns the launch's own error. A <<<>>> launch
  // checked with cudaGetLastError would instead report (and clear) an
  // error the application left pending from its own earlier work: tutti
  // would fail for it, and the application would never see it.
  ElementwiseArgs a = args;
  Op o = op;
  void* params[] = {&a, &o};
  const cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void*>(&elementwise_kernel<T, Op>),
                                         dim3(blocks), dim3(kThreadsPerBlock), params, 0, stream);
  if (e != cudaSuccess) cudaGetLastError();  // tutti's own error: clear it
  return e;
}

template <typename T, template <typename> class F>
int launch_binary(const ReduceLaunch& r, cudaStream_t stream, unsigned sm_count) {
  ElementwiseArgs args;
  args.out0 = static_cast<char*>(r.out0);
  args.out1 = static_cast<char*>(r.out1);
  args.in0 = static_cast<const char*>(r.a);
  args.in1 = static_cast<const char*>(r.b);
  args.plan = plan_elementwise<T>(r.out0, r.out1, r.a, r.b, r.count);
  return launch<T>(args, BinaryOp<T, F<T>>{}, stream, sm_count);
}

}  // namespace

int enqueue_reduce(const ReduceLaunch& r, CUstream_st* stream, unsigned sm_count) {
  return visit_elem_type(r.type, [&]<typename T>() {
    switch (r.op) {
      case ReduceKind::Sum: return launch_binary<T, FuncSum>(r, stream, sm_count);
      case ReduceKind::Prod: return launch_binary<T, FuncProd>(r, stream, sm_count);
      case ReduceKind::Min: return launch_binary<T, FuncMin>(r, stream, sm_count);
      case ReduceKind::Max: return launch_binary<T, FuncMax>(r, stream, sm_count);
    }
    return static_cast<int>(cudaErrorInvalidValue);
  });
}

unsigned reduce_grid_blocks(size_t count, unsigned sm_count) {
  using Op = BinaryOp<float, FuncSum<float>>;
  ElementwisePlan plan;
  plan.n = count;
  plan.packs = count / (kPackBytes / sizeof(float));
  plan.tail_begin = plan.packs * (kPackBytes / sizeof(float));
  return grid_blocks(plan, kThreadsPerBlock, (sm_count ? sm_count : 1) * blocks_per_sm<float, Op>());
}

int enqueue_divide(void* out, const void* in, size_t count, ElemType type, int divisor,
                   CUstream_st* stream, unsigned sm_count) {
  if (divisor == 0) return cudaErrorInvalidValue;
  return visit_elem_type(type, [&]<typename T>() {
    ElementwiseArgs args;
    args.out0 = static_cast<char*>(out);
    args.in0 = static_cast<const char*>(in);
    args.plan = plan_elementwise<T>(out, nullptr, in, nullptr, count);
    return launch<T>(args, DivideOp<T>{FuncDivide<T>{divisor}}, stream, sm_count);
  });
}

}  // namespace tutti::cuda
