// The body of tutti's CUDA reduction kernels, as plain __host__ __device__
// code: the kernels in kernels.cu are one-line wrappers around
// elementwise_body(), and the unit tests (tests/unit/test_cuda_host.cpp) run
// the very same function on the host for every (block, thread) of a grid, so
// the index arithmetic, the 16-byte vector path and the scalar head and tail
// are checked on any machine, GPU or not. No CUDA headers are needed here.
//
// Work split of one call on n elements (T of 1, 2, 4 or 8 bytes):
//   - When every pointer has the same address modulo 16 and is aligned to
//     sizeof(T): a scalar head up to the first 16-byte boundary (< 16/sizeof(T)
//     elements), then whole 16-byte packs (one vector load per operand, one
//     vector store per output), then a scalar tail (< 16/sizeof(T) elements).
//   - Otherwise every element is scalar; pointers not even aligned to
//     sizeof(T) are accessed byte-wise (memcpy), so any address works.
// Each part is a grid-stride loop over the global thread index, so any grid
// covers any size, and every element is written by exactly one thread.
//
// Operators are the shared functors of host/reduce_ops.hpp (FuncSum & co.), so
// the device computes bit for bit what the host reducer and the test
// references compute: fp16/bf16 are widened to float, combined, and rounded
// to nearest even once per operation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "host/half.hpp"
#include "host/reduce_ops.hpp"

// Fully unrolled loops on the device keep per-pack arrays in registers (a
// loop left rolled indexes them dynamically, which spills them to local
// memory); the host compiler decides for itself.
#if defined(__CUDA_ARCH__)
#define TUTTI_UNROLL _Pragma("unroll")
#else
#define TUTTI_UNROLL
#endif

namespace tutti::cuda {

inline constexpr unsigned kPackBytes = 16;

// What one vector load or store moves (ld.global.v4.u32 on the device).
struct alignas(16) Pack {
  uint32_t word[4];
};

// Element types, numbered like tutti's Datatype (memory_cuda.cpp checks that
// the two agree; this header stays free of the public header and MPI).
enum class ElemType : uint8_t {
  Int8,
  Uint8,
  Int32,
  Uint32,
  Int64,
  Uint64,
  Float16,
  Bfloat16,
  Float32,
  Float64
};
inline constexpr int kNumElemTypes = 10;

// The binary operators of the kernels; TUTTI_AVG reduces as Sum and ends with
// a divide.
enum class ReduceKind : uint8_t { Sum, Prod, Min, Max };
inline constexpr int kNumReduceKinds = 4;

// Calls f.template operator()<T>() with the C++ type of `t`.
template <typename F>
decltype(auto) visit_elem_type(ElemType t, F&& f) {
  switch (t) {
    case ElemType::Int8: return f.template operator()<int8_t>();
    case ElemType::Uint8: return f.template operator()<uint8_t>();
    case ElemType::Int32: return f.template operator()<int32_t>();
    case ElemType::Uint32: return f.template operator()<uint32_t>();
    case ElemType::Int64: return f.template operator()<int64_t>();
    case ElemType::Uint64: return f.template operator()<uint64_t>();
    case ElemType::Float16: return f.template operator()<Half>();
    case ElemType::Bfloat16: return f.template operator()<BFloat16>();
    case ElemType::Float32: return f.template operator()<float>();
    case ElemType::Float64: return f.template operator()<double>();
  }
  return f.template operator()<uint8_t>();
}

// A binary functor (FuncSum<T>, ...) as an elementwise operator.
template <typename T, typename F>
struct BinaryOp {
  static constexpr int kInputs = 2;
  F f;
  TUTTI_HD T operator()(T a, T b) const { return f(a, b); }
};

// The last step of TUTTI_AVG: x / divisor; reads one input.
template <typename T>
struct DivideOp {
  static constexpr int kInputs = 1;
  FuncDivide<T> f;
  TUTTI_HD T operator()(T a, T) const { return f(a); }
};

// How one call's n elements split into head, packs and tail (see above).
struct ElementwisePlan {
  size_t n = 0;
  size_t head = 0;        // scalar elements before the first pack
  size_t packs = 0;       // 16-byte packs, starting at element `head`
  size_t tail_begin = 0;  // first element after the packs (head + packs * per pack)
  bool bytewise = false;  // a pointer is not aligned to sizeof(T): memcpy each element

  // Work items of the largest part: a grid larger than this has idle threads.
  TUTTI_HD size_t max_part() const {
    const size_t tail = n - tail_begin;
    size_t m = head > packs ? head : packs;
    return m > tail ? m : tail;
  }
};

// Plans a call with outputs out0 (and out1, if non-null) and inputs in0 (and
// in1, if non-null: unary operators pass null). Addresses only, never read.
template <typename T>
TUTTI_HD ElementwisePlan plan_elementwise(const void* out0, const void* out1, const void* in0,
                                          const void* in1, size_t n) {
  static_assert(kPackBytes % sizeof(T) == 0, "element size must divide the pack size");
  constexpr size_t kPerPack = kPackBytes / sizeof(T);
  ElementwisePlan plan;
  plan.n = n;
  const uintptr_t addrs[4] = {reinterpret_cast<uintptr_t>(out0), reinterpret_cast<uintptr_t>(out1),
                              reinterpret_cast<uintptr_t>(in0), reinterpret_cast<uintptr_t>(in1)};
  const uintptr_t phase = addrs[0] % kPackBytes;
  bool congruent = true;
  for (uintptr_t a : addrs) {
    if (a == 0) continue;  // absent operand
    if (a % sizeof(T) != 0) plan.bytewise = true;
    if (a % kPackBytes != phase) congruent = false;
  }
  if (plan.bytewise || !congruent) return plan;  // all scalar: head = packs = tail_begin = 0
  size_t head = (kPackBytes - phase) % kPackBytes / sizeof(T);
  if (head > n) head = n;
  plan.head = head;
  plan.packs = (n - head) / kPerPack;
  plan.tail_begin = head + plan.packs * kPerPack;
  return plan;
}

// Blocks for a launch of `threads` per block: enough for the largest part,
// at most `max_blocks` (the device's resident capacity), at least one.
TUTTI_HD unsigned grid_blocks(const ElementwisePlan& plan, unsigned threads, unsigned max_blocks) {
  const size_t need = (plan.max_part() + threads - 1) / threads;
  if (need == 0) return 1;
  return need < max_blocks ? static_cast<unsigned>(need) : max_blocks;
}

// One call's operands. Byte pointers: the plan decides how they are read.
struct ElementwiseArgs {
  char* out0 = nullptr;
  char* out1 = nullptr;       // optional second output (fused reduce-and-copy)
  const char* in0 = nullptr;
  const char* in1 = nullptr;  // second operand of binary operators
  ElementwisePlan plan;
};

// Scalar access; kBytewise makes no alignment assumption at all. A template
// parameter rather than a run-time flag: given both forms of the load in one
// function, the compiler merges them into the byte-wise one.
template <typename T, bool kBytewise>
TUTTI_HD T load_element(const char* p) {
  if constexpr (kBytewise) {
    T v;
    memcpy(&v, p, sizeof(T));
    return v;
  } else {
    return *reinterpret_cast<const T*>(p);
  }
}

template <typename T, bool kBytewise>
TUTTI_HD void store_element(char* p, T v) {
  if constexpr (kBytewise)
    memcpy(p, &v, sizeof(T));
  else
    *reinterpret_cast<T*>(p) = v;
}

template <typename T, bool kBytewise, typename Op>
TUTTI_HD void elementwise_scalar(const ElementwiseArgs& a, const Op& op, size_t i) {
  const size_t off = i * sizeof(T);
  const T x = load_element<T, kBytewise>(a.in0 + off);
  T r;
  if constexpr (Op::kInputs == 2)
    r = op(x, load_element<T, kBytewise>(a.in1 + off));
  else
    r = op(x, x);
  store_element<T, kBytewise>(a.out0 + off, r);
  if (a.out1) store_element<T, kBytewise>(a.out1 + off, r);
}

// Packs p, p + stride, ..., (kUnroll of them): every load is issued before
// the first store, so each thread keeps several 16-byte loads in flight.
template <typename T, int kUnroll, typename Op>
TUTTI_HD void elementwise_packs(const ElementwiseArgs& a, const Op& op, size_t p, size_t stride) {
  constexpr size_t kPerPack = kPackBytes / sizeof(T);
  const char* in0 = a.in0 + a.plan.head * sizeof(T);
  const char* in1 = a.in1 + a.plan.head * sizeof(T);
  Pack px[kUnroll], py[kUnroll];
  TUTTI_UNROLL
  for (int u = 0; u < kUnroll; ++u) {
    const size_t off = (p + u * stride) * kPackBytes;
    px[u] = *reinterpret_cast<const Pack*>(in0 + off);
    if constexpr (Op::kInputs == 2) py[u] = *reinterpret_cast<const Pack*>(in1 + off);
  }
  TUTTI_UNROLL
  for (int u = 0; u < kUnroll; ++u) {
    T x[kPerPack], r[kPerPack];
    memcpy(x, &px[u], kPackBytes);
    if constexpr (Op::kInputs == 2) {
      T y[kPerPack];
      memcpy(y, &py[u], kPackBytes);
      TUTTI_UNROLL
      for (size_t e = 0; e < kPerPack; ++e) r[e] = op(x[e], y[e]);
    } else {
      TUTTI_UNROLL
      for (size_t e = 0; e < kPerPack; ++e) r[e] = op(x[e], x[e]);
    }
    Pack pr;
    memcpy(&pr, r, kPackBytes);
    const size_t off = a.plan.head * sizeof(T) + (p + u * stride) * kPackBytes;
    *reinterpret_cast<Pack*>(a.out0 + off) = pr;
    if (a.out1) *reinterpret_cast<Pack*>(a.out1 + off) = pr;
  }
}

// Packs handled per loop iteration of one thread in the main loop.
inline constexpr int kPackUnroll = 4;

// What thread `thread` of block `block` does, in a grid of `blocks` blocks of
// `threads` threads: its share of the head, the packs and the tail.
template <typename T, typename Op>
TUTTI_HD void elementwise_body(const ElementwiseArgs& a, const Op& op, unsigned block,
                               unsigned thread, unsigned blocks, unsigned threads) {
  const size_t id = static_cast<size_t>(block) * threads + thread;
  const size_t stride = static_cast<size_t>(blocks) * threads;
  const ElementwisePlan& plan = a.plan;
  for (size_t i = id; i < plan.head; i += stride) elementwise_scalar<T, false>(a, op, i);
  size_t p = id;
  for (; p + (kPackUnroll - 1) * stride < plan.packs; p += kPackUnroll * stride)
    elementwise_packs<T, kPackUnroll>(a, op, p, stride);
  for (; p < plan.packs; p += stride) elementwise_packs<T, 1>(a, op, p, stride);
  // A byte-wise plan has neither head nor packs: everything is this loop.
  if (plan.bytewise) {
    for (size_t i = plan.tail_begin + id; i < plan.n; i += stride)
      elementwise_scalar<T, true>(a, op, i);
  } else {
    for (size_t i = plan.tail_begin + id; i < plan.n; i += stride)
      elementwise_scalar<T, false>(a, op, i);
  }
}

}  // namespace tutti::cuda
