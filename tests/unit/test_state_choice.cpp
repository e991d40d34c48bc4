// StateChoice (lib/api/state_choice.hpp): which calls probe and agree
// follows from the sequence of calls alone, so that every rank runs the
// same variant in every call; the proposal follows rank 0's probe times.
#include <catch2/catch.hpp>

#include <vector>

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
