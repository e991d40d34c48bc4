// tutti-tune --calibrate: measures the cost model's machine description
// (model/machine.hpp, docs/SCALE.md) on this job and writes it as TOML.
#pragma once

#include <mpi.h>

#include <string>

namespace tutti::apps {

// Collective over MPI_COMM_WORLD. Rank 0 writes `path` and returns 0 on
// every rank; throws Error on failure (every rank alike where MPI allows).
int calibrate(const std::string& path, const std::string& command_line);

}  // namespace tutti::apps
