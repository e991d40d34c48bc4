// Host-side tests of the CUDA reduction code, run on every machine (no GPU
// needed, and also where tutti is built without CUDA):
//   - the per-element functors the kernels use (host/reduce_ops.hpp), every
//     datatype x op, against references computed independently (wide integer
//     arithmetic; fp16/bf16 rounded by searching the table of all finite
//     values, not by the bit tricks of host/half.hpp), with fp16/bf16 rounding
//     edge cases: ties to even, overflow to infinity, subnormals, signed
//     zeros, NaN;
//   - the kernels' body (lib/cuda/elementwise.hpp), run for every (block,
//     thread) of a range of grids, sizes 0..257 and beyond, pointers at every
//     offset within 16 bytes (element-aligned or not), in place or not, one
//     or two outputs: every element written exactly once with the right
//     value, nothing outside the buffers touched, vector accesses aligned.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda/elementwise.hpp"
#include "cuda/pinned_pool.hpp"
#include "host/half.hpp"
#include "host/reduce_ops.hpp"

namespace tutti::cuda {
namespace {

// ---- independent references ----------------------------------------------

// IEEE binary16 / bfloat16 values from their fields (ldexp, no bit tricks).
double half_value(uint16_t bits) {
  const int exp = (bits >> 10) & 0x1f;
  const int mant = bits & 0x3ff;
  const double sign = bits & 0x8000 ? -1.0 : 1.0;
  if (exp == 0x1f) return mant ? std::nan("") : sign * HUGE_VAL;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, exp - 25);
}
double bf16_value(uint16_t bits) {
  const int exp = (bits >> 7) & 0xff;
  const int mant = bits & 0x7f;
  const double sign = bits & 0x8000 ? -1.0 : 1.0;
  if (exp == 0xff) return mant ? std::nan("") : sign * HUGE_VAL;
  if (exp == 0) return sign * std::ldexp(mant, -133);
  return sign * std::ldexp(128 + mant, exp - 134);
}

// Rounds x to the nearest value of a 16-bit format, ties to the even bit
// pattern, by searching the (monotonic) positive finite encodings. Values at
// or beyond max + half an ulp overflow to infinity, as IEEE 754 says.
uint16_t round_to(double x, double (*value)(uint16_t), uint16_t max_finite, uint16_t inf,
                  uint16_t qnan) {
  if (std::isnan(x)) return qnan;
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  const double max = value(max_finite);
  const double half_ulp = (max - value(static_cast<uint16_t>(max_finite - 1))) / 2;
  if (a >= max + half_ulp) return sign | inf;
  uint16_t lo = 0, hi = max_finite;  // value(lo) <= a <= value(hi)
  while (hi - lo > 1) {
    const auto mid = static_cast<uint16_t>((lo + hi) / 2);
    (value(mid) <= a ? lo : hi) = mid;
  }
  const double dlo = a - value(lo), dhi = value(hi) - a;
  uint16_t r = dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi);
  if (a == value(hi)) r = hi;
  return static_cast<uint16_t>(sign | r);
}
uint16_t ref_half(double x) { return round_to(x, half_value, 0x7bff, 0x7c00, 0x7e00); }
uint16_t ref_bf16(double x) { return round_to(x, bf16_value, 0x7f7f, 0x7f80, 0x7fc0); }

bool half_is_nan(uint16_t b) { return (b & 0x7fff) > 0x7c00; }
bool bf16_is_nan(uint16_t b) { return (b & 0x7fff) > 0x7f80; }

std::string kind_name(ReduceKind k) {
  const char* names[] = {"sum", "prod", "min", "max"};
  return names[static_cast<int>(k)];
}

// The reference result of `k` on integers: computed in 64 bits, wrapped to
// T's width (two's complement), like the documented semantics.
template <typename T>
T ref_int(ReduceKind k, T a, T b) {
  using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
  const W x = a, y = b;
  switch (k) {
    case ReduceKind::Sum:
      return static_cast<T>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
    case ReduceKind::Prod:
      return static_cast<T>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
    case ReduceKind::Min: return x < y ? a : b;
    case ReduceKind::Max: return x < y ? b : a;
  }
  return 0;
}

// Truncating division toward zero, spelled out with magnitudes.
template <typename T>
T ref_int_divide(T x, int d) {
  if constexpr (std::is_signed_v<T>) {
    const bool neg = (x < 0) != (d < 0);
    const uint64_t q = static_cast<uint64_t>(x < 0 ? -static_cast<int64_t>(x) : x) /
                       static_cast<uint64_t>(d < 0 ? -static_cast<int64_t>(d) : d);
    return static_cast<T>(neg ? -static_cast<int64_t>(q) : static_cast<int64_t>(q));
  } else {
    return static_cast<T>(static_cast<uint64_t>(x) / static_cast<uint64_t>(d));
  }
}

template <typename T>
T apply(ReduceKind k, T a, T b) {
  switch (k) {
    case ReduceKind::Sum: return FuncSum<T>{}(a, b);
    case ReduceKind::Prod: return FuncProd<T>{}(a, b);
    case ReduceKind::Min: return FuncMin<T>{}(a, b);
    case ReduceKind::Max: return FuncMax<T>{}(a, b);
  }
  return a;
}

constexpr ReduceKind kKinds[] = {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Min,
                                 ReduceKind::Max};

// ---- the functors -----------------------------------------------------------

TEST_CASE("cuda functors: 8-bit integers, every pair", "[cuda-host]") {
  for (ReduceKind k : kKinds) {
    INFO(kind_name(k));
    long wrong = 0;
    for (int i = 0; i < 256; ++i)
      for (int j = 0; j < 256; ++j) {
        const auto a = static_cast<int8_t>(i), b = static_cast<int8_t>(j);
        wrong += apply(k, a, b) != ref_int(k, a, b);
        const auto ua = static_cast<uint8_t>(i), ub = static_cast<uint8_t>(j);
        wrong += apply(k, ua, ub) != ref_int(k, ua, ub);
      }
    CHECK(wrong == 0);
  }
  for (int d : {1, 2, 3, 7, 100, 255, 1000, 1 << 20}) {
    long wrong = 0;
    for (int i = 0; i < 256; ++i) {
      wrong += FuncDivide<int8_t>{d}(static_cast<int8_t>(i)) != ref_int_divide(static_cast<int8_t>(i), d);
      wrong += FuncDivide<uint8_t>{d}(static_cast<uint8_t>(i)) != ref_int_divide(static_cast<uint8_t>(i), d);
    }
    CHECK(wrong == 0);
  }
}

TEMPLATE_TEST_CASE("cuda functors: wide integers", "[cuda-host]", int32_t, uint32_t, int64_t,
                   uint64_t) {
  using T = TestType;
  using L = std::numeric_limits<T>;
  std::vector<T> values = {0, 1, 2, 3, L::max(), static_cast<T>(L::max() - 1), L::min(),
                           static_cast<T>(L::min() + 1), static_cast<T>(L::max() / 2 + 1)};
  if constexpr (std::is_signed_v<T>) values.insert(values.end(), {-1, -2, -3, -7});
  std::mt19937_64 rng(42);
  for (int i = 0; i < 2000; ++i) values.push_back(static_cast<T>(rng()));
  for (ReduceKind k : kKinds) {
    INFO(kind_name(k));
    long wrong = 0;
    for (T a : values)
      for (T b : values) wrong += apply(k, a, b) != ref_int(k, a, b);
    CHECK(wrong == 0);
  }
  // Wrap-around, spelled out.
  CHECK(FuncSum<T>{}(L::max(), T{1}) == L::min());
  CHECK(FuncProd<T>{}(L::max(), T{2}) == static_cast<T>(static_cast<uint64_t>(L::max()) * 2u));
  for (int d : {1, 2, 3, 7, 1000, 1 << 30}) {
    long wrong = 0;
    for (T x : values) wrong += FuncDivide<T>{d}(x) != ref_int_divide(x, d);
    CHECK(wrong == 0);
  }
}

TEMPLATE_TEST_CASE("cuda functors: float and double", "[cuda-host]", float, double) {
  using T = TestType;
  const T inf = std::numeric_limits<T>::infinity();
  std::vector<T> values = {0, -T(0), 1, -1, T(0.1), T(1e-30), -T(3.5), inf, -inf,
                           std::numeric_limits<T>::max(), std::numeric_limits<T>::denorm_min()};
  std::mt19937 rng(7);
  std::uniform_real_distribution<T> dist(-1000, 1000);
  for (int i = 0; i < 300; ++i) values.push_back(dist(rng));
  long wrong = 0;
  for (T a : values)
    for (T b : values) {
      const T s = FuncSum<T>{}(a, b), p = FuncProd<T>{}(a, b);
      const T mn = FuncMin<T>{}(a, b), mx = FuncMax<T>{}(a, b);
      const T want_s = a + b, want_p = a * b;
      wrong += !(std::memcmp(&s, &want_s, sizeof(T)) == 0 || (std::isnan(s) && std::isnan(want_s)));
      wrong += !(std::memcmp(&p, &want_p, sizeof(T)) == 0 || (std::isnan(p) && std::isnan(want_p)));
      wrong += mn != (b < a ? b : a) || mx != (a < b ? b : a);
    }
  CHECK(wrong == 0);
  CHECK(std::isnan(FuncSum<T>{}(inf, -inf)));
  CHECK(std::isnan(FuncSum<T>{}(std::numeric_limits<T>::quiet_NaN(), T(1))));
  CHECK(FuncDivide<T>{3}(T(1)) == T(1) / T(3));
  CHECK(std::signbit(FuncSum<T>{}(-T(0), -T(0))));
  CHECK_FALSE(std::signbit(FuncSum<T>{}(-T(0), T(0))));
}

// fp16/bf16: the functor widens to float, computes in float, rounds once.
template <typename H>
struct Format16;
template <>
struct Format16<Half> {
  static double value(uint16_t b) { return half_value(b); }
  static uint16_t round(double x) { return ref_half(x); }
  static bool is_nan(uint16_t b) { return half_is_nan(b); }
};
template <>
struct Format16<BFloat16> {
  static double value(uint16_t b) { return bf16_value(b); }
  static uint16_t round(double x) { return ref_bf16(x); }
  static bool is_nan(uint16_t b) { return bf16_is_nan(b); }
};

std::string str_of(ReduceKind k, uint16_t a, uint16_t b, uint16_t got, uint16_t want) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s(0x%04x, 0x%04x) = 0x%04x, want 0x%04x",
                kind_name(k).c_str(), a, b, got, want);
  return buf;
}

template <typename H>
void check_16bit_pair(uint16_t a, uint16_t b, long& wrong, std::string& first) {
  using F = Format16<H>;
  const float fa = static_cast<float>(F::value(a)), fb = static_cast<float>(F::value(b));
  const uint16_t want[4] = {F::round(fa + fb), F::round(fa * fb),
                            fb < fa ? b : a, fa < fb ? b : a};
  for (ReduceKind k : kKinds) {
    const uint16_t got = apply(k, H{a}, H{b}).bits;
    const uint16_t w = want[static_cast<int>(k)];
    const bool ok = got == w || (F::is_nan(got) && F::is_nan(w));
    if (!ok && wrong++ == 0)
      first = str_of(k, a, b, got, w);
  }
}


TEMPLATE_TEST_CASE("cuda functors: float16 and bfloat16 against a table search", "[cuda-host]",
                   Half, BFloat16) {
  using H = TestType;
  std::vector<uint16_t> values;
  // Every exponent with a few mantissas, both signs, plus zeros, infinities,
  // NaN and the extremes; then random pairs over the whole range.
  const bool half = std::is_same_v<H, Half>;
  const int mant_bits = half ? 10 : 7;
  const int exps = half ? 32 : 256;
  for (int e = 0; e < exps; ++e)
    for (int m : {0, 1, 2, (1 << mant_bits) - 1, 1 << (mant_bits - 1), 3})
      for (int s : {0, 0x8000}) values.push_back(static_cast<uint16_t>(s | e << mant_bits | m));
  long wrong = 0;
  std::string first;
  for (uint16_t a : values)
    for (uint16_t b : values) check_16bit_pair<H>(a, b, wrong, first);
  std::mt19937 rng(11);
  for (int i = 0; i < 400000; ++i)
    check_16bit_pair<H>(static_cast<uint16_t>(rng()), static_cast<uint16_t>(rng()), wrong, first);
  INFO(first);
  CHECK(wrong == 0);
  // Divide (avg's last step).
  long wrong_div = 0;
  for (uint16_t a : values)
    for (int d : {1, 2, 3, 7, 1000}) {
      const uint16_t got = FuncDivide<H>{d}(H{a}).bits;
      const uint16_t want = Format16<H>::round(static_cast<float>(Format16<H>::value(a)) / static_cast<float>(d));
      wrong_div += !(got == want || (Format16<H>::is_nan(got) && Format16<H>::is_nan(want)));
    }
  CHECK(wrong_div == 0);
}

TEST_CASE("cuda functors: float16 rounding edge cases", "[cuda-host]") {
  auto sum = [](uint16_t a, uint16_t b) { return FuncSum<Half>{}(Half{a}, Half{b}).bits; };
  auto prod = [](uint16_t a, uint16_t b) { return FuncProd<Half>{}(Half{a}, Half{b}).bits; };
  CHECK(sum(0x3c00, 0x1000) == 0x3c00);  // 1 + 2^-11: tie, even below
  CHECK(sum(0x3c01, 0x1000) == 0x3c02);  // tie, odd below: up
  CHECK(sum(0x7bff, 0x4800) == 0x7bff);  // 65504 + 8: below the overflow tie
  CHECK(sum(0x7bff, 0x4c00) == 0x7c00);  // 65504 + 16 = 65520: tie, overflows to inf
  CHECK(sum(0xfbff, 0xcc00) == 0xfc00);  // and to -inf
  CHECK(prod(0x0001, 0x3800) == 0x0000);  // 2^-24 / 2: tie with zero, even
  CHECK(prod(0x0003, 0x3800) == 0x0002);  // 1.5 ulp: up to even
  CHECK(prod(0x0400, 0x3800) == 0x0200);  // smallest normal / 2: subnormal, exact
  CHECK(sum(0x8000, 0x8000) == 0x8000);  // -0 + -0 = -0
  CHECK(sum(0x8000, 0x0000) == 0x0000);  // -0 + 0 = +0
  CHECK(half_is_nan(sum(0x7c00, 0xfc00)));  // inf - inf
  CHECK(half_is_nan(sum(0x7e00, 0x3c00)));  // NaN propagates
  CHECK(half_is_nan(prod(0x7c00, 0x0000)));  // inf * 0
  CHECK(FuncDivide<Half>{3}(Half{0x3c00}).bits == 0x3555);  // 1/3
}

TEST_CASE("cuda functors: bfloat16 rounding edge cases", "[cuda-host]") {
  auto sum = [](uint16_t a, uint16_t b) { return FuncSum<BFloat16>{}(BFloat16{a}, BFloat16{b}).bits; };
  CHECK(sum(0x3f80, 0x3b80) == 0x3f80);  // 1 + 2^-8: tie, even below
  CHECK(sum(0x3f81, 0x3b80) == 0x3f82);  // tie, odd below: up
  CHECK(sum(0x7f7f, 0x7f7f) == 0x7f80);  // overflow to inf
  CHECK(sum(0x8000, 0x8000) == 0x8000);
  CHECK(bf16_is_nan(sum(0x7f80, 0xff80)));
  CHECK(bf16_is_nan(sum(0x7fc1, 0x3f80)));
  CHECK(FuncDivide<BFloat16>{3}(BFloat16{0x3f80}).bits == 0x3eab);  // 1/3
}

// ---- the kernel body ----------------------------------------------------------

struct Grid {
  unsigned blocks, threads;
};
constexpr Grid kGrids[] = {{1, 1}, {1, 5}, {2, 7}, {3, 32}, {1, 256}, {4, 64}};

// Runs elementwise_body for every (block, thread), serially, as a GPU would
// in some order: each element has one writer, so the order does not matter.
template <typename T, typename Op>
void run_grid(const ElementwiseArgs& a, const Op& op, Grid g) {
  for (unsigned b = 0; b < g.blocks; ++b)
    for (unsigned t = 0; t < g.threads; ++t) elementwise_body<T>(a, op, b, t, g.blocks, g.threads);
}

// An operator that counts its writes: in place with in1 = 1, every element
// must end up incremented exactly once.
template <typename T>
struct CountOp {
  static constexpr int kInputs = 2;
  T operator()(T a, T b) const { return static_cast<T>(a + b); }
};

template <typename T>
void check_plan(const ElementwisePlan& p, const void* in0) {
  constexpr size_t kPer = kPackBytes / sizeof(T);
  REQUIRE(p.head <= p.n);
  REQUIRE(p.head < kPer);
  REQUIRE(p.tail_begin == p.head + p.packs * kPer);
  REQUIRE(p.tail_begin <= p.n);
  if (!p.bytewise && p.packs > 0) REQUIRE(p.n - p.tail_begin < kPer);
  if (p.packs > 0)
    REQUIRE((reinterpret_cast<uintptr_t>(in0) + p.head * sizeof(T)) % kPackBytes == 0);
}

// Exactly-once coverage, in place, with the pointer at every byte offset of
// a 16-byte line (element-aligned or not) and every grid.
template <typename T>
void check_coverage_in_place() {
  constexpr size_t kGuard = 32;
  std::vector<unsigned char> storage(2 * kGuard + 512 * sizeof(T) + 64);
  std::vector<T> ones(600, T{1});
  long failures = 0;
  std::string first;
  for (size_t offset = 0; offset < 16; ++offset) {
    char* base = reinterpret_cast<char*>(storage.data()) + kGuard;
    base += (16 - reinterpret_cast<uintptr_t>(base) % 16) % 16 + offset;  // 16-aligned + offset
    for (size_t n = 0; n <= 257; ++n) {
      // in1 at the same phase (vector path possible) and, for aligned offsets,
      // at a different one (scalar path).
      for (int same_phase = 0; same_phase < 2; ++same_phase) {
        std::vector<unsigned char> one_store(n * sizeof(T) + 64);
        char* in1 = reinterpret_cast<char*>(one_store.data());
        in1 += (16 - reinterpret_cast<uintptr_t>(in1) % 16) % 16 + (same_phase ? offset : (offset + sizeof(T)) % 16);
        std::memcpy(in1, ones.data(), n * sizeof(T));
        for (const Grid& g : kGrids) {
          std::fill(storage.begin(), storage.end(), 0xa5);
          for (size_t i = 0; i < n; ++i) {
            const T v = static_cast<T>(i * 3);
            std::memcpy(base + i * sizeof(T), &v, sizeof(T));
          }
          ElementwiseArgs a;
          a.out0 = base;
          a.in0 = base;
          a.in1 = in1;
          a.plan = plan_elementwise<T>(a.out0, nullptr, a.in0, a.in1, n);
          check_plan<T>(a.plan, a.in0);
          run_grid<T>(a, CountOp<T>{}, g);
          for (size_t i = 0; i < n; ++i) {
            T v;
            std::memcpy(&v, base + i * sizeof(T), sizeof(T));
            if (v != static_cast<T>(i * 3 + 1) && failures++ == 0)
              first = "offset " + std::to_string(offset) + " n " + std::to_string(n) + " grid " +
                      std::to_string(g.blocks) + "x" + std::to_string(g.threads) + ": element " +
                      std::to_string(i) + " written " + std::to_string(static_cast<long long>(v) - static_cast<long long>(i * 3)) + " times";
          }
          const auto* lo = reinterpret_cast<unsigned char*>(base);
          for (const unsigned char* p = storage.data(); p < lo; ++p)
            if (*p != 0xa5 && failures++ == 0) first = "wrote before the buffer";
          for (const unsigned char* p = lo + n * sizeof(T); p < storage.data() + storage.size(); ++p)
            if (*p != 0xa5 && failures++ == 0) first = "wrote past the buffer, n " + std::to_string(n);
        }
      }
    }
  }
  INFO(first);
  CHECK(failures == 0);
}

TEMPLATE_TEST_CASE("cuda kernel body: every element exactly once, in place", "[cuda-host]",
                   uint8_t, uint16_t, uint32_t, uint64_t) {
  check_coverage_in_place<TestType>();
}

// Bit-equal, or both NaN: NaN payloads depend on the order the compiler
// gives the operands of an addition or product (it may swap them), on the
// host as on the device.
template <typename T>
bool same_result(T got, T want) {
  if (std::memcmp(&got, &want, sizeof(T)) == 0) return true;
  if constexpr (std::is_same_v<T, Half>) return half_is_nan(got.bits) && half_is_nan(want.bits);
  else if constexpr (std::is_same_v<T, BFloat16>) return bf16_is_nan(got.bits) && bf16_is_nan(want.bits);
  else if constexpr (std::is_floating_point_v<T>) return std::isnan(got) && std::isnan(want);
  else return false;
}

// Real operators, out of place, two outputs, all three buffers at their own
// offsets: results equal the scalar functor, element by element.
template <typename T>
void check_values(ReduceKind k) {
  std::mt19937 rng(3);
  const size_t sizes[] = {0, 1, 2, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 255, 256, 257, 1000, 4099};
  const size_t offsets[][4] = {{0, 0, 0, 0}, {2, 2, 2, 2}, {8, 8, 8, 8},     {0, 8, 0, 8},
                               {4, 0, 12, 8}, {1, 1, 1, 1}, {3, 5, 7, 9}, {0, 0, 0, 2}};
  long wrong = 0;
  std::string first;
  for (size_t n : sizes)
    for (const auto& off : offsets) {
      std::vector<unsigned char> s0(n * sizeof(T) + 64), s1(s0.size()), sa(s0.size()), sb(s0.size());
      auto place = [](std::vector<unsigned char>& v, size_t o) {
        char* p = reinterpret_cast<char*>(v.data());
        return p + (16 - reinterpret_cast<uintptr_t>(p) % 16) % 16 + o;
      };
      char *o0 = place(s0, off[0]), *o1 = place(s1, off[1]), *ia = place(sa, off[2]), *ib = place(sb, off[3]);
      for (size_t i = 0; i < n * sizeof(T); ++i) {
        ia[i] = static_cast<char>(rng());
        ib[i] = static_cast<char>(rng());
      }
      for (const Grid& g : kGrids) {
        std::memset(o0, 0, n * sizeof(T));
        std::memset(o1, 0, n * sizeof(T));
        ElementwiseArgs a;
        a.out0 = o0;
        a.out1 = o1;
        a.in0 = ia;
        a.in1 = ib;
        a.plan = plan_elementwise<T>(o0, o1, ia, ib, n);
        check_plan<T>(a.plan, ia);
        switch (k) {
          case ReduceKind::Sum: run_grid<T>(a, BinaryOp<T, FuncSum<T>>{}, g); break;
          case ReduceKind::Prod: run_grid<T>(a, BinaryOp<T, FuncProd<T>>{}, g); break;
          case ReduceKind::Min: run_grid<T>(a, BinaryOp<T, FuncMin<T>>{}, g); break;
          case ReduceKind::Max: run_grid<T>(a, BinaryOp<T, FuncMax<T>>{}, g); break;
        }
        for (size_t i = 0; i < n; ++i) {
          T x, y, r0, r1;
          std::memcpy(&x, ia + i * sizeof(T), sizeof(T));
          std::memcpy(&y, ib + i * sizeof(T), sizeof(T));
          std::memcpy(&r0, o0 + i * sizeof(T), sizeof(T));
          std::memcpy(&r1, o1 + i * sizeof(T), sizeof(T));
          const T want = apply(k, x, y);
          if ((!same_result(r0, want) || std::memcmp(&r0, &r1, sizeof(T)) != 0) && wrong++ == 0)
            first = "n " + std::to_string(n) + " element " + std::to_string(i) + " offsets " +
                    std::to_string(off[0]) + "," + std::to_string(off[1]) + "," +
                    std::to_string(off[2]) + "," + std::to_string(off[3]);
        }
      }
    }
  INFO(kind_name(k) << ": " << first);
  CHECK(wrong == 0);
}

TEMPLATE_TEST_CASE("cuda kernel body: results of every operator, two outputs", "[cuda-host]",
                   int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t, Half, BFloat16, float,
                   double) {
  for (ReduceKind k : kKinds) check_values<TestType>(k);
}

TEMPLATE_TEST_CASE("cuda kernel body: divide in place", "[cuda-host]", int8_t, int32_t, uint64_t,
                   Half, BFloat16, float, double) {
  using T = TestType;
  std::mt19937 rng(5);
  long wrong = 0;
  for (size_t n = 0; n <= 257; ++n)
    for (size_t off : {0, 1, 2, 4, 8, 12}) {
      std::vector<unsigned char> store(n * sizeof(T) + 64), orig(n * sizeof(T));
      char* p = reinterpret_cast<char*>(store.data());
      p += (16 - reinterpret_cast<uintptr_t>(p) % 16) % 16 + off;
      for (auto& c : orig) c = static_cast<unsigned char>(rng());
      for (const Grid& g : {Grid{1, 1}, Grid{2, 7}, Grid{1, 256}}) {
        std::memcpy(p, orig.data(), orig.size());
        ElementwiseArgs a;
        a.out0 = p;
        a.in0 = p;
        a.plan = plan_elementwise<T>(p, nullptr, p, nullptr, n);
        check_plan<T>(a.plan, p);
        run_grid<T>(a, DivideOp<T>{FuncDivide<T>{3}}, g);
        for (size_t i = 0; i < n; ++i) {
          T x, r;
          std::memcpy(&x, orig.data() + i * sizeof(T), sizeof(T));
          std::memcpy(&r, p + i * sizeof(T), sizeof(T));
          const T want = FuncDivide<T>{3}(x);
          wrong += !same_result(r, want);
        }
      }
    }
  CHECK(wrong == 0);
}

TEST_CASE("cuda kernel body: plans and grid sizes", "[cuda-host]") {
  alignas(16) static char buf[4096];
  SECTION("aligned float: no head, whole packs, short tail") {
    const ElementwisePlan p = plan_elementwise<float>(buf, nullptr, buf + 16, buf + 32, 10);
    CHECK(p.head == 0);
    CHECK(p.packs == 2);
    CHECK(p.tail_begin == 8);
    CHECK_FALSE(p.bytewise);
  }
  SECTION("same phase: head up to the boundary") {
    const ElementwisePlan p = plan_elementwise<float>(buf + 4, nullptr, buf + 36, buf + 68, 10);
    CHECK(p.head == 3);
    CHECK(p.packs == 1);
    CHECK(p.tail_begin == 7);
  }
  SECTION("different phases: all scalar") {
    const ElementwisePlan p = plan_elementwise<float>(buf + 4, nullptr, buf + 8, buf, 100);
    CHECK(p.head == 0);
    CHECK(p.packs == 0);
    CHECK(p.tail_begin == 0);
    CHECK_FALSE(p.bytewise);
  }
  SECTION("not element-aligned: byte-wise") {
    const ElementwisePlan p = plan_elementwise<double>(buf + 1, nullptr, buf + 17, buf + 33, 100);
    CHECK(p.bytewise);
    CHECK(p.packs == 0);
  }
  SECTION("a second output takes part in the alignment decision") {
    CHECK(plan_elementwise<float>(buf, buf + 16, buf + 32, buf + 48, 64).packs == 16);
    CHECK(plan_elementwise<float>(buf, buf + 4, buf + 32, buf + 48, 64).packs == 0);
  }
  SECTION("grid: enough blocks for the largest part, never more than the device holds") {
    ElementwisePlan p = plan_elementwise<float>(buf, nullptr, buf, buf, 0);
    CHECK(grid_blocks(p, 256, 1056) == 1);
    p = plan_elementwise<float>(buf, nullptr, buf, buf, 4 * 256 * 10);  // 2560 packs
    CHECK(grid_blocks(p, 256, 1056) == 10);
    p.packs = size_t{1} << 30;
    CHECK(grid_blocks(p, 256, 1056) == 1056);
    p = plan_elementwise<float>(buf + 1, nullptr, buf + 1, buf + 1, 300);  // byte-wise: 300 scalars
    CHECK(grid_blocks(p, 256, 1056) == 2);
  }
}

}  // namespace
}  // namespace tutti::cuda

// ---- the pinned staging pool's policy (lib/cuda/pinned_pool.hpp) -----------

namespace {

// An allocator that counts what is live, and can be told to fail.
struct CountingHeap {
  static inline long live = 0;
  static inline long allocations = 0;
  static inline bool fail_next = false;
  static void* alloc(size_t bytes) {
    if (fail_next) {
      fail_next = false;
      return nullptr;
    }
    ++live;
    ++allocations;
    return std::malloc(bytes);
  }
  static void free(void* p) {
    --live;
    std::free(p);
  }
};

}  // namespace

TEST_CASE("the pinned pool reuses buffers and allocates ahead within a bound", "[cuda-host]") {
  CountingHeap::live = CountingHeap::allocations = 0;
  {
    using tutti::cuda::PinnedPool;
    // Floor and cap 16 KiB: a fixed bound.
    PinnedPool pool(PinnedPool::Allocator{CountingHeap::alloc, CountingHeap::free}, 16 << 10,
                    16 << 10);
    // Reuse: a returned buffer serves the next request of its size class.
    char* first = nullptr;
    {
      PinnedPool::Lease a = pool.acquire(5000);  // 8 KiB class
      REQUIRE(a);
      first = a.data();
    }
    CHECK(pool.bytes_idle() == 8 << 10);
    {
      PinnedPool::Lease b = pool.acquire(8 << 10);
      CHECK(b.data() == first);
      CHECK(pool.bytes_idle() == 0);
    }
    CHECK(CountingHeap::allocations == 1);
    // The bound: of three 8 KiB buffers returned, two fit the 16 KiB kept.
    {
      PinnedPool::Lease x = pool.acquire(8 << 10), y = pool.acquire(8 << 10),
                        z = pool.acquire(8 << 10);
      CHECK(pool.bytes_held() == 24 << 10);
      CHECK(CountingHeap::live == 3);
    }
    CHECK(pool.bytes_idle() == 16 << 10);
    CHECK(pool.bytes_held() == 16 << 10);
    CHECK(CountingHeap::live == 2);
    // Larger than the bound: used, then freed at once.
    { PinnedPool::Lease big = pool.acquire(1 << 20); CHECK(CountingHeap::live == 3); }
    CHECK(CountingHeap::live == 2);
    // trim frees every idle buffer; reserve refills within the bound.
    pool.trim();
    CHECK(CountingHeap::live == 0);
    CHECK(pool.bytes_held() == 0);
    CHECK(pool.reserve(4096, 8));
    CHECK(pool.bytes_idle() == 16 << 10);  // 4 of the 8 fit
    CHECK(CountingHeap::live == 4);
    const long before = CountingHeap::allocations;
    { PinnedPool::Lease s = pool.acquire(100); CHECK(s); }
    CHECK(CountingHeap::allocations == before);  // served from the reserve
    // Out of pinned memory: an empty lease, nothing counted.
    CountingHeap::fail_next = true;
    PinnedPool::Lease none = pool.acquire(1 << 20);
    CHECK_FALSE(none);
    CHECK(pool.bytes_held() == 16 << 10);
    // Moving a lease hands it over once.
    PinnedPool::Lease m = pool.acquire(4096);
    PinnedPool::Lease n = std::move(m);
    CHECK_FALSE(m);
    CHECK(n);
  }
  CHECK(CountingHeap::live == 0);  // the pool frees what it kept
}

// A staged ring allreduce of 256 MiB on 2 ranks leases 1,024 chunks of
// 256 KiB at once (512 sends, 512 receives). Scaled down here: floor 64 KiB,
// cap 1 MiB, a "large call" leasing 32 buffers of 16 KiB (512 KiB at once).
TEST_CASE("the pinned pool keeps what recent calls leased at once, up to its cap", "[cuda-host]") {
  using tutti::cuda::PinnedPool;
  CountingHeap::live = CountingHeap::allocations = 0;
  {
    PinnedPool pool(PinnedPool::Allocator{CountingHeap::alloc, CountingHeap::free}, 64 << 10,
                    1 << 20);
    auto call = [&](int buffers, size_t bytes) {
      std::vector<PinnedPool::Lease> leases;
      for (int i = 0; i < buffers; ++i) leases.push_back(pool.acquire(bytes));
      for (const auto& l : leases) REQUIRE(l);
    };
    call(32, 16 << 10);
    CHECK(CountingHeap::allocations == 32);
    CHECK(pool.bytes_idle() == 512 << 10);  // all kept: this period needed them
    call(32, 16 << 10);
    CHECK(CountingHeap::allocations == 32);  // the second large call pins nothing
    // Small calls: the large peak is remembered for kRememberedPeriods
    // periods (the two large calls count as two), then the bound falls back
    // to the floor and the surplus is freed.
    for (int i = 0; i < PinnedPool::kRememberedPeriods - 2; ++i) call(1, 4096);
    CHECK(pool.keep_bound() == 512 << 10);
    CHECK(CountingHeap::allocations == 33);  // one 4 KiB buffer, kept: large ones go first
    call(1, 4096);
    CHECK(pool.keep_bound() == 512 << 10);  // the second large call is still remembered
    call(1, 4096);
    CHECK(pool.keep_bound() == 64 << 10);
    CHECK(pool.bytes_idle() <= 64 << 10);
    CHECK(pool.bytes_held() == pool.bytes_idle());
    // Beyond the cap: the surplus is freed when the call ends.
    call(128, 16 << 10);  // 2 MiB at once
    CHECK(pool.keep_bound() == 1 << 20);
    CHECK(pool.bytes_idle() <= 1 << 20);
    CHECK(pool.bytes_idle() > (1 << 20) - (16 << 10));
    CHECK(pool.bytes_held() == pool.bytes_idle());
  }
  CHECK(CountingHeap::live == 0);
  // TUTTI_CUDA_PINNED_KEEP_MB's text.
  CHECK(PinnedPool::cap_bytes_from_text(nullptr) == PinnedPool::kDefaultCapBytes);
  CHECK(PinnedPool::cap_bytes_from_text("") == PinnedPool::kDefaultCapBytes);
  CHECK(PinnedPool::cap_bytes_from_text("0") == size_t{0});
  CHECK(PinnedPool::cap_bytes_from_text("256") == size_t{256} << 20);
  CHECK(PinnedPool::cap_bytes_from_text("16777216") == size_t{1} << 44);
  for (const char* bad : {"-1", "1.5", "64M", " 64", "16777217", "99999999999999999999999"})
    CHECK_FALSE(PinnedPool::cap_bytes_from_text(bad));
  // Cap 0: nothing is kept, whatever the floor.
  {
    PinnedPool pool(PinnedPool::Allocator{CountingHeap::alloc, CountingHeap::free}, 64 << 10, 0);
    CHECK(pool.reserve(4096, 4));
    CHECK(pool.bytes_held() == 0);
    { PinnedPool::Lease l = pool.acquire(4096); CHECK(l); }
    CHECK(pool.bytes_held() == 0);
    CHECK(CountingHeap::live == 0);
  }
}
