#include "host/copy.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>

#include "host/reduce.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tutti {
namespace {

// Below this glibc copies with vector moves, which do not care about
// alignment; from the upper bound on it stops using `rep movsb` (and from
// host_streaming_copy_min_bytes() on host_copy streams).
constexpr size_t kLoopMinBytes = 2048;
constexpr size_t kLoopMaxBytes = size_t{1} << 20;

bool overlapping(const char* d, const char* s, size_t n) { return d < s + n && s < d + n; }

// Normal stores, or non-temporal ones: those send the destination lines
// towards memory instead of leaving them dirty in this core's caches.
enum class Stores { Cached, Streaming };

#if defined(__x86_64__)
// Both loops align the stores to 64 bytes and load unaligned: an unaligned
// load costs nothing extra on the CPUs concerned, a store split over two
// lines does.
size_t head_to_line(char* d, const char* s, size_t n) {
  const size_t head = std::min(n, (64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63);
  std::memcpy(d, s, head);
  return head;
}

template <Stores kStores>
void copy_sse2(char* d, const char* s, size_t n) {
  size_t i = head_to_line(d, s, n);
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    auto store = [](char* at, __m128i v) {
      if constexpr (kStores == Stores::Streaming) _mm_stream_si128(reinterpret_cast<__m128i*>(at), v);
      else _mm_store_si128(reinterpret_cast<__m128i*>(at), v);
    };
    store(d + i, a);
    store(d + i + 16, b);
    store(d + i + 32, c);
    store(d + i + 48, e);
  }
  std::memcpy(d + i, s + i, n - i);  // under 64 bytes: never the slow path
  if constexpr (kStores == Stores::Streaming) _mm_sfence();  // weakly ordered: before any flag
}

template <Stores kStores>
[[gnu::target("avx2")]] void copy_avx2(char* d, const char* s, size_t n) {
  size_t i = head_to_line(d, s, n);
  for (; i + 128 <= n; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 64));
    const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 96));
    auto store = [](char* at, __m256i v) __attribute__((target("avx2"))) {
      if constexpr (kStores == Stores::Streaming) _mm256_stream_si256(reinterpret_cast<__m256i*>(at), v);
      else _mm256_store_si256(reinterpret_cast<__m256i*>(at), v);
    };
    store(d + i, a);
    store(d + i + 32, b);
    store(d + i + 64, c);
    store(d + i + 96, e);
  }
  std::memcpy(d + i, s + i, n - i);  // under 128 bytes: never the slow path
  if constexpr (kStores == Stores::Streaming) _mm_sfence();
}

#endif

// The host reducer's choice (TUTTI_HOST_ISA can lower it) also picks the
// copy loop: "generic" means baseline x86-64, which has SSE2. Elsewhere
// memcpy.
template <Stores kStores>
void copy_loop(char* d, const char* s, size_t n) {
#if defined(__x86_64__)
  if (host_reduce_isa() == std::string_view("generic"))
    copy_sse2<kStores>(d, s, n);
  else
    copy_avx2<kStores>(d, s, n);
#else
  std::memcpy(d, s, n);
#endif
}

// The size of the largest cache Linux lists for cpu0 (index3 on x86: the
// L3), in bytes; 0 where it lists none.
size_t last_level_cache_bytes() {
  size_t largest = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string text;
    if (!(in >> text)) continue;
    size_t pos = 0;
    unsigned long long value = 0;
    try {
      value = std::stoull(text, &pos);
    } catch (...) {
      continue;
    }
    const std::string unit = text.substr(pos);
    const size_t scale = unit == "K" ? 1024 : unit == "M" ? size_t{1} << 20 : unit.empty() ? 1 : 0;
    largest = std::max(largest, static_cast<size_t>(value) * scale);
  }
  return largest;
}

}  // namespace

size_t host_streaming_copy_min_bytes() {
  static const size_t min_bytes = [] {
    const size_t llc = last_level_cache_bytes();
    return llc > 0 ? std::max(llc / 8, size_t{1} << 20) : size_t{4} << 20;
  }();
  return min_bytes;
}

void host_copy_streaming(void* dst, const void* src, size_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  if (d == s || bytes == 0) return;
  if (overlapping(d, s, bytes)) {
    std::memmove(d, s, bytes);
    return;
  }
  copy_loop<Stores::Streaming>(d, s, bytes);
}

void host_copy(void* dst, const void* src, size_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  if (d == s || bytes == 0) return;
  if (bytes >= host_streaming_copy_min_bytes() && !overlapping(d, s, bytes)) {
    copy_loop<Stores::Streaming>(d, s, bytes);
    return;
  }
  const uintptr_t distance = reinterpret_cast<uintptr_t>(d) - reinterpret_cast<uintptr_t>(s);
  const bool same_line_offset = (distance & 63) == 0;
  if (same_line_offset || bytes < kLoopMinBytes || bytes >= kLoopMaxBytes ||
      overlapping(d, s, bytes)) {
    std::memmove(d, s, bytes);
    return;
  }
  copy_loop<Stores::Cached>(d, s, bytes);
}

}  // namespace tutti
