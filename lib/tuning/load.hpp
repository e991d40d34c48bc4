// Loading the user's tuning table for a communicator: collective, so that
// every rank fails alike or agrees (by hash) on one table.
#pragma once

#include <mpi.h>

#include "tuning/config.hpp"
#include "tuning/dispatch.hpp"
#include "tuning/file.hpp"

namespace tutti {

// Collective over `comm`: loads TUTTI_TUNE and the tuning file for this
// job's shape and checks that every rank loaded the same table. Throws the
// same Error on every rank: the first failing rank's error
// (TUTTI_ERR_INVALID_ARGUMENT), or TUTTI_ERR_MISMATCH naming the ranks whose
// tables differ. Rank 0 prints non-strict warnings (once per process) and,
// with TUTTI_DEBUG, where the table came from.
UserTuning load_job_tuning(MPI_Comm comm, const Config& cfg, const Topology& topo);

// Collective over `comm`: the machine description for the cost model
// (TUTTI_MACHINE, or the built-in one), the same on every rank (checked by
// hash, failing like load_job_tuning).
model::Machine load_job_machine(MPI_Comm comm, const Config& cfg);

// The dispatcher of a new communicator: its topology, user table and
// machine description.
Dispatcher make_dispatcher(MPI_Comm comm, const Config& cfg, Topology topo);

// "0-2, 5, 7-8".
std::string format_rank_list(const std::vector<int>& sorted_ranks);

}  // namespace tutti
