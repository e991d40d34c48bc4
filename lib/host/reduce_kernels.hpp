// The loops behind host_reduce, as templates that each instruction-set
// translation unit (host_reduce_{generic,avx2,avx512}.cpp) instantiates with
// its own tag type.
//
// Why a tag: those TUs are compiled with different -m flags. An inline
// function or template instantiation with external linkage would be emitted
// by several of them and the linker would keep any one copy, so code built
// with -mavx512f could end up behind the generic entry point and fault on an
// older CPU. Every template here takes the tag, which each TU declares in an
// anonymous namespace, so all of its instantiations have internal linkage.
// The shared scalar functors (host/reduce_ops.hpp) are not templated on the tag,
// so they are declared extern templates below: a TU that does not inline one
// (any TU at -O0) calls the copy host/reduce_generic.cpp instantiates with
// baseline flags instead of emitting its own. The loops are [[gnu::flatten]]
// so that, when optimising, the functors and the conversions they call are
// inlined rather than called.
//
// A tag provides:
//   static constexpr const char* kName;
//   template <class T, class F>
//   static size_t reduce_vectors(T* d, const T* a, const T* b, size_t n);
//   template <class T>
//   static size_t divide_vectors(T* d, size_t n, int divisor);
// which handle a prefix with hand-written vector code (d may be exactly a or
// b) and return its length; the rest is left to the auto-vectorised loops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "base/types.hpp"
#include "host/reduce_ops.hpp"

namespace tutti {

using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t n);
using DivideFn = void (*)(void* dst, size_t n, int divisor);

// Sum, Prod, Min, Max, indexed by Op; Op::Avg uses the Sum entry.
inline constexpr int kNumReduceOps = 4;

struct HostReduceTable {
  ReduceFn reduce[kNumDatatypes][kNumReduceOps];
  DivideFn divide[kNumDatatypes];
  const char* isa;
};

// One per instruction set; the x86 ones exist only where TUTTI_X86_KERNELS.
const HostReduceTable& host_reduce_table_generic();
const HostReduceTable& host_reduce_table_avx2();
const HostReduceTable& host_reduce_table_avx512();

// Explicit instantiations of every functor the tables use, for every host
// type (the types of HostTypes below): `extern` here, definitions in
// host/reduce_generic.cpp.
#define TUTTI_HOST_FUNCTORS_FOR(EXTERN, T) \
  EXTERN template struct FuncSum<T>;       \
  EXTERN template struct FuncProd<T>;      \
  EXTERN template struct FuncMin<T>;       \
  EXTERN template struct FuncMax<T>;       \
  EXTERN template struct FuncDivide<T>;
#define TUTTI_HOST_FUNCTORS(EXTERN)          \
  TUTTI_HOST_FUNCTORS_FOR(EXTERN, int8_t)    \
  TUTTI_HOST_FUNCTORS_FOR(EXTERN, uint8_t)   \
  TUTTI_HOST_FUNCTORS_FOR(EXTERN, int32_t)   \
  TUTTI_HOST_FUNCTORS_FOR(EXTERN, uint32_t)  \
  TUTTI_HOST_FUNCTORS_FOR(EXTERN, int64_t)   \
  TUTTI_HOST_FUNCTORS_FOR(EXTERN, uint64_t)  \
  TUTTI_HOST_FUNCTORS_FOR(EXTERN, Half)      \
  TUTTI_HOST_FUNCTORS_FOR(EXTERN, BFloat16)  \
  TUTTI_HOST_FUNCTORS_FOR(EXTERN, float)     \
  TUTTI_HOST_FUNCTORS_FOR(EXTERN, double)
TUTTI_HOST_FUNCTORS(extern)

namespace host_reduce_detail {

template <Datatype D, typename T>
struct Entry {
  static constexpr Datatype kDatatype = D;
  using Type = T;
};
template <typename... Entries>
struct TypeList {};

using HostTypes = TypeList<Entry<Datatype::Int8, int8_t>, Entry<Datatype::Uint8, uint8_t>,
                           Entry<Datatype::Int32, int32_t>, Entry<Datatype::Uint32, uint32_t>,
                           Entry<Datatype::Int64, int64_t>, Entry<Datatype::Uint64, uint64_t>,
                           Entry<Datatype::Float16, Half>, Entry<Datatype::Bfloat16, BFloat16>,
                           Entry<Datatype::Float32, float>, Entry<Datatype::Float64, double>>;

template <class... Es>
constexpr bool covers_every_datatype(TypeList<Es...>) {
  bool seen[kNumDatatypes] = {};
  ((seen[static_cast<int>(Es::kDatatype)] = true), ...);
  for (bool s : seen)
    if (!s) return false;
  return sizeof...(Es) == kNumDatatypes;
}
// A table entry left null would crash at run time instead.
static_assert(covers_every_datatype(HostTypes{}), "HostTypes must list every Datatype once");

// One loop per aliasing form, so that each can promise __restrict and be
// vectorised; operand order is kept (min/max of +0/-0 are not commutative).
template <class Isa, typename T, class F>
[[gnu::flatten]] void loop_distinct(T* __restrict d, const T* __restrict a, const T* __restrict b,
                                    size_t n) {
  const F f{};
  for (size_t i = 0; i < n; ++i) d[i] = f(a[i], b[i]);
}
template <class Isa, typename T, class F>
[[gnu::flatten]] void loop_into_a(T* __restrict d, const T* __restrict b, size_t n) {
  const F f{};
  for (size_t i = 0; i < n; ++i) d[i] = f(d[i], b[i]);
}
template <class Isa, typename T, class F>
[[gnu::flatten]] void loop_into_b(T* __restrict d, const T* __restrict a, size_t n) {
  const F f{};
  for (size_t i = 0; i < n; ++i) d[i] = f(a[i], d[i]);
}
template <class Isa, typename T, class F>
[[gnu::flatten]] void loop_self(T* d, size_t n) {
  const F f{};
  for (size_t i = 0; i < n; ++i) d[i] = f(d[i], d[i]);
}

template <class Isa, typename T, class F>
void reduce(void* dst, const void* a, const void* b, size_t n) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  const size_t done = Isa::template reduce_vectors<T, F>(d, x, y, n);
  d += done;
  x += done;
  y += done;
  n -= done;
  if (d == x && d == y)
    loop_self<Isa, T, F>(d, n);
  else if (d == x)
    loop_into_a<Isa, T, F>(d, y, n);
  else if (d == y)
    loop_into_b<Isa, T, F>(d, x, n);
  else
    loop_distinct<Isa, T, F>(d, x, y, n);
}

template <class Isa, typename T>
[[gnu::flatten]] void divide_loop(T* d, size_t n, int divisor) {
  if constexpr (std::is_integral_v<T> && sizeof(T) <= 4) {
    if (divisor > 0) {
      // Integer division does not vectorise. A quotient of 32-bit values
      // computed in double is within far less than 1/divisor of the exact
      // one, so truncating it gives exactly the integer quotient.
      using Wide = std::conditional_t<std::is_same_v<T, uint32_t>, int64_t, int32_t>;
      const double dd = divisor;
      for (size_t i = 0; i < n; ++i)
        d[i] = static_cast<T>(static_cast<Wide>(static_cast<double>(d[i]) / dd));
      return;
    }
  }
  const FuncDivide<T> f{divisor};
  for (size_t i = 0; i < n; ++i) d[i] = f(d[i]);
}

template <class Isa, typename T>
void divide(void* dst, size_t n, int divisor) {
  T* d = static_cast<T*>(dst);
  const size_t done = Isa::template divide_vectors<T>(d, n, divisor);
  divide_loop<Isa, T>(d + done, n - done, divisor);
}

template <class Isa, class E>
constexpr void fill_entry(HostReduceTable& table) {
  using T = typename E::Type;
  auto& row = table.reduce[static_cast<int>(E::kDatatype)];
  row[static_cast<int>(Op::Sum)] = &reduce<Isa, T, FuncSum<T>>;
  row[static_cast<int>(Op::Prod)] = &reduce<Isa, T, FuncProd<T>>;
  row[static_cast<int>(Op::Min)] = &reduce<Isa, T, FuncMin<T>>;
  row[static_cast<int>(Op::Max)] = &reduce<Isa, T, FuncMax<T>>;
  table.divide[static_cast<int>(E::kDatatype)] = &divide<Isa, T>;
}

template <class Isa, class... Es>
constexpr HostReduceTable make_table(TypeList<Es...>) {
  HostReduceTable table{};
  (fill_entry<Isa, Es>(table), ...);
  table.isa = Isa::kName;
  return table;
}

}  // namespace host_reduce_detail

// The table for tag Isa; use as `static constexpr auto kTable = make_table<Isa>();`.
template <class Isa>
constexpr HostReduceTable make_table() {
  return host_reduce_detail::make_table<Isa>(host_reduce_detail::HostTypes{});
}

}  // namespace tutti
