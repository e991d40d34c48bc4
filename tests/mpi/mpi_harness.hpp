// Shared pieces of the mpirun tests: the tutti communicator under test, a
// call of any collective through the public C API, and agreement of results
// across ranks (so every rank reports the same outcome and no rank leaves a
// collective sequence early).
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "engine/coll_args.hpp"
#include "reference.hpp"
#include "tutti/tutti.h"

namespace tutti::testing {

// The communicator over MPI_COMM_WORLD, created once by the test main.
tutti_comm_t world();
int world_rank();
int world_size();
// How many of the world's ranks share this rank's node, as MPI sees it
// (MPI_COMM_TYPE_SHARED).
int ranks_on_this_node();

// Calls the collective described by `args` through the C API (blocking, or
// non-blocking + tutti_wait). in/out as the user would pass them, including
// TUTTI_IN_PLACE.
int call_collective(const CollArgs& args, const void* sendbuf, void* recvbuf, bool nonblocking);

// True on every rank iff `ok` is true on every rank.
bool all_ranks(bool ok);

// Runs one collective with random inputs on every rank and checks every
// rank's output against the reference. Returns "" or a description of what
// went wrong on the first failing rank (the same string on all ranks).
std::string check_collective(CollArgs args, uint64_t seed, bool nonblocking = false);

}  // namespace tutti::testing
