// The host reducer against the scalar functors of host/reduce_ops.hpp, bit for
// bit, on every instruction set this CPU has: every datatype x op, lengths
// around every vector width and a few large ones, every aliasing form, and
// buffers misaligned by one element. Also the fp16/bf16 conversions'
// edge cases, since every fp16/bf16 result goes through them.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "host/half.hpp"
#include "host/reduce.hpp"
#include "host/reduce_ops.hpp"

namespace tutti {
namespace {

uint16_t to_half(float f) { return float_to_half(f).bits; }
float from_half(uint16_t b) { return half_to_float(Half{b}); }
uint16_t to_bf16(float f) { return float_to_bfloat16(f).bits; }
uint16_t bits_to_bf16(uint32_t u) { return float_to_bfloat16(bits_float(u)).bits; }
float from_bf16(uint16_t b) { return bfloat16_to_float(BFloat16{b}); }

bool is_half_nan(uint16_t b) { return (b & 0x7fffu) > 0x7c00u; }
bool is_bf16_nan(uint16_t b) { return (b & 0x7fffu) > 0x7f80u; }

TEST_CASE("float16 conversion edge cases", "[reduce]") {
  SECTION("exact values") {
    CHECK(to_half(1.0f) == 0x3c00);
    CHECK(to_half(-2.0f) == 0xc000);
    CHECK(to_half(0.5f) == 0x3800);
    CHECK(to_half(std::ldexp(1.0f, -14)) == 0x0400);  // smallest normal
    CHECK(to_half(65504.0f) == 0x7bff);                // largest finite
    CHECK(from_half(0x7bff) == 65504.0f);
    CHECK(from_half(0x3555) == 0.25f + 0x155p-12f);
  }
  SECTION("round to nearest, ties to even") {
    CHECK(to_half(1.0f + 0x1p-11f) == 0x3c00);             // tie, even below
    CHECK(to_half(1.0f + 3 * 0x1p-11f) == 0x3c02);         // tie, odd below: up
    CHECK(to_half(-(1.0f + 3 * 0x1p-11f)) == 0xbc02);
    CHECK(to_half(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);  // just above the tie
    CHECK(to_half(1.0f + 0x1p-11f - 0x1p-23f) == 0x3c00);  // just below it
    CHECK(to_half(2047.0f * 0x1p-10f + 0x1p-11f) == 0x4000);  // carry into the exponent
  }
  SECTION("subnormals") {
    CHECK(to_half(0x1p-24f) == 0x0001);
    CHECK(to_half(-0x1p-24f) == 0x8001);
    CHECK(to_half(1023 * 0x1p-24f) == 0x03ff);
    CHECK(to_half(0x1p-25f) == 0x0000);             // tie with zero: even
    CHECK(to_half(0x1p-25f + 0x1p-35f) == 0x0001);  // just above that tie
    CHECK(to_half(0x1p-26f) == 0x0000);
    CHECK(to_half(3 * 0x1p-25f) == 0x0002);     // 1.5 ulp: up to even
    CHECK(to_half(9 * 0x1p-25f) == 0x0004);     // 4.5 ulp: down to even
    CHECK(to_half(11 * 0x1p-25f) == 0x0006);    // 5.5 ulp: up to even
    CHECK(to_half(2047 * 0x1p-25f) == 0x0400);  // rounds up into the normals
    CHECK(from_half(0x0001) == 0x1p-24f);
    CHECK(from_half(0x03ff) == 1023 * 0x1p-24f);
    CHECK(from_half(0x8200) == -512 * 0x1p-24f);
    CHECK(to_half(1e-40f) == 0x0000);  // float subnormal
    CHECK(to_half(-1e-40f) == 0x8000);
  }
  SECTION("overflow and infinities") {
    CHECK(to_half(std::nextafter(65520.0f, 0.0f)) == 0x7bff);
    CHECK(to_half(65520.0f) == 0x7c00);  // the tie above 65504 rounds to inf
    CHECK(to_half(-65520.0f) == 0xfc00);
    CHECK(to_half(65536.0f) == 0x7c00);
    CHECK(to_half(FLT_MAX) == 0x7c00);
    CHECK(to_half(INFINITY) == 0x7c00);
    CHECK(to_half(-INFINITY) == 0xfc00);
    CHECK(from_half(0x7c00) == INFINITY);
    CHECK(from_half(0xfc00) == -INFINITY);
  }
  SECTION("NaN stays NaN") {
    CHECK(to_half(NAN) == 0x7e00);
    CHECK(to_half(-NAN) == 0xfe00);
    CHECK(is_half_nan(to_half(bits_float(0x7f800001u))));  // payload only in dropped bits
    CHECK(is_half_nan(to_half(bits_float(0xff800001u))));
    CHECK(std::isnan(from_half(0x7c01)));
    CHECK(std::isnan(from_half(0x7e00)));
    CHECK(std::isnan(from_half(0xffff)));
  }
  SECTION("signed zero") {
    CHECK(to_half(0.0f) == 0x0000);
    CHECK(to_half(-0.0f) == 0x8000);
    CHECK(from_half(0x8000) == 0.0f);
    CHECK(std::signbit(from_half(0x8000)));
  }
  SECTION("every finite half round-trips") {
    int bad = 0;
    for (uint32_t b = 0; b < 0x10000; ++b) {
      const uint16_t h = static_cast<uint16_t>(b);
      const uint16_t back = to_half(from_half(h));
      if (is_half_nan(h) ? !is_half_nan(back) : back != h) ++bad;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("bfloat16 conversion edge cases", "[reduce]") {
  SECTION("exact values") {
    CHECK(to_bf16(1.0f) == 0x3f80);
    CHECK(to_bf16(-2.0f) == 0xc000);
    CHECK(from_bf16(0x4049) == 3.140625f);
  }
  SECTION("round to nearest, ties to even") {
    CHECK(bits_to_bf16(0x3f808000u) == 0x3f80);  // tie, even below
    CHECK(bits_to_bf16(0x3f818000u) == 0x3f82);  // tie, odd below: up
    CHECK(bits_to_bf16(0xbf818000u) == 0xbf82);
    CHECK(bits_to_bf16(0x3f808001u) == 0x3f81);
    CHECK(bits_to_bf16(0x3f807fffu) == 0x3f80);
    CHECK(bits_to_bf16(0x3fff8000u) == 0x4000);  // carry into the exponent
  }
  SECTION("subnormals") {
    CHECK(bits_to_bf16(0x00010000u) == 0x0001);
    CHECK(bits_to_bf16(0x00008000u) == 0x0000);  // tie with zero: even
    CHECK(bits_to_bf16(0x00018000u) == 0x0002);  // tie, odd below: up
    CHECK(bits_to_bf16(0x80008001u) == 0x8001);
    CHECK(bits_to_bf16(0x007fffffu) == 0x0080);  // rounds up into the normals
    CHECK(float_bits(from_bf16(0x0001)) == 0x00010000u);
    CHECK(float_bits(from_bf16(0x807f)) == 0x807f0000u);
  }
  SECTION("overflow and infinities") {
    CHECK(bits_to_bf16(0x7f7f7fffu) == 0x7f7f);
    CHECK(bits_to_bf16(0x7f7f8000u) == 0x7f80);  // the tie above the largest rounds to inf
    CHECK(to_bf16(FLT_MAX) == 0x7f80);
    CHECK(to_bf16(-FLT_MAX) == 0xff80);
    CHECK(to_bf16(INFINITY) == 0x7f80);
    CHECK(to_bf16(-INFINITY) == 0xff80);
    CHECK(from_bf16(0x7f80) == INFINITY);
  }
  SECTION("NaN stays NaN") {
    CHECK(to_bf16(NAN) == 0x7fc0);
    CHECK(bits_to_bf16(0xffc00000u) == 0xffc0);
    CHECK(is_bf16_nan(bits_to_bf16(0x7f800001u)));  // rounding alone would give inf
    CHECK(is_bf16_nan(bits_to_bf16(0x7fffffffu)));  // rounding alone would carry to zero
    CHECK(is_bf16_nan(bits_to_bf16(0xff80ffffu)));
    CHECK(std::isnan(from_bf16(0x7f81)));
  }
  SECTION("signed zero") {
    CHECK(to_bf16(0.0f) == 0x0000);
    CHECK(to_bf16(-0.0f) == 0x8000);
    CHECK(std::signbit(from_bf16(0x8000)));
  }
  SECTION("every non-NaN bfloat16 round-trips") {
    int bad = 0;
    for (uint32_t b = 0; b < 0x10000; ++b) {
      const uint16_t h = static_cast<uint16_t>(b);
      const uint16_t back = to_bf16(from_bf16(h));
      if (is_bf16_nan(h) ? !is_bf16_nan(back) : back != h) ++bad;
    }
    CHECK(bad == 0);
  }
}

// ---------------------------------------------------------------------------

constexpr const char* kIsas[] = {"generic", "avx2", "avx512"};

// Puts the process-wide choice back however the test case ends.
struct IsaRestorer {
  std::string saved{host_reduce_isa()};
  ~IsaRestorer() { host_reduce_set_isa(saved); }
};

// Calls fn(T{}) with T the C++ type of dt; written out independently of
// host/reduce_kernels.hpp so that a mismatched table entry shows up here.
template <class Fn>
void visit_datatype(Datatype dt, Fn&& fn) {
  switch (dt) {
    case Datatype::Int8: return fn(int8_t{});
    case Datatype::Uint8: return fn(uint8_t{});
    case Datatype::Int32: return fn(int32_t{});
    case Datatype::Uint32: return fn(uint32_t{});
    case Datatype::Int64: return fn(int64_t{});
    case Datatype::Uint64: return fn(uint64_t{});
    case Datatype::Float16: return fn(Half{});
    case Datatype::Bfloat16: return fn(BFloat16{});
    case Datatype::Float32: return fn(float{});
    case Datatype::Float64: return fn(double{});
  }
  FAIL("unknown datatype");
}

template <typename T, class Fn>
void visit_functor(Op op, Fn&& fn) {
  switch (op) {
    case Op::Sum:
    case Op::Avg: return fn(FuncSum<T>{});
    case Op::Prod: return fn(FuncProd<T>{});
    case Op::Min: return fn(FuncMin<T>{});
    case Op::Max: return fn(FuncMax<T>{});
  }
  FAIL("unknown op");
}

template <typename T>
T from_bits(uint64_t bits) {
  T x;
  std::memcpy(&x, &bits, sizeof x);  // little-endian: the low bytes
  return x;
}

// Exponent field of each floating type, to keep random bit patterns finite.
template <typename T>
constexpr uint64_t kExpMask = 0;
template <>
constexpr uint64_t kExpMask<Half> = 0x7c00;
template <>
constexpr uint64_t kExpMask<BFloat16> = 0x7f80;
template <>
constexpr uint64_t kExpMask<float> = 0x7f800000;
template <>
constexpr uint64_t kExpMask<double> = 0x7ff0000000000000;

template <typename T>
T random_value(std::mt19937_64& rng) {
  uint64_t r = rng();
  if constexpr (kExpMask<T> != 0) {
    if (r % 2 == 0) {
      // Moderate magnitudes, where sums and products round rather than
      // saturate, with both signs.
      const double v = std::ldexp(static_cast<double>(static_cast<int64_t>(r) >> 40), -12);
      if constexpr (std::is_same_v<T, Half>)
        return float_to_half(static_cast<float>(v));
      else if constexpr (std::is_same_v<T, BFloat16>)
        return float_to_bfloat16(static_cast<float>(v));
      else
        return static_cast<T>(v);
    }
    r >>= 1;  // any finite bit pattern: subnormals, huge values, signed zeros
    if ((r & kExpMask<T>) == kExpMask<T>) r &= ~(kExpMask<T> & (kExpMask<T> >> 1));
  }
  return from_bits<T>(r);
}

template <typename T>
T negative_zero() {
  return from_bits<T>(kExpMask<T> ? (kExpMask<T> << 1) & ~kExpMask<T> : 0);  // the sign bit
}

// Random inputs; some pairs equal and some +0/-0 pairs, where min and max
// must return the operand the functor returns.
template <typename T>
void fill_inputs(std::vector<T>& a, std::vector<T>& b, std::mt19937_64& rng) {
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = random_value<T>(rng);
    b[i] = random_value<T>(rng);
    switch (rng() % 16) {
      case 0: b[i] = a[i]; break;
      case 1: a[i] = T{}; b[i] = negative_zero<T>(); break;
      case 2: a[i] = negative_zero<T>(); b[i] = T{}; break;
      default: break;
    }
  }
}

template <typename T>
bool same_bits(const T& x, const T& y) {
  return std::memcmp(&x, &y, sizeof(T)) == 0;
}

// Index of the first element of got that differs from want, or -1.
template <typename T>
long first_difference(const std::vector<T>& got, const std::vector<T>& want) {
  for (size_t i = 0; i < got.size(); ++i)
    if (!same_bits(got[i], want[i])) return static_cast<long>(i);
  return -1;
}

enum class Alias { Distinct, DstIsA, DstIsB, AllSame };
constexpr Alias kAliases[] = {Alias::Distinct, Alias::DstIsA, Alias::DstIsB, Alias::AllSame};
constexpr const char* kAliasNames[] = {"dst distinct", "dst==a", "dst==b", "dst==a==b"};

// One reduction of the n elements at `offset` in each buffer; the buffers
// hold one spare element before and after, which must stay untouched.
template <typename T>
void check_reduce(Datatype dt, Op op, size_t n, const std::vector<T>& a, const std::vector<T>& b,
                  size_t offset, Alias alias) {
  visit_functor<T>(op, [&](auto f) {
    std::vector<T> out(a.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = from_bits<T>(0x5a5a5a5a5a5a5a5aull);
    std::vector<T> want = out;
    const T* x = a.data() + offset;
    const T* y = b.data() + offset;
    T* d = out.data() + offset;
    switch (alias) {
      case Alias::Distinct: break;
      case Alias::DstIsA: std::memcpy(d, x, n * sizeof(T)); x = d; break;
      case Alias::DstIsB: std::memcpy(d, y, n * sizeof(T)); y = d; break;
      case Alias::AllSame: std::memcpy(d, x, n * sizeof(T)); x = y = d; break;
    }
    const T* ref_b = alias == Alias::AllSame ? a.data() : b.data();
    for (size_t i = 0; i < n; ++i) want[offset + i] = f(a[offset + i], ref_b[offset + i]);
    host_reduce(d, x, y, n, dt, op);
    const long diff = first_difference(out, want);
    INFO(host_reduce_isa() << " " << datatype_name(dt) << " " << op_name(op) << " n=" << n
                           << " offset=" << offset << " " << kAliasNames[static_cast<int>(alias)]
                           << " first difference at buffer index " << diff);
    REQUIRE(diff == -1);
  });
}

std::vector<size_t> test_lengths() {
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 70; ++n) lengths.push_back(n);
  for (size_t n : {1000, 4099, 100003}) lengths.push_back(n);
  return lengths;
}

TEST_CASE("host_reduce matches the scalar functors bit for bit", "[reduce]") {
  IsaRestorer restore;
  std::mt19937_64 rng(1234);
  int isas = 0;
  for (const char* isa : kIsas) isas += host_reduce_set_isa(isa);
  CHECK(isas >= 1);  // generic is always there
  for (Datatype dt : kAllDatatypes) {
    visit_datatype(dt, [&](auto type) {
      using T = decltype(type);
      for (size_t n : test_lengths()) {
        std::vector<T> a(n + 2), b(n + 2);
        fill_inputs(a, b, rng);
        for (const char* isa : kIsas) {
          if (!host_reduce_set_isa(isa)) continue;
          for (Op op : kAllOps)
            for (size_t offset : {0, 1})
              for (Alias alias : kAliases) check_reduce(dt, op, n, a, b, offset, alias);
        }
      }
    });
  }
}

TEST_CASE("host_reduce propagates a NaN in one operand like the functors", "[reduce]") {
  // Not in both: which NaN a sum of two NaNs keeps is up to the hardware and
  // the compiler's operand order.
  IsaRestorer restore;
  std::mt19937_64 rng(99);
  for (Datatype dt :
       {Datatype::Float16, Datatype::Bfloat16, Datatype::Float32, Datatype::Float64}) {
    visit_datatype(dt, [&](auto type) {
      using T = decltype(type);
      for (size_t n : {size_t{37}, size_t{1000}}) {
        std::vector<T> a(n + 2), b(n + 2);
        fill_inputs(a, b, rng);
        for (size_t i = 0; i < a.size(); ++i) {
          // Quiet and signalling NaNs of both signs, with assorted payloads.
          const uint64_t mantissa = ~kExpMask<T> & ((kExpMask<T> * 2 - 1) >> 1);
          const uint64_t nan = kExpMask<T> | (rng() & mantissa) | 1;
          const T value = from_bits<T>(rng() % 2 ? nan : nan | (kExpMask<T> << 1 & ~kExpMask<T>));
          if (rng() % 4 == 0) (rng() % 2 ? a[i] : b[i]) = value;
        }
        for (const char* isa : kIsas) {
          if (!host_reduce_set_isa(isa)) continue;
          for (Op op : kAllOps)
            for (Alias alias : kAliases)
              if (alias != Alias::AllSame) check_reduce(dt, op, n, a, b, 1, alias);
        }
      }
    });
  }
}

template <typename T>
void check_divide(Datatype dt, const std::vector<T>& input, size_t n, size_t offset, int divisor) {
  std::vector<T> got = input;
  std::vector<T> want = input;
  const FuncDivide<T> f{divisor};
  for (size_t i = 0; i < n; ++i) want[offset + i] = f(want[offset + i]);
  host_divide(got.data() + offset, n, dt, divisor);
  const long diff = first_difference(got, want);
  INFO(host_reduce_isa() << " " << datatype_name(dt) << " n=" << n << " offset=" << offset
                         << " divisor=" << divisor << " first difference at buffer index " << diff);
  REQUIRE(diff == -1);
}

TEST_CASE("host_divide matches FuncDivide bit for bit", "[reduce]") {
  IsaRestorer restore;
  std::mt19937_64 rng(4321);
  for (Datatype dt : kAllDatatypes) {
    visit_datatype(dt, [&](auto type) {
      using T = decltype(type);
      for (size_t n : test_lengths()) {
        std::vector<T> input(n + 2), unused(n + 2);
        fill_inputs(input, unused, rng);
        if constexpr (std::is_integral_v<T>) {
          // The extremes, where truncation and wrapping are easiest to get wrong.
          if (n > 0) input[1] = std::numeric_limits<T>::min();
          if (n > 1) input[2] = std::numeric_limits<T>::max();
          if (n > 2) input[3] = static_cast<T>(-7);  // -7 / 3 truncates to -2
        }
        for (const char* isa : kIsas) {
          if (!host_reduce_set_isa(isa)) continue;
          // Avg divides by the rank count; -3 covers the non-rank-count path.
          for (int divisor : {1, 3, 7, 1000, -3})
            for (size_t offset : {0, 1}) check_divide(dt, input, n, offset, divisor);
        }
      }
    });
  }
}

TEST_CASE("host_divide of NaNs matches FuncDivide", "[reduce]") {
  IsaRestorer restore;
  for (const char* isa : kIsas) {
    if (!host_reduce_set_isa(isa)) continue;
    std::vector<Half> h(40);
    std::vector<BFloat16> bf(40);
    for (size_t i = 0; i < h.size(); ++i) {
      h[i] = Half{static_cast<uint16_t>((i % 2 ? 0x8000 : 0) | 0x7c00 | (1u << (i % 10)))};
      bf[i] = BFloat16{static_cast<uint16_t>((i % 2 ? 0x8000 : 0) | 0x7f80 | (1u << (i % 7)))};
    }
    check_divide(Datatype::Float16, h, h.size(), 0, 3);
    check_divide(Datatype::Bfloat16, bf, bf.size(), 0, 3);
  }
}

TEST_CASE("host_reduce_set_isa accepts only what the CPU has", "[reduce]") {
  IsaRestorer restore;
  CHECK_FALSE(host_reduce_set_isa("sse9"));
  CHECK(host_reduce_set_isa("generic"));
  CHECK(host_reduce_isa() == "generic");
  for (const char* isa : kIsas)
    if (host_reduce_set_isa(isa)) CHECK(host_reduce_isa() == isa);
}

}  // namespace
}  // namespace tutti
