// host_copy against a byte-by-byte reference, on every instruction set this
// CPU has: lengths around the loop's bounds (2 KiB, 1 MiB) and its vector
// width, every offset of source and destination within a 64-byte line, and
// overlapping ranges in both directions (memmove semantics). Guard bytes
// around the destination catch a write past either end.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "host/copy.hpp"
#include "host/reduce.hpp"

namespace tutti {
namespace {

constexpr size_t kGuard = 192;
constexpr uint8_t kGuardByte = 0xa5;

struct IsaRestorer {
  std::string saved{host_reduce_isa()};
  ~IsaRestorer() { host_reduce_set_isa(saved); }
};

std::vector<uint8_t> random_bytes(size_t n, std::mt19937_64& rng) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Copies n bytes from src offset `so` to a 64-byte-aligned destination area
// at offset `doff`, checks the copy and that no guard byte changed.
using CopyFn = void (*)(void*, const void*, size_t);

void check_copy(const std::vector<uint8_t>& src, size_t so, size_t doff, size_t n,
                CopyFn copy = host_copy) {
  std::vector<uint8_t> area(kGuard + 64 + n + kGuard, kGuardByte);
  // Place the destination at a known offset within a line of the area.
  const auto base = reinterpret_cast<uintptr_t>(area.data() + kGuard);
  const size_t align = (64 - (base & 63)) & 63;
  uint8_t* dst = area.data() + kGuard + align + doff;
  copy(dst, src.data() + so, n);
  long first_wrong = -1;
  for (size_t i = 0; i < n && first_wrong < 0; ++i)
    if (dst[i] != src[so + i]) first_wrong = static_cast<long>(i);
  bool guards_intact = true;
  for (uint8_t* p = area.data(); p < dst; ++p) guards_intact &= *p == kGuardByte;
  for (uint8_t* p = dst + n; p < area.data() + area.size(); ++p) guards_intact &= *p == kGuardByte;
  INFO(host_reduce_isa() << " n=" << n << " src offset " << so << " dst offset " << doff);
  REQUIRE(first_wrong == -1);
  REQUIRE(guards_intact);
}

TEST_CASE("host_copy copies exactly the bytes asked for, at any alignment", "[reduce]") {
  IsaRestorer restore;
  std::mt19937_64 rng(99);
  const std::vector<uint8_t> src = random_bytes((1u << 20) + 4096, rng);
  const size_t lengths[] = {0, 1, 63, 64, 65, 127, 128, 129, 2047, 2048, 2049, 4096 + 77,
                            65536 + 13, (1u << 20) - 1, 1u << 20, (1u << 20) + 1};
  for (const char* isa : {"generic", "avx2", "avx512"}) {
    if (!host_reduce_set_isa(isa)) continue;
    for (size_t n : lengths)
      for (size_t so : {0, 1, 8, 17, 63})
        for (size_t doff : {0, 1, 8, 16, 40, 63}) {
          if (n >= (1u << 20) && (so + doff) % 7 != 0) continue;  // a sample of the big ones
          check_copy(src, so, doff, n);
        }
  }
}

TEST_CASE("host_copy_streaming copies exactly the bytes asked for, at any alignment", "[reduce]") {
  IsaRestorer restore;
  std::mt19937_64 rng(98);
  const std::vector<uint8_t> src = random_bytes((1u << 18) + 4096, rng);
  const size_t lengths[] = {0, 1, 63, 64, 65, 127, 128, 129, 4096, 4096 + 77, 65536 + 13, 1u << 18};
  for (const char* isa : {"generic", "avx2"}) {
    if (!host_reduce_set_isa(isa)) continue;
    for (size_t n : lengths)
      for (size_t so : {0, 1, 17, 63})
        for (size_t doff : {0, 1, 16, 40, 63}) check_copy(src, so, doff, n, host_copy_streaming);
  }
}

TEST_CASE("host_copy copies exactly around the size where it starts streaming", "[reduce]") {
  IsaRestorer restore;
  const size_t from = host_streaming_copy_min_bytes();
  // An eighth of a last-level cache, at least 1 MiB: never so large that
  // every copy streams, never so small that a cached copy would.
  REQUIRE(from >= (size_t{1} << 20));
  REQUIRE(from <= (size_t{1} << 30));
  std::mt19937_64 rng(97);
  const std::vector<uint8_t> src = random_bytes(from + 4096, rng);
  for (const char* isa : {"generic", "avx2"}) {
    if (!host_reduce_set_isa(isa)) continue;
    for (size_t n : {from - 1, from, from + 77})
      for (size_t so : {0, 17})
        for (size_t doff : {0, 40}) check_copy(src, so, doff, n);
  }
}

TEST_CASE("host_copy handles overlapping ranges like memmove", "[reduce]") {
  IsaRestorer restore;
  std::mt19937_64 rng(7);
  for (const char* isa : {"generic", "avx2"}) {
    if (!host_reduce_set_isa(isa)) continue;
    for (size_t n : {100, 5000, 70000})
      for (long shift : {-4097, -9, -1, 1, 9, 4097}) {
        std::vector<uint8_t> buf = random_bytes(n + 16384, rng);
        const std::vector<uint8_t> before = buf;
        const size_t from = 8192, to = static_cast<size_t>(8192 + shift);
        host_copy(buf.data() + to, buf.data() + from, n);
        INFO(isa << " n=" << n << " shift " << shift);
        for (size_t i = 0; i < n; ++i) REQUIRE(buf[to + i] == before[from + i]);
      }
  }
}

}  // namespace
}  // namespace tutti
