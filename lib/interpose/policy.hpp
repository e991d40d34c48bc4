// Where a call runs best, tutti or the MPI library, measured on the job
// itself: per communicator, collective and power-of-two size class, the
// first calls run on tutti, then as many on the MPI library (a warm-up call
// each, then TUTTI_MPI_TRIALS timed calls each, default 4, consecutive so
// that back-to-back calls are timed at their rate), the ranks agree on the
// slowest rank's time for each side's run (one small PMPI_Allreduce), and
// later calls of that class go to the faster side.
//
// A side's run is timed as a stream: the ranks start it together (a
// PMPI_Barrier before its first timed call) and each rank times it from
// there to the end of its last call. Why not the sum of each call's own
// time: an MPI root that sends eagerly returns at once, and its receivers,
// still finishing tutti's run when the root started MPI's, then find every
// message waiting, so MPI's calls alone looked faster than the pair can
// stream them (2 ranks, 8-64 B one-way calls: MPI chosen for 6-8 of 8 such
// classes in every job; with streams 1-7, 2026-11-30). The decision is
// taken at the same call on every rank, from values every rank agrees on,
// so all ranks of a call take the same side. TUTTI_MPI_TRIALS=0 sends every call tutti
// serves to tutti.
//
// A decision is tried again after kFirstRetrial more calls of its class,
// then after four times as many each time (up to kMaxRetrialGap): what was
// faster during a few microseconds of trials may not stay so (these machines
// change speed state every few minutes; a program's phases change what else
// runs), and a wrong pick would otherwise last the whole job. Until the new
// trial has decided, non-blocking calls keep the old side. The cost: a
// re-trial runs its timed calls plus one on the slower side (33 below 16
// KiB, 5 above, by default) and two barriers per 1,024 calls of the class
// the first time, per 4,096 the next, and so on.
//
// Why measure rather than ask tutti's dispatcher: the dispatcher's rules say
// which of tutti's algorithms is best, not whether the MPI library beats it
// on this machine, in this job, for this program's buffers; a few calls
// answer that exactly. Non-blocking calls follow the decision of their
// class but never take part in the trials (their time is not the call's).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "base/agreed_size.hpp"

namespace tutti::interpose {

enum class Coll : int {
  allreduce, reduce, reduce_scatter, bcast, allgather, alltoall, gather, scatter, barrier,
  alltoallv,  // classed by the size the ranks agree on (agree_alltoallv_bytes)
  count_
};

class Policy {
 public:
  enum class Side : uint8_t { tutti, mpi };
  struct Choice {
    Side side = Side::tutti;
    bool trial = false;  // a trial call: time it and record()
    int slot = -1;
    int per_side = 0;  // a trial's class: timed calls per side
    bool starts_run = false;  // the first timed call of a side: the ranks start it together
  };

  // For a blocking call. A decided class is answered inline: every call
  // asks, and out of line the call cost more than the answer.
  Choice choose(Coll coll, size_t bytes) {
    const int slot = slot_of(coll, bytes);
    Class& c = classes_[slot];
    if (!c.trying && ++c.since < c.next_trial) return {static_cast<Side>(c.winner), false, slot};
    return choose_on_trial(coll, bytes);
  }
  // For a non-blocking call: the decided side, tutti until then.
  Side decided(Coll coll, size_t bytes) const;

  // alltoallv's bytes for choose() and decided(): each rank's size
  // differs, and a class must be the same on every rank of a call, so the
  // ranks agree now and then (base/agreed_size.hpp: calls 1, 3, 7, ..., then
  // every 128 while the sizes stay; 2 calls after a change) on the smallest
  // and largest size any rank had since, by one small PMPI_Allreduce on
  // `comm`, and calls are classed by the agreed smallest until the next.
  // Collective: every blocking MPI_Alltoallv the library serves on `comm`
  // notes its `bytes` here (the same calls on every rank). False where the
  // agreement failed (an MPI error): the call then goes to MPI.
  bool agree_alltoallv_bytes(size_t bytes, MPI_Comm comm, size_t& agreed);
  // The last agreed size, for non-blocking calls (which do not agree).
  size_t alltoallv_agreed_bytes() const { return alltoallv_size_.bytes(); }
  // After a trial call: when it started and ended on this rank (seconds;
  // a starts_run call's start is the end of the barrier before it). The
  // last trial of a class agrees with the other ranks of `comm`
  // (collective, as the call was). `timing_failed`: the barrier before
  // the call failed, so this rank's run times mean nothing.
  void record(const Choice& choice, double start, double end, MPI_Comm comm,
              bool timing_failed = false);

  // Timed calls per side for calls of `bytes`: TUTTI_MPI_TRIALS, times
  // kSmallFactor below kSmallBytes. Why more for small calls: they take a
  // few microseconds, so 32 cost well under a millisecond, and the first
  // calls' page faults and cache misses (flag lines, eager buffers touched
  // for the first time) otherwise decide between two sides 0.1 us apart.
  static int timed_per_side(size_t bytes);
  static constexpr size_t kSmallBytes = 16 << 10;
  static constexpr int kSmallFactor = 8;
  // The side of the `call`-th trial call of a class (0-based) with
  // `per_side` timed calls per side, and whether it is timed (the first
  // call of each side warms it up).
  static Side trial_side(int call, int per_side);
  static bool trial_is_timed(int call, int per_side);
  // How many calls a trial takes: a warm-up and `per_side` timed calls on
  // each side.
  static int trial_calls(int per_side) { return 2 + 2 * per_side; }
  // Whether the `call`-th trial call is the first / the last timed call of
  // its side: where that side's run starts and ends (from trial_is_timed).
  static bool starts_run(int call, int per_side);
  static bool ends_run(int call, int per_side);
  static constexpr uint32_t kFirstRetrial = 1024;
  static constexpr uint32_t kMaxRetrialGap = 1u << 22;

 private:
  static constexpr int kClasses = 48;
  struct Class {
    uint32_t calls = 0;                 // calls of the running trial so far
    std::array<double, 2> seconds{};    // its timed runs: tutti, mpi
    double run_start = 0;               // the running side's first timed call's start
    bool timing_failed = false;         // a barrier before a run failed on this rank
    int8_t winner = -1;                 // -1 undecided, else a Side (kept while re-trying)
    bool trying = true;                 // a trial runs
    uint32_t since = 0;                 // calls since the last decision
    uint32_t next_trial = kFirstRetrial;  // ... at which the next trial starts
  };
  static int slot_of(Coll coll, size_t bytes) {
    const int size_class = std::min(kClasses - 1, static_cast<int>(std::bit_width(bytes)));
    return static_cast<int>(coll) * kClasses + size_class;
  }
  // The rest of choose(): a trial call, or the first of a new trial.
  Choice choose_on_trial(Coll coll, size_t bytes);
  std::array<Class, static_cast<int>(Coll::count_) * kClasses> classes_{};
  AgreedSize alltoallv_size_;
};

// TUTTI_MPI_TRIALS (read once), at most kMaxTrials.
inline constexpr int kMaxTrials = 1000;
int trials_per_side();

}  // namespace tutti::interpose
