// Following the machine's speed state with a choice every rank must share.
//
// Some calls have two good algorithms, and which is faster changes with the
// machine's state: on this project's 2-core VMs, whose vCPUs move between
// a shared cache and separate ones every few minutes, 2 ranks' allgather
// and alltoall of 512 KiB and more ran through the shared segment (three
// copies) at 0.62-0.92 of Open MPI's time with the cores close, and at
// 1.02-1.48 with them far apart, where reading the peer's buffer in place
// (cma, two copies) ran at 1.00-1.09 (docs/PERFORMANCE.md). Unlike the
// way a rank writes its slots (node/slot_writes.hpp), each rank cannot
// decide this for itself: both must run the same algorithm.
//
// So a rule may name an alternative (TuningRule::alternative), and where
// TUTTI_FOLLOW_STATE is on, blocking calls of such a rule run like this,
// per call signature (the same sequence of calls on every rank):
//   - probe rounds of four calls: the rule's algorithm twice, then the
//     alternative twice, on every rank; rank 0 times each whole call after
//     an internal barrier (else its time holds how late the others came)
//     and keeps each variant's quicker call: the first call after a switch
//     pays for caches the other variant left cold (the segment's slots:
//     a 1 MiB allgather through the segment took 160-190 us right after
//     cma calls, 40 us after its own). The first kWarmCalls calls run the
//     rule's algorithm untimed (pages fault in, plans are built: 400-1700
//     us where warm calls took 40-260; the segment's own early probes of
//     how to write its slots, node/slot_writes.hpp, run one call of each
//     pair the slow way), then two rounds come, then a round after 32
//     calls, then after twice as many each time, at most 256 (as the
//     slot-write probes);
//   - the call after each round starts with an agreement: rank 0 proposes
//     the variant whose best call of the last two rounds was faster (the
//     other only where it wins by kSwitchMargin), every rank takes it
//     (Comm::agree_on_variant: a 1-byte bcast from rank 0, about 1 us
//     against the 50 us and more of the calls it serves);
//   - every other call runs the agreed variant.
// Everything but the times follows from the sequence of calls, so every
// rank probes and agrees in the same calls. A wrong verdict costs speed,
// never correctness: both variants are complete algorithms.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <unordered_map>

namespace tutti {

class StateChoice {
 public:
  static constexpr uint64_t kWarmCalls = 4;
  static constexpr uint64_t kCallsPerVariant = 2;  // in a probe round
  static constexpr uint64_t kRoundCalls = 2 * kCallsPerVariant;
  static constexpr uint64_t kEarlyRounds = 2;
  static constexpr uint64_t kFirstGap = 32;
  static constexpr uint64_t kMaxGap = 256;
  // The other variant is proposed only where its best time is below this
  // fraction of the current one's: two variants that run level do not
  // make every agreement switch.
  static constexpr double kSwitchMargin = 0.95;
  // Signatures remembered; beyond, all are forgotten at once (on every rank
  // in the same call, since the sequence of signatures is the same).
  static constexpr size_t kMaxSignatures = 1024;

  struct Step {
    int variant = 0;     // 0: the rule's algorithm, 1: its alternative
    bool timed = false;  // a probe call: a barrier, then time it whole (note_time)
    bool agree = false;  // first take the agreed variant (proposal, adopt)
  };

  // The next call of signature `key` (any value every rank computes alike
  // from the call's arguments).
  Step begin(uint64_t key) {
    if (signatures_.size() >= kMaxSignatures && !signatures_.count(key)) signatures_.clear();
    Signature& s = signatures_[key];
    const uint64_t n = ++s.calls;
    Step step;
    step.agree = n == s.agree_at;
    step.variant = s.verdict;
    if (n < s.next_round || n >= s.next_round + kRoundCalls) return step;
    const uint64_t k = n - s.next_round;  // the call's place in the round
    step.timed = true;
    step.variant = static_cast<int>(k / kCallsPerVariant);
    if (k == 0) {  // the round replaces the older one's times
      s.slot = static_cast<int>(s.rounds % 2);
      s.times[s.slot][0] = s.times[s.slot][1] = kNone;
    }
    if (k == kRoundCalls - 1) {  // the round's last call: place the next
      ++s.rounds;
      s.agree_at = n + 1;
      if (s.rounds < kEarlyRounds) {
        s.next_round = n + 1;
      } else {
        s.next_round = n + s.gap;
        s.gap = std::min(2 * s.gap, kMaxGap);
      }
    }
    return step;
  }

  // A probe call's time, `us`, for `variant` (rank 0's are the ones used).
  void note_time(uint64_t key, int variant, double us) {
    Signature& s = signatures_[key];
    double& best = s.times[s.slot][variant & 1];
    best = std::min(best, us);
  }

  // The variant rank 0 proposes at an agreement.
  int proposal(uint64_t key) const {
    auto it = signatures_.find(key);
    if (it == signatures_.end()) return 0;
    const Signature& s = it->second;
    const double best[2] = {std::min(s.times[0][0], s.times[1][0]),
                            std::min(s.times[0][1], s.times[1][1])};
    const int other = 1 - s.verdict;
    return best[other] < kSwitchMargin * best[s.verdict] ? other : s.verdict;
  }

  // The variant agreed last (0 before any agreement).
  int verdict(uint64_t key) const {
    auto it = signatures_.find(key);
    return it == signatures_.end() ? 0 : it->second.verdict;
  }

  // The agreed variant, from this call on.
  void adopt(uint64_t key, int variant) { signatures_[key].verdict = variant & 1; }

 private:
  static constexpr double kNone = std::numeric_limits<double>::infinity();
  struct Signature {
    uint64_t calls = 0;
    uint64_t rounds = 0;
    uint64_t next_round = kWarmCalls + 1;  // the call that starts the next probe round
    uint64_t agree_at = 0;   // the call that starts with an agreement
    uint64_t gap = kFirstGap;
    int verdict = 0;
    int slot = 0;  // the round being probed: times[slot]
    // The best probe times by round (the last two) and variant, in us.
    double times[2][2] = {{kNone, kNone}, {kNone, kNone}};
  };
  std::unordered_map<uint64_t, Signature> signatures_;
};

}  // namespace tutti
