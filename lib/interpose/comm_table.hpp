// One tutti communicator per MPI communicator, made on first use.
//
// The first collective call that tutti serves on an MPI communicator creates
// its tutti communicator (collective: MPI requires every rank to make its
// collective calls on a communicator in the same order, so all create it in
// the same call). It is kept in an attribute of the MPI communicator, with a
// delete callback: MPI_Comm_free destroys it. Duplicates do not inherit it.
// MPI_Finalize destroys those still alive, newest first.
#pragma once

#include <mpi.h>

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
};

// False when TUTTI_MPI=0: every call goes to MPI.
bool interposition_enabled();

// The answer depends only on the communicator (the same on every rank of it).
// Creates the tutti communicator on first use.
Route route_for(MPI_Comm comm);

// Called by MPI_Finalize before the MPI library finalises.
void destroy_all_communicators();

}  // namespace tutti::interpose
