// The path every interposed call takes: to MPI (PMPI_*) or to tutti.
#pragma once

#include <mpi.h>

#include <memory>
#include <optional>
#include <type_traits>

#include "interpose/comm_table.hpp"
#include "interpose/errors.hpp"
#include "interpose/guard.hpp"
#include "interpose/requests.hpp"
#include "interpose/stats.hpp"

namespace tutti::interpose {

// Where a collective on `comm` goes: route.tutti null when it goes to MPI
// (the reason counted). `check_args` says whether tutti can take the call's
// arguments (Pass::count_ for yes, else the reason it cannot), given the
// route where it asks for it (the rank: gather and scatter read the root's
// arguments only at the root); it must answer alike on every rank of a
// correct program. The communicator is looked up first, so every rank
// creates its tutti twin at its first collective call on it, whatever the
// arguments. Calls made by tutti itself go to MPI uncounted.
template <typename CheckArgs>
Route route_call(MPI_Comm comm, CheckArgs&& check_args) {
  if (inside_tutti()) return {};
  if (!interposition_enabled()) {
    count_passed(Pass::disabled);
    return {};
  }
  const Route route = route_for(comm);
  Pass problem;
  if constexpr (std::is_invocable_v<CheckArgs&, const Route&>) {
    problem = check_args(route);
  } else {
    problem = check_args();
  }
  // The arguments' reason first, as MPI would see it (a derived datatype
  // on MPI_COMM_SELF counts as a datatype).
  if (problem != Pass::count_ || !route.tutti) {
    count_passed(problem != Pass::count_ ? problem : route.reason);
    return {};
  }
  return route;
}

// The size a call's class is chosen by: `bytes()`, or `bytes(route)` where
// it needs the communicator's policy (alltoallv: the size the ranks agree
// on); nullopt where the ranks could not agree on it.
template <typename Bytes>
std::optional<size_t> class_bytes_of(Bytes& bytes, const Route& route) {
  if constexpr (std::is_invocable_v<Bytes&, const Route&>) {
    return bytes(route);
  } else {
    return bytes();
  }
}

// A blocking collective of class_bytes_of(bytes) (alike on every rank):
// `run_tutti(tutti_comm_t)` returns a tutti status, `run_mpi()` an MPI one.
// The policy picks the side.
template <typename CheckArgs, typename Bytes, typename RunTutti, typename RunMpi>
int serve(MPI_Comm comm, Coll coll, CheckArgs&& check_args, Bytes&& bytes, RunTutti&& run_tutti,
          RunMpi&& run_mpi) {
  const Route route = route_call(comm, check_args);
  if (!route.tutti) return run_mpi();
  const std::optional<size_t> class_bytes = class_bytes_of(bytes, route);
  if (!class_bytes) {
    count_passed(Pass::agreement_failed);
    return run_mpi();
  }
  const Policy::Choice choice = route.policy->choose(coll, *class_bytes);
  // A side's timed run starts on every rank at once (policy.hpp).
  const bool timing_failed = choice.starts_run && PMPI_Barrier(comm) != MPI_SUCCESS;
  const double start = choice.trial ? PMPI_Wtime() : 0;
  int rc;
  if (choice.side == Policy::Side::mpi) {
    count_passed(choice.trial ? Pass::trial : Pass::mpi_faster);
    rc = run_mpi();
  } else {
    int status;
    {
      InsideTutti inside;
      status = run_tutti(route.tutti);
    }
    count_ran_in_tutti();
    rc = status == 0 ? MPI_SUCCESS : raise_tutti_error(comm, status);
  }
  if (choice.trial) route.policy->record(choice, start, PMPI_Wtime(), comm, timing_failed);
  return rc;
}

// A non-blocking one: `start_tutti(tutti_comm_t, tutti_request_t*)` starts
// it in tutti, and *request becomes an MPI request that MPI_Wait & co.
// complete (requests.hpp). `keep` lives as long as the request (arguments
// tutti reads until completion). It goes where the policy has decided for
// its class (tutti until then).
template <typename CheckArgs, typename Bytes, typename StartTutti, typename RunMpi>
int serve_nonblocking(MPI_Comm comm, Coll coll, MPI_Request* request, CheckArgs&& check_args,
                      Bytes&& bytes, StartTutti&& start_tutti, RunMpi&& run_mpi,
                      std::shared_ptr<void> keep = nullptr) {
  if (!request) return run_mpi();  // MPI reports the missing request
  const Route route = route_call(comm, check_args);
  if (!route.tutti) return run_mpi();
  const std::optional<size_t> class_bytes = class_bytes_of(bytes, route);
  if (!class_bytes) {
    count_passed(Pass::agreement_failed);
    return run_mpi();
  }
  if (route.policy->decided(coll, *class_bytes) == Policy::Side::mpi) {
    count_passed(Pass::mpi_faster);
    return run_mpi();
  }
  tutti_request_t started = nullptr;
  int status;
  {
    InsideTutti inside;
    status = start_tutti(route.tutti, &started);
  }
  count_ran_in_tutti();
  if (status != 0) return raise_tutti_error(comm, status);
  return wrap_tutti_request(comm, started, std::move(keep), request);
}

}  // namespace tutti::interpose
