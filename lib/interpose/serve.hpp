// The path every interposed call takes: to MPI (PMPI_*) or to tutti.
#pragma once

#include <mpi.h>

#include "interpose/comm_table.hpp"
#include "interpose/errors.hpp"
#include "interpose/guard.hpp"
#include "interpose/stats.hpp"

namespace tutti::interpose {

// `check_args` says whether tutti can take the call's arguments (Pass::count_
// for yes, else the reason it cannot); it must answer alike on every rank
// of a correct program. `run_tutti(tutti_comm_t)` returns a tutti status,
// `run_mpi()` an MPI one. Calls made by tutti itself go straight to MPI,
// uncounted.
template <typename CheckArgs, typename RunTutti, typename RunMpi>
int serve(MPI_Comm comm, CheckArgs&& check_args, RunTutti&& run_tutti, RunMpi&& run_mpi) {
  if (inside_tutti()) return run_mpi();
  if (!interposition_enabled()) {
    count_passed(Pass::disabled);
    return run_mpi();
  }
  if (const Pass problem = check_args(); problem != Pass::count_) {
    count_passed(problem);
    return run_mpi();
  }
  const Route route = route_for(comm);
  if (!route.tutti) {
    count_passed(route.reason);
    return run_mpi();
  }
  int status;
  {
    InsideTutti inside;
    status = run_tutti(route.tutti);
  }
  count_ran_in_tutti();
  return status == 0 ? MPI_SUCCESS : raise_tutti_error(comm, status);
}

}  // namespace tutti::interpose
