// What the interposition library did with the calls it saw: ran them in tutti
// or passed them to the MPI library, and why (TUTTI_MPI_STATS=1 prints it).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace tutti::interpose {

enum class Pass : int {
  disabled,          // TUTTI_MPI=0
  not_ready,         // MPI not initialised, already finalised, or tutti failed to start
  inter_communicator,
  one_rank,          // MPI_COMM_SELF and every other one-rank communicator
  datatype,          // derived, non-contiguous or not one of tutti's types
  op,                // user ops, MINLOC/MAXLOC, logical and bitwise ops
  uneven_counts,     // MPI_Reduce_scatter with different counts per rank
  trial,             // timed on MPI while the policy compares both sides (policy.hpp)
  mpi_faster,        // the policy measured MPI faster for this call's size class
  bad_arguments,     // a negative count, or send and receive sizes that differ: MPI reports it
  agreement_failed,  // the ranks' agreement on an alltoallv's size class failed (an MPI error)
  count_              // number of reasons
};

const char* pass_reason_name(Pass reason);

// Counting is per process and thread-safe: per thread, so that a count
// costs a plain add. An atomic add (a locked instruction, 6-7 ns here) on
// every call was a good part of what a call passed to MPI paid for going
// through this library. Each thread writes only its own counters (index 0:
// calls run in tutti; 1 + reason: calls passed); report_stats reads them all.
namespace detail {
struct Counters {
  std::array<std::atomic<uint64_t>, static_cast<int>(Pass::count_) + 1> n{};
  void add(int i) {
    n[i].store(n[i].load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};
inline thread_local Counters* this_thread_counters = nullptr;
Counters& register_thread();  // sets this_thread_counters
inline Counters& counters() {
  return this_thread_counters ? *this_thread_counters : register_thread();
}
}  // namespace detail

inline void count_ran_in_tutti() { detail::counters().add(0); }
inline void count_passed(Pass reason) { detail::counters().add(1 + static_cast<int>(reason)); }

// Collective over MPI_COMM_WORLD: sums every rank's counts and prints them on
// rank 0's stderr when TUTTI_MPI_STATS=1. Called by MPI_Finalize.
void report_stats();

}  // namespace tutti::interpose
