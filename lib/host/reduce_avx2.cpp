// AVX2 + FMA + F16C build of the host reducer, compiled with those -m flags.
// Everything defined here must stay in the anonymous namespace (see
// host/reduce_kernels.hpp). Plain types are auto-vectorised; fp16 and bf16
// get explicit code, since the compiler cannot vectorise their scalar
// conversions.
// mpi.h (via base/types.hpp) would otherwise bring in the MPI C++ bindings: inline
// functions that this TU, built with wider -m flags, must not emit.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1

#include <immintrin.h>

#include "host/reduce_kernels.hpp"

namespace tutti {
namespace {

template <typename T>
constexpr bool kSixteenBitFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// fp16: F16C conversions, 8 elements a step.
struct HalfSteps {
  static constexpr size_t kStep = 8;

  static __m128i load(const Half* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  }
  static void store(Half* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }

  static __m128i narrow(__m256 x) {
    const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT);
    if (_mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)) == 0) [[likely]]
      return h;
    // The hardware keeps the NaN payload's top bits; float_to_half returns
    // the canonical quiet NaN with the sign kept.
    const __m128i nan =
        _mm_cmpgt_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7fff)), _mm_set1_epi16(0x7c00));
    const __m128i canonical =
        _mm_or_si128(_mm_and_si128(h, _mm_set1_epi16(static_cast<int16_t>(0x8000))),
                     _mm_set1_epi16(0x7e00));
    return _mm_blendv_epi8(h, canonical, nan);
  }
  // A 32-bit-lane compare mask as a 16-bit-lane one (lanes are 0 or -1).
  static __m128i mask16(__m256 m) {
    const __m256i v = _mm256_castps_si256(m);
    return _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  }

  template <class F>
  static void reduce(Half* d, const Half* a, const Half* b) {
    const __m128i ra = load(a);
    const __m128i rb = load(b);
    const __m256 fa = _mm256_cvtph_ps(ra);
    const __m256 fb = _mm256_cvtph_ps(rb);
    if constexpr (std::is_same_v<F, FuncSum<Half>>) {
      store(d, narrow(_mm256_add_ps(fa, fb)));
    } else if constexpr (std::is_same_v<F, FuncProd<Half>>) {
      store(d, narrow(_mm256_mul_ps(fa, fb)));
    } else if constexpr (std::is_same_v<F, FuncMin<Half>>) {
      // Select the original bits: the functor returns one of its inputs,
      // and a round trip through float would quieten a signalling NaN.
      store(d, _mm_blendv_epi8(ra, rb, mask16(_mm256_cmp_ps(fb, fa, _CMP_LT_OQ))));
    } else {
      static_assert(std::is_same_v<F, FuncMax<Half>>);
      store(d, _mm_blendv_epi8(ra, rb, mask16(_mm256_cmp_ps(fa, fb, _CMP_LT_OQ))));
    }
  }

  static void divide(Half* d, __m256 divisor) {
    store(d, narrow(_mm256_div_ps(_mm256_cvtph_ps(load(d)), divisor)));
  }
};

// bf16: the top half of a float, 16 elements a step. The even and the odd
// elements are widened in place (one shift or mask each) and the two
// results merged back with one blend, so no lane shuffles are needed.
struct Bf16Steps {
  static constexpr size_t kStep = 16;

  static __m256i load(const BFloat16* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static void store(BFloat16* p, __m256i v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  }
  static __m256 even(__m256i v) { return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)); }
  static __m256 odd(__m256i v) {
    return _mm256_castsi256_ps(
        _mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xffff0000))));
  }
  // Takes the results from the high half of each 32-bit lane.
  static __m256i merge(__m256i even_lanes, __m256i odd_lanes) {
    return _mm256_blend_epi16(_mm256_srli_epi32(even_lanes, 16), odd_lanes, 0xaa);
  }

  // float_to_bfloat16 into the high half of each 32-bit lane: integer round
  // to nearest even. Its NaN case needs no code here: every float in this
  // file comes from bf16 operands, so a NaN is quiet with a zero low half,
  // which rounding leaves unchanged, just as float_to_bfloat16 returns it.
  static __m256i round(__m256 x) {
    const __m256i u = _mm256_castps_si256(x);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    return _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
  }
  static __m256i pick(__m256 take_b, __m256 a, __m256 b) {
    return _mm256_castps_si256(_mm256_blendv_ps(a, b, take_b));
  }

  template <class F>
  static void reduce(BFloat16* d, const BFloat16* a, const BFloat16* b) {
    const __m256i ra = load(a);
    const __m256i rb = load(b);
    const __m256 ae = even(ra), ao = odd(ra);
    const __m256 be = even(rb), bo = odd(rb);
    if constexpr (std::is_same_v<F, FuncSum<BFloat16>>) {
      store(d, merge(round(_mm256_add_ps(ae, be)), round(_mm256_add_ps(ao, bo))));
    } else if constexpr (std::is_same_v<F, FuncProd<BFloat16>>) {
      store(d, merge(round(_mm256_mul_ps(ae, be)), round(_mm256_mul_ps(ao, bo))));
    } else if constexpr (std::is_same_v<F, FuncMin<BFloat16>>) {
      // Select, don't round: the functor returns one of its inputs.
      store(d, merge(pick(_mm256_cmp_ps(be, ae, _CMP_LT_OQ), ae, be),
                     pick(_mm256_cmp_ps(bo, ao, _CMP_LT_OQ), ao, bo)));
    } else {
      static_assert(std::is_same_v<F, FuncMax<BFloat16>>);
      store(d, merge(pick(_mm256_cmp_ps(ae, be, _CMP_LT_OQ), ae, be),
                     pick(_mm256_cmp_ps(ao, bo, _CMP_LT_OQ), ao, bo)));
    }
  }

  static void divide(BFloat16* d, __m256 divisor) {
    const __m256i r = load(d);
    store(d, merge(round(_mm256_div_ps(even(r), divisor)), round(_mm256_div_ps(odd(r), divisor))));
  }
};

template <typename T>
using Steps = std::conditional_t<std::is_same_v<T, Half>, HalfSteps, Bf16Steps>;

struct Avx2 {
  static constexpr const char* kName = "avx2";

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
      const __m256 div = _mm256_set1_ps(static_cast<float>(divisor));
      size_t i = 0;
      for (; i + kStep <= n; i += kStep) Steps<T>::divide(d + i, div);
      return i;
    } else {
      return 0;
    }
  }
};

}  // namespace

const HostReduceTable& host_reduce_table_avx2() {
  static constexpr HostReduceTable kTable = make_table<Avx2>();
  return kTable;
}

}  // namespace tutti
