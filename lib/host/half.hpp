// IEEE binary16 and bfloat16 storage types with round-to-nearest-even
// conversions. Plain bit manipulation so that the same code runs on the host
// (reference, unit tests, CPU reduction tail) and in CUDA kernels.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TUTTI_HD __host__ __device__ __forceinline__
#else
#define TUTTI_HD inline
#endif

namespace tutti {

struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

TUTTI_HD uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
TUTTI_HD float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// In a kernel the conversions are one instruction each (cvt, round to
// nearest even, subnormals kept, any NaN to the canonical one): the bit
// manipulation below, with its branches and loop, made the float16 reduce
// kernel 3-4x slower than bfloat16's on an H200 (docs/CUDA.md). The host
// keeps the portable code; the kernels' tests compare the two.
TUTTI_HD float half_to_float(Half h) {
#if defined(__CUDA_ARCH__)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
  return f;
#else
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t exp = (h.bits >> 10) & 0x1fu;
  uint32_t mant = h.bits & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));  // inf / nan
  if (exp != 0) return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);  // signed zero
  // Subnormal: normalise the mantissa.
  int e = -1;
  do {
    ++e;
    mant <<= 1;
  } while ((mant & 0x400u) == 0);
  return bits_float(sign | static_cast<uint32_t>(112 - e) << 23 | ((mant & 0x3ffu) << 13));
#endif
}

TUTTI_HD Half float_to_half(float f) {
#if defined(__CUDA_ARCH__)
  uint16_t bits;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(f));
  return Half{bits};
#else
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return Half{static_cast<uint16_t>(sign | 0x7e00u)};  // quiet nan
  if (abs >= 0x477ff000u) return Half{static_cast<uint16_t>(sign | 0x7c00u)};  // overflow to inf
  if (abs < 0x38800000u) {
    // Result is subnormal or zero: shift the full mantissa down, rounding to
    // nearest even on the bits shifted out.
    if (abs < 0x33000000u) return Half{sign};  // below half the smallest subnormal
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exp;  // 14..24 ... produces the 10-bit subnormal
    uint32_t result = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (result & 1u))) ++result;
    return Half{static_cast<uint16_t>(sign | result)};
  }
  // Normal: rebias and round the 13 dropped bits to nearest even. A carry out
  // of the mantissa correctly bumps the exponent (up to inf).
  uint32_t result = (abs - 0x38000000u) >> 13;
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (result & 1u))) ++result;
  return Half{static_cast<uint16_t>(sign | result)};
#endif
}

TUTTI_HD float bfloat16_to_float(BFloat16 b) { return bits_float(static_cast<uint32_t>(b.bits) << 16); }

TUTTI_HD BFloat16 float_to_bfloat16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)  // nan: keep it a (quiet) nan
    return BFloat16{static_cast<uint16_t>((u >> 16) | 0x40u)};
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return BFloat16{static_cast<uint16_t>((u + rounding) >> 16)};
}

}  // namespace tutti
