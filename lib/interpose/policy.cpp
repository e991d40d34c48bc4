#include "interpose/policy.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>

namespace tutti::interpose {

int trials_per_side() {
  static const int trials = [] {
    const char* v = std::getenv("TUTTI_MPI_TRIALS");
    // Capped: a class's trial counter must not wrap (kMaxTrials).
    return v && *v ? std::clamp(std::atoi(v), 0, kMaxTrials) : 4;
  }();
  return trials;
}

Policy::Side Policy::decided(Coll coll, size_t bytes) const {
  const Class& c = classes_[slot_of(coll, bytes)];
  return c.winner == static_cast<int8_t>(Side::mpi) ? Side::mpi : Side::tutti;
}

bool Policy::agree_alltoallv_bytes(size_t bytes, MPI_Comm comm, size_t& agreed) {
  if (!alltoallv_size_.agree(bytes, [comm](AgreedSize::Packed& both) {
        return PMPI_Allreduce(MPI_IN_PLACE, both.data(), 2, MPI_UINT64_T, MPI_MIN, comm) ==
               MPI_SUCCESS;
      }))
    return false;
  agreed = alltoallv_size_.bytes();
  return true;
}

int Policy::timed_per_side(size_t bytes) {
  return bytes < kSmallBytes ? kSmallFactor * trials_per_side() : trials_per_side();
}

Policy::Side Policy::trial_side(int call, int per_side) {
  return call <= per_side ? Side::tutti : Side::mpi;
}

bool Policy::trial_is_timed(int call, int per_side) { return call != 0 && call != per_side + 1; }

bool Policy::starts_run(int call, int per_side) {
  return trial_is_timed(call, per_side) && !trial_is_timed(call - 1, per_side);
}

bool Policy::ends_run(int call, int per_side) {
  const bool last_call = call + 1 == trial_calls(per_side);
  return trial_is_timed(call, per_side) && (last_call || !trial_is_timed(call + 1, per_side));
}

// One run of calls on each side: call 0 warms tutti up (it builds its
// schedule), calls 1..T are timed on tutti, call T+1 warms the MPI library
// up (it picks its algorithm, and the ranks leave tutti's last call at
// different times), calls T+2..2T+1 are timed on MPI. Runs rather than
// alternate calls: a program that calls a collective back to back gets the
// rate of consecutive calls, which is what its later calls will see (an MPI
// root that sends eagerly runs ahead of its receivers; alternating sides
// stopped it at every tutti call and timed MPI's latency instead).
Policy::Choice Policy::choose_on_trial(Coll coll, size_t bytes) {
  const int slot = slot_of(coll, bytes);
  Class& c = classes_[slot];
  if (trials_per_side() == 0) {
    // Always tutti: the class is decided for good, so that its later calls
    // take choose()'s inline answer (out of line, each call paid 10-20 ns
    // for the call and the stall on its returned Choice; perf, 2026-11-30).
    c = Class{};
    c.trying = false;
    c.winner = static_cast<int8_t>(Side::tutti);
    c.next_trial = UINT32_MAX;
    return {Side::tutti, false, slot};
  }
  if (!c.trying) {  // choose() counted this call: it is the one that starts a trial
    c.trying = true;  // try again (see policy.hpp)
    c.calls = 0;
    c.seconds = {};
    c.since = 0;
    c.next_trial = std::min(kMaxRetrialGap, c.next_trial * 4);
  }
  const int per_side = timed_per_side(bytes);
  const int call = static_cast<int>(c.calls);
  return {trial_side(call, per_side), true, slot, per_side, starts_run(call, per_side)};
}

void Policy::record(const Choice& choice, double start, double end, MPI_Comm comm,
                    bool timing_failed) {
  Class& c = classes_[choice.slot];
  const int call = static_cast<int>(c.calls);
  if (choice.starts_run) c.run_start = start;
  c.timing_failed = c.timing_failed || timing_failed;
  if (ends_run(call, choice.per_side)) c.seconds[static_cast<int>(choice.side)] = end - c.run_start;
  ++c.calls;
  if (call + 1 < trial_calls(choice.per_side)) return;
  // A rank whose barrier failed makes both sides' slowest times infinite,
  // a tie, which every rank reads as tutti.
  if (c.timing_failed) c.seconds = {HUGE_VAL, HUGE_VAL};
  c.timing_failed = false;
  std::array<double, 2> slowest{};
  c.trying = false;
  if (PMPI_Allreduce(c.seconds.data(), slowest.data(), 2, MPI_DOUBLE, MPI_MAX, comm) !=
      MPI_SUCCESS) {
    c.winner = static_cast<int8_t>(Side::tutti);  // the same failure on every rank
    return;
  }
  c.winner = static_cast<int8_t>(slowest[1] < slowest[0] ? Side::mpi : Side::tutti);
}

}  // namespace tutti::interpose
