#include "interpose/call_checks.hpp"

#include "interpose/mpi_types.hpp"

namespace tutti::interpose {

std::optional<size_t> block_bytes(int count, MPI_Datatype dt) {
  if (count < 0) return std::nullopt;
  auto bytes = contiguous_bytes(dt);
  if (!bytes) return std::nullopt;
  return *bytes * static_cast<size_t>(count);
}

size_t reduction_bytes(int count, MPI_Datatype dt) {
  return block_bytes(count, dt).value_or(0);
}

Pass why_not_reduction(int count, MPI_Datatype dt, MPI_Op op) {
  if (count < 0) return Pass::bad_arguments;
  if (!reduction_type(dt)) return Pass::datatype;
  if (!reduction_op(op)) return Pass::op;
  return kServe;
}

Pass why_not_reduce_scatter(MPI_Comm comm, const int recvcounts[], MPI_Datatype dt, MPI_Op op) {
  int size = 0;
  if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS || !recvcounts) return Pass::bad_arguments;
  for (int i = 1; i < size; ++i)
    if (recvcounts[i] != recvcounts[0]) return Pass::uneven_counts;
  return why_not_reduction(recvcounts[0], dt, op);
}

Pass why_not_bytes(int count, MPI_Datatype dt) {
  if (count < 0) return Pass::bad_arguments;
  return contiguous_bytes(dt) ? kServe : Pass::datatype;
}

Pass why_not_symmetric(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount,
                       MPI_Datatype recvtype) {
  if (const Pass p = why_not_bytes(recvcount, recvtype); p != kServe) return p;
  if (in_place(sendbuf)) return kServe;
  if (const Pass p = why_not_bytes(sendcount, sendtype); p != kServe) return p;
  // Different byte counts are MPI's error to report.
  return *block_bytes(sendcount, sendtype) == *block_bytes(recvcount, recvtype)
             ? kServe
             : Pass::bad_arguments;
}

RootedBlock gather_block(MPI_Comm comm, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                         int recvcount, MPI_Datatype recvtype, int root) {
  int rank = -1;
  if (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS) return {Pass::not_ready};
  if (rank != root) {
    const Pass p = why_not_bytes(sendcount, sendtype);
    return {p, p == kServe ? *block_bytes(sendcount, sendtype) : 0};
  }
  const Pass p = why_not_symmetric(sendbuf, sendcount, sendtype, recvcount, recvtype);
  return {p, p == kServe ? *block_bytes(recvcount, recvtype) : 0};
}

RootedBlock scatter_block(MPI_Comm comm, const void* recvbuf, int sendcount,
                          MPI_Datatype sendtype, int recvcount, MPI_Datatype recvtype, int root) {
  int rank = -1;
  if (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS) return {Pass::not_ready};
  if (rank != root) {
    const Pass p = why_not_bytes(recvcount, recvtype);
    return {p, p == kServe ? *block_bytes(recvcount, recvtype) : 0};
  }
  // At the root the send side is the one always given (recvbuf may be in place).
  const Pass p = why_not_symmetric(recvbuf, recvcount, recvtype, sendcount, sendtype);
  return {p, p == kServe ? *block_bytes(sendcount, sendtype) : 0};
}

Pass alltoallv_bytes(MPI_Comm comm, const void* sendbuf, const int sendcounts[],
                     const int sdispls[], MPI_Datatype sendtype, const int recvcounts[],
                     const int rdispls[], MPI_Datatype recvtype, VectorBytes& out) {
  int size = 0;
  if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS) return Pass::not_ready;
  const bool inplace = in_place(sendbuf);
  const auto rbytes = contiguous_bytes(recvtype);
  const auto sbytes = inplace ? rbytes : contiguous_bytes(sendtype);
  if (!rbytes || !sbytes) return Pass::datatype;
  if (!recvcounts || !rdispls || (!inplace && (!sendcounts || !sdispls)))
    return Pass::bad_arguments;
  const size_t n = static_cast<size_t>(size);
  out.recv_counts.resize(n), out.recv_displs.resize(n);
  out.send_counts.resize(n), out.send_displs.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (recvcounts[i] < 0 || rdispls[i] < 0) return Pass::bad_arguments;
    out.recv_counts[i] = static_cast<size_t>(recvcounts[i]) * *rbytes;
    out.recv_displs[i] = static_cast<size_t>(rdispls[i]) * *rbytes;
    if (inplace) continue;  // tutti takes the receive side's shape, as MPI does
    if (sendcounts[i] < 0 || sdispls[i] < 0) return Pass::bad_arguments;
    out.send_counts[i] = static_cast<size_t>(sendcounts[i]) * *sbytes;
    out.send_displs[i] = static_cast<size_t>(sdispls[i]) * *sbytes;
  }
  return kServe;
}

}  // namespace tutti::interpose
