// LruCache (lib/base/lru_cache.hpp): the CUDA IPC handle caches rest on it,
// and a wrong eviction there closes a mapping a copy still reads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "base/lru_cache.hpp"

namespace tutti {
namespace {

TEST_CASE("LruCache finds what it keeps and drops the least recently used", "[lru]") {
  std::vector<std::string> dropped;
  LruCache<int, std::string> cache(3, [&](std::string& v) { dropped.push_back(v); });
  REQUIRE(cache.find(1) == nullptr);
  cache.insert(1, "one");
  cache.insert(2, "two");
  cache.insert(3, "three");
  REQUIRE(cache.size() == 3);
  REQUIRE(dropped.empty());

  // Using 1 makes 2 the oldest.
  REQUIRE(cache.find(1) != nullptr);
  REQUIRE(*cache.find(1) == "one");
  cache.insert(4, "four");
  REQUIRE(dropped == std::vector<std::string>{"two"});
  REQUIRE(cache.find(2) == nullptr);
  REQUIRE(cache.size() == 3);

  // 3 is now the oldest (1 and 4 were used after it).
  cache.insert(5, "five");
  REQUIRE(dropped == std::vector<std::string>{"two", "three"});
  REQUIRE(*cache.find(4) == "four");
  REQUIRE(*cache.find(5) == "five");

  // A found value can be changed in place.
  *cache.find(1) = "uno";
  REQUIRE(*cache.find(1) == "uno");

  cache.clear();
  REQUIRE(cache.size() == 0);
  REQUIRE(dropped.size() == 5);
  std::sort(dropped.begin() + 2, dropped.end());
  REQUIRE(dropped == std::vector<std::string>{"two", "three", "five", "four", "uno"});
}

TEST_CASE("LruCache drops what it holds when destroyed; capacity 0 has no limit", "[lru]") {
  int dropped = 0;
  {
    LruCache<int, int> cache(0, [&](int&) { ++dropped; });
    for (int i = 0; i < 100; ++i) cache.insert(i, i * i);
    REQUIRE(cache.size() == 100);
    REQUIRE(dropped == 0);
    REQUIRE(*cache.find(7) == 49);
  }
  REQUIRE(dropped == 100);
}

}  // namespace
}  // namespace tutti
