// Per-element reduction functors, shared by the host reducer, the CUDA
// kernels and the test references. Integers wrap (computed in the unsigned
// type, so no signed-overflow UB); fp16/bf16 compute in float and round to
// nearest even once per operation.
#pragma once

#include <type_traits>

#include "host/half.hpp"

namespace tutti {

// How an element is loaded for arithmetic and stored back.
template <typename T>
struct Arith {
  using Compute = T;
  static TUTTI_HD Compute load(T x) { return x; }
  static TUTTI_HD T store(Compute x) { return x; }
};
template <>
struct Arith<Half> {
  using Compute = float;
  static TUTTI_HD float load(Half x) { return half_to_float(x); }
  static TUTTI_HD Half store(float x) { return float_to_half(x); }
};
template <>
struct Arith<BFloat16> {
  using Compute = float;
  static TUTTI_HD float load(BFloat16 x) { return bfloat16_to_float(x); }
  static TUTTI_HD BFloat16 store(float x) { return float_to_bfloat16(x); }
};

template <typename C>
TUTTI_HD C wrap_add(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename C>
TUTTI_HD C wrap_mul(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    // Promote to at least unsigned int so uint8/uint16 products do not
    // promote to (signed) int and overflow.
    using U = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

template <typename T>
struct FuncSum {
  TUTTI_HD T operator()(T a, T b) const {
    using A = Arith<T>;
    return A::store(wrap_add(A::load(a), A::load(b)));
  }
};
template <typename T>
struct FuncProd {
  TUTTI_HD T operator()(T a, T b) const {
    using A = Arith<T>;
    return A::store(wrap_mul(A::load(a), A::load(b)));
  }
};
template <typename T>
struct FuncMin {
  TUTTI_HD T operator()(T a, T b) const {
    using A = Arith<T>;
    return A::load(b) < A::load(a) ? b : a;
  }
};
template <typename T>
struct FuncMax {
  TUTTI_HD T operator()(T a, T b) const {
    using A = Arith<T>;
    return A::load(a) < A::load(b) ? b : a;
  }
};

// The last step of TUTTI_AVG: the (already summed) value divided by the
// number of ranks; integers truncate toward zero.
template <typename T>
struct FuncDivide {
  int divisor;
  TUTTI_HD T operator()(T x) const {
    using A = Arith<T>;
    using C = typename A::Compute;
    if constexpr (std::is_integral_v<C>) {
      // Divide in 64 bits: the divisor (rank count) need not fit in C.
      if constexpr (std::is_signed_v<C>)
        return static_cast<C>(static_cast<long long>(x) / static_cast<long long>(divisor));
      else
        return static_cast<C>(static_cast<unsigned long long>(x) /
                              static_cast<unsigned long long>(divisor));
    } else {
      return A::store(A::load(x) / static_cast<C>(divisor));
    }
  }
};

}  // namespace tutti
