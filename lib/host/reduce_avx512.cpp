// AVX-512 (F, BW, VL, DQ) build of the host reducer, compiled with those -m
// flags. Everything defined here must stay in the anonymous namespace (see
// host/reduce_kernels.hpp). Plain types are auto-vectorised; fp16 and bf16
// get explicit code, since the compiler cannot vectorise their scalar
// conversions.
// mpi.h (via base/types.hpp) would otherwise bring in the MPI C++ bindings: inline
// functions that this TU, built with wider -m flags, must not emit.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which it
// then reports as uninitialized (GCC PR 105593, fixed in later releases).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "host/reduce_kernels.hpp"

namespace tutti {
namespace {

template <typename T>
constexpr bool kSixteenBitFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// fp16: F16C conversions, 16 elements a step.
struct HalfSteps {
  static constexpr size_t kStep = 16;

  static __m256i load(const Half* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static void store(Half* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }

  static __m256i narrow(__m512 x) {
    const __m256i h = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT);
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    if (nan == 0) [[likely]]
      return h;
    // The hardware keeps the NaN payload's top bits; float_to_half returns
    // the canonical quiet NaN with the sign kept.
    const __m256i canonical =
        _mm256_or_si256(_mm256_and_si256(h, _mm256_set1_epi16(static_cast<int16_t>(0x8000))),
                        _mm256_set1_epi16(0x7e00));
    return _mm256_mask_blend_epi16(nan, h, canonical);
  }

  template <class F>
  static void reduce(Half* d, const Half* a, const Half* b) {
    const __m256i ra = load(a);
    const __m256i rb = load(b);
    const __m512 fa = _mm512_cvtph_ps(ra);
    const __m512 fb = _mm512_cvtph_ps(rb);
    if constexpr (std::is_same_v<F, FuncSum<Half>>) {
      store(d, narrow(_mm512_add_ps(fa, fb)));
    } else if constexpr (std::is_same_v<F, FuncProd<Half>>) {
      store(d, narrow(_mm512_mul_ps(fa, fb)));
    } else if constexpr (std::is_same_v<F, FuncMin<Half>>) {
      // Select the original bits: the functor returns one of its inputs,
      // and a round trip through float would quieten a signalling NaN.
      store(d, _mm256_mask_blend_epi16(_mm512_cmp_ps_mask(fb, fa, _CMP_LT_OQ), ra, rb));
    } else {
      static_assert(std::is_same_v<F, FuncMax<Half>>);
      store(d, _mm256_mask_blend_epi16(_mm512_cmp_ps_mask(fa, fb, _CMP_LT_OQ), ra, rb));
    }
  }

  static void divide(Half* d, __m512 divisor) {
    store(d, narrow(_mm512_div_ps(_mm512_cvtph_ps(load(d)), divisor)));
  }
};

// bf16: the top half of a float, 32 elements a step. The even and the odd
// elements are widened in place (one shift or mask each) and the two
// results merged back with one blend, so no lane shuffles are needed.
struct Bf16Steps {
  static constexpr size_t kStep = 32;
  static constexpr __mmask32 kOddWords = 0xaaaaaaaa;

  static __m512i load(const BFloat16* p) { return _mm512_loadu_si512(p); }
  static void store(BFloat16* p, __m512i v) { _mm512_storeu_si512(p, v); }
  static __m512 even(__m512i v) { return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)); }
  static __m512 odd(__m512i v) {
    return _mm512_castsi512_ps(
        _mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xffff0000))));
  }
  // Takes the results from the high half of each 32-bit lane.
  static __m512i merge(__m512i even_lanes, __m512i odd_lanes) {
    return _mm512_mask_blend_epi16(kOddWords, _mm512_srli_epi32(even_lanes, 16), odd_lanes);
  }

  // float_to_bfloat16 into the high half of each 32-bit lane: integer round
  // to nearest even (vcvtneps2bf16 would flush subnormals). Its NaN case
  // needs no code here: every float in this file comes from bf16 operands,
  // so a NaN is quiet with a zero low half, which rounding leaves unchanged,
  // just as float_to_bfloat16 returns it.
  static __m512i round(__m512 x) {
    const __m512i u = _mm512_castps_si512(x);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    return _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb);
  }
  static __m512i pick(__mmask16 take_b, __m512 a, __m512 b) {
    return _mm512_castps_si512(_mm512_mask_blend_ps(take_b, a, b));
  }

  template <class F>
  static void reduce(BFloat16* d, const BFloat16* a, const BFloat16* b) {
    const __m512i ra = load(a);
    const __m512i rb = load(b);
    const __m512 ae = even(ra), ao = odd(ra);
    const __m512 be = even(rb), bo = odd(rb);
    if constexpr (std::is_same_v<F, FuncSum<BFloat16>>) {
      store(d, merge(round(_mm512_add_ps(ae, be)), round(_mm512_add_ps(ao, bo))));
    } else if constexpr (std::is_same_v<F, FuncProd<BFloat16>>) {
      store(d, merge(round(_mm512_mul_ps(ae, be)), round(_mm512_mul_ps(ao, bo))));
    } else if constexpr (std::is_same_v<F, FuncMin<BFloat16>>) {
      // Select, don't round: the functor returns one of its inputs.
      store(d, merge(pick(_mm512_cmp_ps_mask(be, ae, _CMP_LT_OQ), ae, be),
                     pick(_mm512_cmp_ps_mask(bo, ao, _CMP_LT_OQ), ao, bo)));
    } else {
      static_assert(std::is_same_v<F, FuncMax<BFloat16>>);
      store(d, merge(pick(_mm512_cmp_ps_mask(ae, be, _CMP_LT_OQ), ae, be),
                     pick(_mm512_cmp_ps_mask(ao, bo, _CMP_LT_OQ), ao, bo)));
    }
  }

  static void divide(BFloat16* d, __m512 divisor) {
    const __m512i r = load(d);
    store(d, merge(round(_mm512_div_ps(even(r), divisor)), round(_mm512_div_ps(odd(r), divisor))));
  }
};

template <typename T>
using Steps = std::conditional_t<std::is_same_v<T, Half>, HalfSteps, Bf16Steps>;

struct Avx512 {
  static constexpr const char* kName = "avx512";

  template <typename T, class F>
  static size_t reduce_vectors(T* d, const T* a, const T* b, size_t n) {
    if constexpr (kSixteenBitFloat<T>) {
      constexpr size_t kStep = Steps<T>::kStep;
      size_t i = 0;
      for (; i + kStep <= n; i += kStep) Steps<T>::template reduce<F>(d + i, a + i, b + i);
      return i;
    } else {
      return 0;
    }
  }

  template <typename T>
  static size_t divide_vectors(T* d, size_t n, int divisor) {
    if constexpr (kSixteenBitFloat<T>) {
      constexpr size_t kStep = Steps<T>::kStep;
      const __m512 div = _mm512_set1_ps(static_cast<float>(divisor));
      size_t i = 0;
      for (; i + kStep <= n; i += kStep) Steps<T>::divide(d + i, div);
      return i;
    } else {
      return 0;
    }
  }
};

}  // namespace

const HostReduceTable& host_reduce_table_avx512() {
  static constexpr HostReduceTable kTable = make_table<Avx512>();
  return kTable;
}

}  // namespace tutti
