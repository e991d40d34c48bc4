// Whether tutti can take an MPI collective's arguments, and what they are in
// tutti's terms: shared by the blocking and the non-blocking forms.
//
// Every answer is Pass::count_ ("serve it") or the reason for MPI, and must
// be the same on every rank of a correct program: a rank's call goes to tutti
// only if all ranks' calls do. Root-only arguments are read only at the root.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "interpose/mpi_types.hpp"
#include "interpose/stats.hpp"

namespace tutti::interpose {

constexpr Pass kServe = Pass::count_;

inline bool in_place(const void* buf) { return buf == MPI_IN_PLACE; }

// The checks every call makes are inline (mpi_types.hpp says why).

// Bytes of `count` elements of `dt` (0 where they are not contiguous or
// the count is negative: the checks below refuse those first).
inline size_t block_bytes(int count, MPI_Datatype dt) {
  return count < 0 ? 0 : element_bytes(dt) * static_cast<size_t>(count);
}

// Bytes of a reduction's vector (for the policy's size classes).
inline size_t reduction_bytes(int count, MPI_Datatype dt) { return block_bytes(count, dt); }

inline Pass why_not_reduction(int count, MPI_Datatype dt, MPI_Op op) {
  if (count < 0) return Pass::bad_arguments;
  if (!reduction_type(dt)) return Pass::datatype;
  if (!reduction_op(op)) return Pass::op;
  return kServe;
}
// MPI_Reduce_scatter: served when every rank receives the same count.
Pass why_not_reduce_scatter(MPI_Comm comm, const int recvcounts[], MPI_Datatype dt, MPI_Op op);

// A block of count x dt moved as bytes.
inline Pass why_not_bytes(int count, MPI_Datatype dt) {
  if (count < 0) return Pass::bad_arguments;
  return element_bytes(dt) ? kServe : Pass::datatype;
}

// Allgather and alltoall: the receive block, and the send block unless in
// place; `bytes` gets the receive block's bytes where served.
inline Pass why_not_symmetric(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                              int recvcount, MPI_Datatype recvtype, size_t* bytes = nullptr) {
  if (const Pass p = why_not_bytes(recvcount, recvtype); p != kServe) return p;
  const size_t recv_bytes = block_bytes(recvcount, recvtype);
  if (bytes) *bytes = recv_bytes;
  if (in_place(sendbuf)) return kServe;
  if (const Pass p = why_not_bytes(sendcount, sendtype); p != kServe) return p;
  // Different byte counts are MPI's error to report.
  return block_bytes(sendcount, sendtype) == recv_bytes ? kServe : Pass::bad_arguments;
}

// Gather and scatter: the bytes of one rank's block, or why not.
struct RootedBlock {
  Pass pass = kServe;
  size_t bytes = 0;
};
// `rank`: this rank in the communicator.
inline RootedBlock gather_block(int rank, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                int recvcount, MPI_Datatype recvtype, int root) {
  if (rank != root) {
    const Pass p = why_not_bytes(sendcount, sendtype);
    return {p, p == kServe ? block_bytes(sendcount, sendtype) : 0};
  }
  size_t bytes = 0;
  const Pass p = why_not_symmetric(sendbuf, sendcount, sendtype, recvcount, recvtype, &bytes);
  return {p, p == kServe ? bytes : 0};
}

inline RootedBlock scatter_block(int rank, const void* recvbuf, int sendcount,
                                 MPI_Datatype sendtype, int recvcount, MPI_Datatype recvtype,
                                 int root) {
  if (rank != root) {
    const Pass p = why_not_bytes(recvcount, recvtype);
    return {p, p == kServe ? block_bytes(recvcount, recvtype) : 0};
  }
  // At the root the send side is the one always given (recvbuf may be in place).
  size_t bytes = 0;
  const Pass p = why_not_symmetric(recvbuf, recvcount, recvtype, sendcount, sendtype, &bytes);
  return {p, p == kServe ? bytes : 0};
}

// Alltoallv's counts and displacements in bytes (tutti's byte-wise alltoallv).
struct VectorBytes {
  std::vector<size_t> send_counts, send_displs, recv_counts, recv_displs;
  size_t sent = 0, received = 0;  // totals, in bytes
  // This rank's size, as tutti counts an alltoallv's: the larger of the
  // bytes it sends and receives.
  size_t moved() const { return std::max(sent, received); }
};
Pass alltoallv_bytes(MPI_Comm comm, const void* sendbuf, const int sendcounts[],
                     const int sdispls[], MPI_Datatype sendtype, const int recvcounts[],
                     const int rdispls[], MPI_Datatype recvtype, VectorBytes& out);

}  // namespace tutti::interpose
