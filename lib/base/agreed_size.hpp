// The size alltoallv's rules are matched on across nodes, agreed by every
// rank from time to time (also libtutti-mpi's size classes of
// MPI_Alltoallv, interpose/policy.hpp).
//
// An alltoallv's size differs between ranks, and every rank must take the
// same algorithm, so its rules used to be matched at size 0: one algorithm
// for every size. Across nodes that cost the large calls: on 4 x 2 emulated
// nodes `hierarchical_shm` ran 2-16 MiB per rank at 0.91-2.10x Open MPI's
// time (1.04 and more in 13 of 16 cells, two runs), where handing the call to Open
// MPI's own (MPI_Ialltoallv) ran about level, and no algorithm of tutti's
// was faster (docs/perf/cluster-alltoallv-agreed-size-2026-12-06.txt).
// Agreeing on the size in every call would cost a small allreduce (30-190 us
// between these nodes, as long as a small alltoallv itself). So the ranks
// agree now and then, in the same calls on every rank (the sequence of
// blocking alltoallv calls is the same everywhere) on the smallest and the
// largest size any rank had since the last agreement, this call included,
// and match calls until the next on that smallest. While those stay the
// same, each agreement comes twice as many calls after the last, up to
// every kMaxGap calls (calls 1, 3, 7, 15, ..., 255, then every 128); where
// they changed, 2 calls after it (twice in a row: a change settles in two
// agreements), then the gaps grow again (sizes in a cycle: until each
// window holds a whole cycle). A loop of one size is matched at its size
// from its first call on, a loop of several sizes at the smallest; after a
// change of size the old one holds until the next agreement (a call may
// then be matched at a larger size than its own: a rule may hand a small
// call to the MPI library, no slower than the MPI library).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

namespace tutti {

class AgreedSize {
 public:
  static constexpr uint64_t kMaxGap = 128;

  // Notes a call of `bytes` (this rank's); true where this call agrees
  // (then adopt() what every rank agreed on from their proposal()s).
  bool note(uint64_t bytes) {
    window_.smallest = std::min(window_.smallest, bytes);
    window_.largest = std::max(window_.largest, bytes);
    return ++calls_ == next_;
  }
  struct Range {
    uint64_t smallest = std::numeric_limits<uint64_t>::max();
    uint64_t largest = 0;
    bool operator==(const Range&) const = default;
  };
  // This rank's sizes since the last agreement.
  Range proposal() const { return window_; }
  // An agreement is one reduction by the minimum (uint64, 2 elements) of
  // every rank's packed proposal: the largest as its complement.
  using Packed = std::array<uint64_t, 2>;
  // A call of `bytes`, agreeing where it is due: `reduce_min(Packed&)`
  // reduces the packed proposal in place by the minimum over every rank
  // and returns whether it succeeded. False where it failed (failed()).
  // tutti's and libtutti-mpi's agreements both go through here.
  template <typename ReduceMin>
  bool agree(uint64_t bytes, ReduceMin&& reduce_min) {
    if (!note(bytes)) return true;
    Packed both{window_.smallest, ~window_.largest};
    if (!reduce_min(both)) {
      failed();
      return false;
    }
    adopt({both[0], ~both[1]});
    return true;
  }
  // The smallest and largest of every rank's proposal.
  void adopt(const Range& agreed) {
    // A change of size needs two agreements to settle (one sees both
    // sizes, the next the new one alone); where the sizes keep changing
    // (a cycle of several), the windows grow until each holds a cycle.
    changes_in_a_row_ = agreed == agreed_ ? 0 : changes_in_a_row_ + 1;
    gap_ = changes_in_a_row_ == 1 || changes_in_a_row_ == 2 ? 2 : std::min(2 * gap_, kMaxGap);
    next_ = calls_ + gap_;
    agreed_ = agreed;
    window_ = Range{};
  }
  // An agreement that failed (its reduction returned an error): the agreed
  // size and this rank's window stay, and the next agreement comes after
  // the current gap, as on the other ranks where theirs failed too (a rank
  // whose reduction failed cannot know what the others saw; without this
  // the rank's call count passed its next agreement and it never agreed
  // again).
  void failed() { next_ = calls_ + gap_; }
  // The size to match rules on: 0 before the first agreement.
  uint64_t bytes() const { return agreed_.smallest; }

 private:
  uint64_t calls_ = 0;
  uint64_t next_ = 1;
  uint64_t gap_ = 1;
  int changes_in_a_row_ = 0;
  Range window_;
  Range agreed_{0, 0};  // before the first agreement: size 0
};

}  // namespace tutti
