// The shared segment's flag protocol (shared_segment.hpp) on one thread:
// which signal may go when, and what it carries.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "shared_segment.hpp"

namespace tutti::testing {
namespace {

struct TwoRanks {
  std::vector<char> memory = std::vector<char>(SharedSegment::flag_bytes(2), 0);
  SharedSegment segment{memory.data(), memory.size(), 2};
  SharedPort a{&segment, 0}, b{&segment, 1};
};

uint64_t take_value(SharedPort& port, int peer) {
  uint64_t v = 0;
  REQUIRE(port.arrived(peer));
  port.take(peer, &v, sizeof v);
  return v;
}

}  // namespace

TEST_CASE("a sender runs at most two signals ahead of its receiver", "[schedule]") {
  TwoRanks job;
  for (uint64_t v : {11, 12}) {
    REQUIRE(job.a.can_signal(1));
    job.a.signal(1, &v, sizeof v);
  }
  // Signal 3 would overwrite signal 1's line, which rank 1 has not read.
  CHECK_FALSE(job.a.can_signal(1));
  CHECK(take_value(job.b, 0) == 11);
  REQUIRE(job.a.can_signal(1));
  const uint64_t v = 13;
  job.a.signal(1, &v, sizeof v);
  CHECK_FALSE(job.a.can_signal(1));
  CHECK(take_value(job.b, 0) == 12);
  CHECK(take_value(job.b, 0) == 13);
  CHECK_FALSE(job.b.arrived(0));
}

TEST_CASE("a signal tells its receiver how many of its signals were taken", "[schedule]") {
  TwoRanks job;
  // Rank 1 signals rank 0 twice and is blocked; rank 0 takes both and
  // answers once. The answer carries the news: rank 1 may signal again
  // (its acknowledgement row says so too, but the flag line is enough).
  job.b.signal(0);
  job.b.signal(0);
  CHECK_FALSE(job.b.can_signal(0));
  take_value(job.a, 1);
  take_value(job.a, 1);
  job.segment.ack(0, 1).store(0);  // hide the acknowledgement row
  job.a.signal(1);
  CHECK_FALSE(job.b.can_signal(0));  // not taken yet: no news
  take_value(job.b, 0);
  CHECK(job.b.can_signal(0));
}

}  // namespace tutti::testing
