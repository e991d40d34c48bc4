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
// Throws Error on MPI failure. MPI can neither cancel a collective nor
// finish it without the other ranks: an operation cancelled (timed out)
// with its collective in flight leaves the buffers it owns to MPI and sets
// *comm_in_use, after which `comm` must not be freed (its collective may
// still progress, inside any later MPI call, until MPI_Finalize).
std::unique_ptr<Operation> start_mpi_collective(const CollArgs& args, const void* in, void* out,
                                                MPI_Comm comm, int rank, int nranks,
                                                const OpLabel& label,
                                                std::shared_ptr<bool> comm_in_use);

}  // namespace tutti
