// The "mpi" algorithm: the MPI library's own non-blocking collective
// (MPI_Iallreduce & co.) on the communicator's private duplicate, wrapped as
// an Operation so it is waited on, timed out and reported like any other.
#pragma once

#include <mpi.h>

#include <memory>

#include "engine/coll_args.hpp"
#include "engine/operation.hpp"

namespace tutti {

// Starts the collective. in/out follow the C API after in-place
// normalisation (see api/api.cpp): for in-place calls `in` points into `out`.
// Throws Error on MPI failure.
std::unique_ptr<Operation> start_mpi_collective(const CollArgs& args, const void* in, void* out,
                                                MPI_Comm comm, int rank, int nranks,
                                                const OpLabel& label);

}  // namespace tutti
