// The path every interposed call takes: to MPI (PMPI_*) or to tutti.
#pragma once

#include <mpi.h>

#include <memory>

#include "interpose/comm_table.hpp"
#include "interpose/errors.hpp"
#include "interpose/guard.hpp"
#include "interpose/requests.hpp"
#include "interpose/stats.hpp"

namespace tutti::interpose {

// The tutti communicator a collective on `comm` runs on, or null when it
// goes to MPI (the reason counted). `check_args` says whether tutti can take
// the call's arguments (Pass::count_ for yes, else the reason it cannot); it
// must answer alike on every rank of a correct program. Calls made by tutti
// itself go to MPI uncounted.
template <typename CheckArgs>
tutti_comm_t tutti_for_call(MPI_Comm comm, CheckArgs&& check_args) {
  if (inside_tutti()) return nullptr;
  if (!interposition_enabled()) {
    count_passed(Pass::disabled);
    return nullptr;
  }
  if (const Pass problem = check_args(); problem != Pass::count_) {
    count_passed(problem);
    return nullptr;
  }
  const Route route = route_for(comm);
  if (!route.tutti) count_passed(route.reason);
  return route.tutti;
}

// A blocking collective: `run_tutti(tutti_comm_t)` returns a tutti status,
// `run_mpi()` an MPI one.
template <typename CheckArgs, typename RunTutti, typename RunMpi>
int serve(MPI_Comm comm, CheckArgs&& check_args, RunTutti&& run_tutti, RunMpi&& run_mpi) {
  const tutti_comm_t t = tutti_for_call(comm, check_args);
  if (!t) return run_mpi();
  int status;
  {
    InsideTutti inside;
    status = run_tutti(t);
  }
  count_ran_in_tutti();
  return status == 0 ? MPI_SUCCESS : raise_tutti_error(comm, status);
}

// A non-blocking one: `start_tutti(tutti_comm_t, tutti_request_t*)` starts
// it in tutti, and *request becomes an MPI request that MPI_Wait & co.
// complete (requests.hpp). `keep` lives as long as the request (arguments
// tutti reads until completion).
template <typename CheckArgs, typename StartTutti, typename RunMpi>
int serve_nonblocking(MPI_Comm comm, MPI_Request* request, CheckArgs&& check_args,
                      StartTutti&& start_tutti, RunMpi&& run_mpi,
                      std::shared_ptr<void> keep = nullptr) {
  if (!request) return run_mpi();  // MPI reports the missing request
  const tutti_comm_t t = tutti_for_call(comm, check_args);
  if (!t) return run_mpi();
  tutti_request_t started = nullptr;
  int status;
  {
    InsideTutti inside;
    status = start_tutti(t, &started);
  }
  count_ran_in_tutti();
  if (status != 0) return raise_tutti_error(comm, status);
  return wrap_tutti_request(comm, started, std::move(keep), request);
}

}  // namespace tutti::interpose
