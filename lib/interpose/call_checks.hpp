// Whether tutti can take an MPI collective's arguments, and what they are in
// tutti's terms: shared by the blocking and the non-blocking forms.
//
// Every answer is Pass::count_ ("serve it") or the reason for MPI, and must
// be the same on every rank of a correct program: a rank's call goes to tutti
// only if all ranks' calls do. Root-only arguments are read only at the root.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "interpose/stats.hpp"

namespace tutti::interpose {

constexpr Pass kServe = Pass::count_;

inline bool in_place(const void* buf) { return buf == MPI_IN_PLACE; }

// Bytes of `count` elements of `dt`, when they are contiguous.
std::optional<size_t> block_bytes(int count, MPI_Datatype dt);

// Bytes of a reduction's vector (for the policy's size classes).
size_t reduction_bytes(int count, MPI_Datatype dt);

Pass why_not_reduction(int count, MPI_Datatype dt, MPI_Op op);
// MPI_Reduce_scatter: served when every rank receives the same count.
Pass why_not_reduce_scatter(MPI_Comm comm, const int recvcounts[], MPI_Datatype dt, MPI_Op op);
// A block of count x dt moved as bytes.
Pass why_not_bytes(int count, MPI_Datatype dt);
// Allgather and alltoall: the receive block, and the send block unless in place.
Pass why_not_symmetric(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount,
                       MPI_Datatype recvtype);

// Gather and scatter: the bytes of one rank's block, or why not.
struct RootedBlock {
  Pass pass = kServe;
  size_t bytes = 0;
};
RootedBlock gather_block(MPI_Comm comm, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                         int recvcount, MPI_Datatype recvtype, int root);
RootedBlock scatter_block(MPI_Comm comm, const void* recvbuf, int sendcount,
                          MPI_Datatype sendtype, int recvcount, MPI_Datatype recvtype, int root);

// Alltoallv's counts and displacements in bytes (tutti's byte-wise alltoallv).
struct VectorBytes {
  std::vector<size_t> send_counts, send_displs, recv_counts, recv_displs;
};
Pass alltoallv_bytes(MPI_Comm comm, const void* sendbuf, const int sendcounts[],
                     const int sdispls[], MPI_Datatype sendtype, const int recvcounts[],
                     const int rdispls[], MPI_Datatype recvtype, VectorBytes& out);

}  // namespace tutti::interpose
