// Which MPI datatypes and ops tutti can serve, and as what.
//
// Reductions need one of tutti's element types and ops. Data movement
// (bcast, gather, alltoall ...) moves bytes: any datatype whose elements lie
// back to back (size == extent == true extent, lower bound 0) is served as
// count * size bytes. The answer depends only on the datatype, never on the
// rank, so every rank of a call takes the same path (a rank that passed a
// collective to MPI while another ran it in tutti would hang both).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>

#include "tutti/tutti.h"

namespace tutti::interpose {

std::optional<tutti_datatype_t> reduction_type(MPI_Datatype dt);
std::optional<tutti_op_t> reduction_op(MPI_Op op);

// Bytes of one element when the datatype's elements are contiguous.
std::optional<size_t> contiguous_bytes(MPI_Datatype dt);

}  // namespace tutti::interpose
