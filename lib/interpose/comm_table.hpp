// One tutti communicator per MPI communicator, made on first use.
//
// The first collective call on an MPI communicator creates its tutti
// communicator, whatever the call's arguments (collective: MPI requires
// every rank to make its collective calls on a communicator in the same
// order, so all create it in the same call). It is kept in an attribute of
// the MPI communicator, with a delete callback: MPI_Comm_free destroys it.
// Duplicates do not inherit it. MPI_Finalize destroys those still alive,
// newest first.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>

#include "interpose/policy.hpp"
#include "interpose/stats.hpp"
#include "tutti/tutti.h"

namespace tutti::interpose {

// Where a collective on `comm` goes. `tutti` is null when it goes to MPI, and
// `reason` says why.
struct Route {
  tutti_comm_t tutti = nullptr;
  Pass reason = Pass::not_ready;
  Policy* policy = nullptr;  // with `tutti`: where each call runs best
  int rank = -1;             // with `tutti`: this rank in the communicator
};

// False when TUTTI_MPI=0: every call goes to MPI. Read once, when the
// library is loaded, so that every call reads a plain flag (a function-local
// static cost a call and a guard check on every MPI call).
namespace detail {
bool read_interposition_enabled();
inline const bool enabled_at_load = read_interposition_enabled();
}  // namespace detail
inline bool interposition_enabled() { return detail::enabled_at_load; }

// The answer depends only on the communicator (the same on every rank of it).
// Creates the tutti communicator on first use. The last communicator this
// thread looked up is answered inline (an attribute lookup costs about
// 20-30 ns; a program calls its collectives on the same few communicators),
// valid while no entry has been deleted since: every call runs this, and
// out of line its entry cost more than its work (docs/PERFORMANCE.md,
// libtutti-mpi).
namespace detail {
struct LastLookup {
  // Value-initialised, never a valid handle (null in Open MPI, 0 in MPICH):
  // MPI_COMM_NULL is the address of a library's object, and as initialiser
  // it made every access call the thread-local's init function.
  MPI_Comm comm{};
  Route route;
  uint64_t deletions = ~uint64_t{0};
};
inline thread_local LastLookup last_lookup;
inline std::atomic<uint64_t> deletions{0};
Route look_up(MPI_Comm comm);  // the rest of route_for
}  // namespace detail

inline Route route_for(MPI_Comm comm) {
  const detail::LastLookup& last = detail::last_lookup;
  if (comm == last.comm && last.deletions == detail::deletions.load(std::memory_order_acquire))
    return last.route;
  return detail::look_up(comm);
}

// Called by MPI_Finalize before the MPI library finalises.
void destroy_all_communicators();

}  // namespace tutti::interpose
