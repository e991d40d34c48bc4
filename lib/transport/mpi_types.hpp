// Mapping of tutti datatypes and ops onto MPI, and MPI error reporting.
#pragma once

#include <mpi.h>

#include <string>

#include "base/types.hpp"

namespace tutti {

MPI_Datatype mpi_datatype(Datatype dt);
// The MPI op that computes `op` on `dt` (Op::Avg: the sum; divide after).
// fp16/bf16 use user-defined ops built on tutti's host reducer, since MPI has
// no 16-bit float types.
MPI_Op mpi_op(Op op, Datatype dt);

std::string mpi_error_string(int rc);
// Throws Error(TUTTI_ERR_TRANSPORT, "<what>: <MPI's message>") unless rc is MPI_SUCCESS.
void check_mpi(int rc, const char* what);

}  // namespace tutti
