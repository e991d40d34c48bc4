// tutti's reduction kernels on the GPU against the host functors they share
// their code with: every datatype x operator, sizes around the pack and
// grid boundaries, operands at every alignment (vector, scalar and
// byte-wise paths), one and two outputs, in place, grids clamped small (so
// every thread loops) and at the device's size.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/elementwise.hpp"
#include "cuda/kernels.hpp"
#include "cuda/runtime.hpp"
#include "cuda_harness.hpp"
#include "host/reduce_ops.hpp"

namespace tutti::testing {
namespace {

using cuda::ElemType;
using cuda::ReduceKind;

template <typename T>
bool same_result(T got, T want) {
  if (std::memcmp(&got, &want, sizeof(T)) == 0) return true;
  auto nan16 = [](uint16_t b, uint16_t exp) { return (b & 0x7fff) > exp; };
  if constexpr (std::is_same_v<T, Half>) return nan16(got.bits, 0x7c00) && nan16(want.bits, 0x7c00);
  else if constexpr (std::is_same_v<T, BFloat16>) return nan16(got.bits, 0x7f80) && nan16(want.bits, 0x7f80);
  else if constexpr (std::is_floating_point_v<T>) return std::isnan(got) && std::isnan(want);
  else return false;
}

template <typename T>
T host_apply(ReduceKind k, T a, T b) {
  switch (k) {
    case ReduceKind::Sum: return FuncSum<T>{}(a, b);
    case ReduceKind::Prod: return FuncProd<T>{}(a, b);
    case ReduceKind::Min: return FuncMin<T>{}(a, b);
    case ReduceKind::Max: return FuncMax<T>{}(a, b);
  }
  return a;
}

struct DeviceBuffer {
  char* base = nullptr;
  explicit DeviceBuffer(size_t bytes) { REQUIRE(cudaMalloc(&base, bytes + 64) == cudaSuccess); }
  ~DeviceBuffer() { cudaFree(base); }
};

// Counts wrong elements of one launch of `k` on `n` elements of `type`.
long run_reduce(ElemType type, ReduceKind k, size_t n, const size_t (&off)[4], bool two_outputs,
                bool in_place, unsigned sm_count, std::mt19937& rng, std::string& first) {
  return cuda::visit_elem_type(type, [&]<typename T>() -> long {
    const size_t bytes = n * sizeof(T);
    std::vector<char> a(bytes), b(bytes), r0(bytes), r1(bytes);
    for (auto& c : a) c = static_cast<char>(rng());
    for (auto& c : b) c = static_cast<char>(rng());
    DeviceBuffer da(bytes), db(bytes), d0(bytes), d1(bytes);
    char* pa = da.base + off[2];
    char* pb = db.base + off[3];
    char* p0 = in_place ? pa : d0.base + off[0];
    char* p1 = two_outputs ? d1.base + off[1] : nullptr;
    CUDA_REQUIRE(cudaMemcpy(pa, a.data(), bytes, cudaMemcpyHostToDevice));
    CUDA_REQUIRE(cudaMemcpy(pb, b.data(), bytes, cudaMemcpyHostToDevice));
    CUDA_REQUIRE(cudaDeviceSynchronize());  // a pageable upload may still be in flight
    cuda::ReduceLaunch l;
    l.out0 = p0;
    l.out1 = p1;
    l.a = pa;
    l.b = pb;
    l.count = n;
    l.type = type;
    l.op = k;
    REQUIRE(cuda::enqueue_reduce(l, cuda::stream(), sm_count) == 0);
    CUDA_REQUIRE(cudaStreamSynchronize(cuda::stream()));
    CUDA_REQUIRE(cudaMemcpy(r0.data(), p0, bytes, cudaMemcpyDeviceToHost));
    if (p1) CUDA_REQUIRE(cudaMemcpy(r1.data(), p1, bytes, cudaMemcpyDeviceToHost));
    long wrong = 0;
    for (size_t i = 0; i < n; ++i) {
      T x, y, g0, g1;
      std::memcpy(&x, a.data() + i * sizeof(T), sizeof(T));
      std::memcpy(&y, b.data() + i * sizeof(T), sizeof(T));
      std::memcpy(&g0, r0.data() + i * sizeof(T), sizeof(T));
      std::memcpy(&g1, r1.data() + i * sizeof(T), sizeof(T));
      const T want = host_apply(k, x, y);
      const bool ok = same_result(g0, want) && (!p1 || std::memcmp(&g0, &g1, sizeof(T)) == 0);
      if (!ok && wrong++ == 0)
        first = str("type ", static_cast<int>(type), " op ", static_cast<int>(k), " n ", n,
                    " element ", i, " offsets ", off[0], ",", off[1], ",", off[2], ",", off[3],
                    in_place ? " in place" : "", " sm_count ", sm_count);
    }
    return wrong;
  });
}

TEST_CASE("reduction kernels equal the host functors", "[kernels]") {
  std::mt19937 rng(1);
  const unsigned device_sms =
      static_cast<unsigned>(cuda::device_props(cuda::current_device()).sm_count);
  const size_t sizes[] = {0, 1, 2, 3, 15, 16, 17, 255, 257, 4099, (size_t{1} << 20) + 3};
  const size_t offsets[][4] = {{0, 0, 0, 0}, {8, 8, 8, 8}, {0, 0, 8, 0}, {1, 1, 1, 1}, {3, 5, 7, 2}};
  long wrong = 0;
  std::string first;
  for (int t = 0; t < cuda::kNumElemTypes; ++t)
    for (ReduceKind k : {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Min, ReduceKind::Max})
      for (size_t n : sizes)
        for (const auto& off : offsets)
          for (unsigned sms : {1u, 3u, device_sms})  // small grids loop more
            wrong += run_reduce(static_cast<ElemType>(t), k, n, off, (n + sms) % 2 == 0,
                                n % 3 == 1, sms, rng, first);
  INFO(first);
  CHECK(wrong == 0);
}

TEST_CASE("divide kernel equals the host functor", "[kernels]") {
  std::mt19937 rng(2);
  long wrong = 0;
  for (int t = 0; t < cuda::kNumElemTypes; ++t)
    for (size_t n : {size_t{0}, size_t{1}, size_t{17}, size_t{4099}, size_t{1} << 20})
      for (size_t off : {0, 2, 1})
        for (int d : {1, 3, 7, 1000})
          wrong += cuda::visit_elem_type(static_cast<ElemType>(t), [&]<typename T>() -> long {
            const size_t bytes = n * sizeof(T);
            std::vector<char> in(bytes), out(bytes);
            for (auto& c : in) c = static_cast<char>(rng());
            DeviceBuffer dev(bytes);
            char* p = dev.base + off;
            CUDA_REQUIRE(cudaMemcpy(p, in.data(), bytes, cudaMemcpyHostToDevice));
            CUDA_REQUIRE(cudaDeviceSynchronize());
            REQUIRE(cuda::enqueue_divide(p, p, n, static_cast<ElemType>(t), d, cuda::stream(),
                                         1) == 0);
            CUDA_REQUIRE(cudaStreamSynchronize(cuda::stream()));
            CUDA_REQUIRE(cudaMemcpy(out.data(), p, bytes, cudaMemcpyDeviceToHost));
            long bad = 0;
            for (size_t i = 0; i < n; ++i) {
              T x, g;
              std::memcpy(&x, in.data() + i * sizeof(T), sizeof(T));
              std::memcpy(&g, out.data() + i * sizeof(T), sizeof(T));
              bad += !same_result(g, FuncDivide<T>{d}(x));
            }
            return bad;
          });
  CHECK(wrong == 0);
}

}  // namespace
}  // namespace tutti::testing
