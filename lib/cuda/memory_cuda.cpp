// host/memory.hpp where tutti is built with CUDA: host buffers still go to the
// host reducer; device buffers to tutti's kernels and copies, enqueued on
// tutti's stream without waiting (see runtime.hpp for the ordering rule).
//
// These functions return nothing (the engine's local steps cannot fail), so
// a CUDA error is noted (runtime.hpp: note_error) and reported by the
// operation when it waits for its device work (call_op.cpp).
#include <cuda.h>  // driver API types only: libcuda is reached through the runtime

#include <cstring>

#include "cuda/kernels.hpp"
#include "cuda/runtime.hpp"
#include "host/copy.hpp"
#include "host/memory.hpp"
#include "host/reduce.hpp"

namespace tutti {
namespace {

static_assert(static_cast<int>(cuda::ElemType::Int8) == static_cast<int>(Datatype::Int8) &&
              static_cast<int>(cuda::ElemType::Uint64) == static_cast<int>(Datatype::Uint64) &&
              static_cast<int>(cuda::ElemType::Float16) == static_cast<int>(Datatype::Float16) &&
              static_cast<int>(cuda::ElemType::Bfloat16) == static_cast<int>(Datatype::Bfloat16) &&
              static_cast<int>(cuda::ElemType::Float64) == static_cast<int>(Datatype::Float64) &&
              cuda::kNumElemTypes == kNumDatatypes,
              "cuda::ElemType must number the types like Datatype");
static_assert(static_cast<int>(cuda::ReduceKind::Sum) == static_cast<int>(Op::Sum) &&
                  static_cast<int>(cuda::ReduceKind::Prod) == static_cast<int>(Op::Prod) &&
                  static_cast<int>(cuda::ReduceKind::Min) == static_cast<int>(Op::Min) &&
                  static_cast<int>(cuda::ReduceKind::Max) == static_cast<int>(Op::Max),
              "cuda::ReduceKind must number the operators like Op");

cuda::ElemType elem_type(Datatype dt) { return static_cast<cuda::ElemType>(dt); }
cuda::ReduceKind reduce_kind(Op op) {
  return op == Op::Avg ? cuda::ReduceKind::Sum : static_cast<cuda::ReduceKind>(op);
}

bool overlaps(const void* a, const void* b, size_t bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + bytes && y < x + bytes;
}

// Where the kernels run: tutti's stream of the current device, and its
// multiprocessor count (the grid size follows from it).
struct Launch {
  cudaStream_t stream = nullptr;
  unsigned sm_count = 1;
};
bool launch_target(Launch& l, const char* what) {
  try {
    l.stream = cuda::stream();
    l.sm_count = static_cast<unsigned>(cuda::device_props(cuda::current_device()).sm_count);
    return true;
  } catch (const Error&) {
    cuda::note_error(cudaErrorInvalidDevice, what);
    return false;
  }
}

// The driver's cuPointerGetAttributes, as UCX uses it: unlike the runtime's
// cudaPointerGetAttributes it never creates a CUDA context, so a program
// that only ever passes host buffers never gets one from tutti (one context
// per rank on device 0 would cost every rank hundreds of MiB of GPU memory).
using PointerGetAttributes = CUresult(CUDAAPI*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);
PointerGetAttributes driver_pointer_attributes() {
  static const PointerGetAttributes fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", &p, 7000,
                                                           cudaEnableDefault, &found);
#else
    const cudaError_t e = cudaGetDriverEntryPoint("cuPointerGetAttributes", &p, cudaEnableDefault,
                                                  &found);
#endif
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return PointerGetAttributes{nullptr};
    }
    return reinterpret_cast<PointerGetAttributes>(p);
  }();
  return fn;
}

}  // namespace

namespace cuda {

Allocation allocation_of(const void* p) {
  PointerGetAttributes get = driver_pointer_attributes();
  if (!p || !get) return {};
  CUdeviceptr start = 0;
  unsigned long long id = 0;
  CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                  CU_POINTER_ATTRIBUTE_BUFFER_ID};
  void* data[2] = {&start, &id};
  if (get(2, attrs, data, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS) return {};
  return {static_cast<uintptr_t>(start), static_cast<uint64_t>(id)};
}

}  // namespace cuda

MemoryType memory_type_of(const void* ptr) {
  if (!ptr || !cuda::available()) return MemoryType::Host;
  // Pinned and registered host memory is host memory: the CPU reads it and
  // every transport moves it. Device and managed memory go to the kernels.
  if (PointerGetAttributes get = driver_pointer_attributes()) {
    unsigned type = 0;
    int managed = 0;
    CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void* data[2] = {&type, &managed};
    // Not a CUDA pointer: success, with the attributes left zero.
    if (get(2, attrs, data, reinterpret_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS) return MemoryType::Host;
    return managed || type == CU_MEMORYTYPE_DEVICE ? MemoryType::Cuda : MemoryType::Host;
  }
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    cudaGetLastError();
    return MemoryType::Host;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged ? MemoryType::Cuda
                                                                                 : MemoryType::Host;
}

// Asked only for buffers memory_type_of called device memory, so a CUDA
// context exists by then.
BufferDevice buffer_device_of(const void* ptr) {
  BufferDevice d;
  if (!ptr || !cuda::available()) return d;
  int ordinal = -1, managed = 0;
  unsigned type = 0;
  if (PointerGetAttributes get = driver_pointer_attributes()) {
    CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void* data[3] = {&type, &managed, &ordinal};
    if (get(3, attrs, data, reinterpret_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS) return d;
    if (managed || type != CU_MEMORYTYPE_DEVICE) return d;
  } else {
    cudaPointerAttributes attr{};
    if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
      cudaGetLastError();
      return d;
    }
    if (attr.type != cudaMemoryTypeDevice) return d;
    ordinal = attr.device;
  }
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess) {
    cudaGetLastError();
    return d;
  }
  d.buffer = ordinal;
  d.current = current;
  return d;
}

void local_copy(void* dst, MemoryType dst_mem, const void* src, MemoryType src_mem, size_t bytes) {
  if (dst == src || bytes == 0) return;
  if (dst_mem == MemoryType::Host && src_mem == MemoryType::Host) {
    host_copy(dst, src, bytes);
    return;
  }
  cudaError_t e = cudaSuccess;
  if (overlaps(dst, src, bytes)) {
    // cudaMemcpy does not allow overlap: go through a stream-ordered temporary.
    Launch l;
    if (!launch_target(l, "local copy")) return;
    void* tmp = nullptr;
    e = cudaMallocAsync(&tmp, bytes, l.stream);
    if (e == cudaSuccess) e = cudaMemcpyAsync(tmp, src, bytes, cudaMemcpyDefault, l.stream);
    if (e == cudaSuccess) e = cudaMemcpyAsync(dst, tmp, bytes, cudaMemcpyDefault, l.stream);
    if (tmp) {
      const cudaError_t f = cudaFreeAsync(tmp, l.stream);
      if (e == cudaSuccess) e = f;
    }
    if (e == cudaSuccess && dst_mem == MemoryType::Host) e = cudaStreamSynchronize(l.stream);
  } else {
    // The host reads a host destination next: wait for it.
    e = cuda::copy(dst, src, bytes, dst_mem == MemoryType::Host);
  }
  if (e != cudaSuccess) cuda::note_error(e, "a local copy");
}

void local_reduce(void* dst, const void* a, const void* b, size_t count, Datatype dt, Op op,
                  MemoryType mem) {
  if (mem == MemoryType::Host) {
    host_reduce(dst, a, b, count, dt, op);
    return;
  }
  Launch l;
  if (!launch_target(l, "a reduction")) return;
  cuda::ReduceLaunch r;
  r.out0 = dst;
  r.a = a;
  r.b = b;
  r.count = count;
  r.type = elem_type(dt);
  r.op = reduce_kind(op);
  const int e = cuda::enqueue_reduce(r, l.stream, l.sm_count);
  if (e != cudaSuccess) cuda::note_error(static_cast<cudaError_t>(e), "the reduction kernel");
}

void local_divide(void* dst, size_t count, Datatype dt, int divisor, MemoryType mem) {
  if (mem == MemoryType::Host) {
    host_divide(dst, count, dt, divisor);
    return;
  }
  Launch l;
  if (!launch_target(l, "a division")) return;
  const int e = cuda::enqueue_divide(dst, dst, count, elem_type(dt), divisor, l.stream, l.sm_count);
  if (e != cudaSuccess) cuda::note_error(static_cast<cudaError_t>(e), "the division kernel");
}

}  // namespace tutti
