// StateChoice (lib/api/state_choice.hpp): which calls probe and agree
// follows from the sequence of calls alone, so that every rank runs the
// same variant in every call; the proposal follows rank 0's probe times.
#include <catch2/catch.hpp>

#include <vector>

#include "base/agreed_size.hpp"
#include "api/state_choice.hpp"

namespace tutti {
namespace {

TEST_CASE("StateChoice probes in rounds, agrees after each, and spaces the rounds out",
          "[state-choice]") {
  StateChoice c;
  std::vector<uint64_t> round_starts, agreements;
  std::vector<int> round;  // the variants of the round being probed
  for (uint64_t n = 1; n <= 700; ++n) {
    const StateChoice::Step s = c.begin(7);
    if (s.timed) {
      if (round.empty()) round_starts.push_back(n);
      round.push_back(s.variant);
      if (round.size() == 4) {
        CHECK(round == std::vector<int>{0, 0, 1, 1});  // four calls in a row
        round.clear();
      }
    } else {
      CHECK(round.empty());
      CHECK(s.variant == 0);  // nothing proposed another
    }
    if (s.agree) agreements.push_back(n);
  }
  // Four warm-up calls, two rounds at once, then gaps of 32, 64, 128, 256.
  CHECK(round_starts == std::vector<uint64_t>{5, 9, 44, 111, 242, 501});
  CHECK(agreements == std::vector<uint64_t>{9, 13, 48, 115, 246, 505});
}

TEST_CASE("StateChoice proposes the variant rank 0 found faster, with a margin",
          "[state-choice]") {
  StateChoice c;
  for (uint64_t n = 0; n < StateChoice::kWarmCalls; ++n) REQUIRE(!c.begin(1).timed);
  // A round of four probe calls with these times, in call order.
  auto run_round = [&](std::vector<double> times) {
    for (double t : times) {
      const StateChoice::Step s = c.begin(1);
      REQUIRE(s.timed);
      c.note_time(1, s.variant, t);
    }
  };
  // Each variant's quicker call counts: the first after a switch is slow.
  run_round({100, 90, 150, 60});
  StateChoice::Step s = c.begin(1);  // the agreement, then round two's first call
  REQUIRE(s.agree);
  REQUIRE(s.timed);
  CHECK(c.proposal(1) == 1);
  c.adopt(1, 1);
  c.note_time(1, s.variant, 100);
  for (double t : {100, 150, 60}) c.note_time(1, c.begin(1).variant, t);
  s = c.begin(1);  // after the second round: the alternative from now on
  REQUIRE(s.agree);
  CHECK(!s.timed);
  CHECK(c.proposal(1) == 1);
  CHECK(c.begin(1).variant == 1);
  // Level within the margin: no switch back. A round's times replace the
  // older round's; the best of the last two rounds decides.
  auto next_round = [&](std::vector<double> times) {
    while (!(s = c.begin(1)).timed) {
    }
    c.note_time(1, s.variant, times[0]);
    for (size_t i = 1; i < times.size(); ++i) c.note_time(1, c.begin(1).variant, times[i]);
  };
  next_round({58, 70, 60, 60});
  CHECK(c.proposal(1) == 1);  // 58 against 60: inside the margin
  next_round({40, 70, 60, 60});
  CHECK(c.proposal(1) == 0);  // best 40 against 60
  // A signature of its own starts with its own warm-up and probes.
  for (uint64_t n = 0; n < StateChoice::kWarmCalls; ++n) CHECK(!c.begin(2).timed);
  CHECK(c.begin(2).timed);
}

}  // namespace
}  // namespace tutti

// AgreedSize (lib/base/agreed_size.hpp): which alltoallv calls agree follows
// from the calls and the agreed sizes alone, the same on every rank.
namespace tutti {
namespace {

// `sizes[n]`: every rank's size in call n + 1 (one rank: its proposal is
// the agreement). Returns the calls that agreed and each call's size to
// match rules on.
std::pair<std::vector<uint64_t>, std::vector<uint64_t>> run(const std::vector<uint64_t>& sizes) {
  AgreedSize s;
  std::vector<uint64_t> agreements, matched;
  for (size_t n = 0; n < sizes.size(); ++n) {
    if (s.note(sizes[n])) {
      agreements.push_back(n + 1);
      s.adopt(s.proposal());
    }
    matched.push_back(s.bytes());
  }
  return {agreements, matched};
}

TEST_CASE("AgreedSize: one size agrees on calls 1, 3, 7, ..., 255, then every 128",
          "[state-choice]") {
  const auto [agreements, matched] = run(std::vector<uint64_t>(600, 1000));
  CHECK(agreements == std::vector<uint64_t>{1, 3, 7, 15, 31, 63, 127, 255, 383, 511});
  CHECK(matched == std::vector<uint64_t>(600, 1000));
  CHECK(AgreedSize{}.bytes() == 0);  // before the first agreement: rules at size 0
}

TEST_CASE("AgreedSize: a change of size agrees again on the next call", "[state-choice]") {
  std::vector<uint64_t> sizes(100, 1 << 20);
  sizes.resize(200, 4 << 20);  // calls 101-200
  const auto [agreements, matched] = run(sizes);
  // 63 agreed on 1 MiB; 127 sees both sizes (matched at the smaller), 129
  // 4 MiB alone, 131 the same again, and from there the gaps double.
  CHECK(agreements ==
        std::vector<uint64_t>{1, 3, 7, 15, 31, 63, 127, 129, 131, 135, 143, 159, 191});
  CHECK(matched[125] == 1u << 20);  // call 126: the old size still holds
  CHECK(matched[127] == 1u << 20);  // call 128: both sizes, the smaller
  CHECK(matched[128] == 4u << 20);  // call 129
  CHECK(matched[199] == 4u << 20);
}

TEST_CASE("AgreedSize: alternating sizes match the smaller and space the agreements out",
          "[state-choice]") {
  std::vector<uint64_t> sizes;
  for (int n = 0; n < 300; ++n) sizes.push_back(n % 2 ? 8 << 20 : 4096);
  const auto [agreements, matched] = run(sizes);
  CHECK(agreements == std::vector<uint64_t>{1, 3, 5, 9, 17, 33, 65, 129, 257});
  CHECK(matched[299] == 4096);
  // A cycle of three sizes: the windows grow until each holds a cycle.
  sizes.clear();
  for (int n = 0; n < 300; ++n) sizes.push_back(n % 3 == 0 ? 4096 : n % 3 == 1 ? 1 << 20 : 8 << 20);
  const auto [cycle_agreements, cycle_matched] = run(sizes);
  CHECK(cycle_agreements == std::vector<uint64_t>{1, 3, 5, 9, 17, 33, 65, 129, 257});
  CHECK(cycle_matched[299] == 4096);
}

TEST_CASE("AgreedSize: the agreement is over every rank's smallest and largest", "[state-choice]") {
  AgreedSize s;
  REQUIRE(s.note(5 << 20));
  CHECK(s.proposal() == AgreedSize::Range{5u << 20, 5u << 20});
  s.adopt({3u << 20, 6u << 20});  // other ranks had smaller and larger calls
  CHECK(s.bytes() == 3u << 20);
  CHECK_FALSE(s.note(5 << 20));  // call 2
  REQUIRE(s.note(5 << 20));       // call 3: the range changed on the last agreement
  CHECK(s.proposal() == AgreedSize::Range{5u << 20, 5u << 20});
}

TEST_CASE("AgreedSize: a failed agreement keeps the size and agrees again later",
          "[state-choice]") {
  // One rank: the reduction leaves the packed proposal as it is.
  int reductions = 0;
  auto reduce = [&](AgreedSize::Packed&) { return ++reductions, true; };
  auto fail = [&](AgreedSize::Packed&) { return ++reductions, false; };
  AgreedSize s;
  REQUIRE(s.agree(1000, reduce));  // call 1 agrees
  CHECK(s.agree(1000, fail));      // call 2: no agreement due, nothing reduced
  CHECK(reductions == 1);
  CHECK_FALSE(s.agree(2000, fail));  // call 3: its reduction fails
  CHECK(s.bytes() == 1000);          // the last agreed size holds
  // The gap was 2: the next agreement is call 5, and its window still
  // holds call 3's size.
  CHECK(s.agree(1000, fail));  // call 4
  CHECK(reductions == 2);
  CHECK(s.proposal() == AgreedSize::Range{1000, 2000});
  REQUIRE(s.agree(1000, reduce));  // call 5
  CHECK(reductions == 3);
  CHECK(s.bytes() == 1000);
  CHECK(s.proposal() == AgreedSize::Range{});  // a new window
}

}  // namespace
}  // namespace tutti
