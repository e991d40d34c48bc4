#include "interpose/call_checks.hpp"

namespace tutti::interpose {

Pass why_not_reduce_scatter(MPI_Comm comm, const int recvcounts[], MPI_Datatype dt, MPI_Op op) {
  int size = 0;
  if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS || !recvcounts) return Pass::bad_arguments;
  for (int i = 1; i < size; ++i)
    if (recvcounts[i] != recvcounts[0]) return Pass::uneven_counts;
  return why_not_reduction(recvcounts[0], dt, op);
}

Pass alltoallv_bytes(MPI_Comm comm, const void* sendbuf, const int sendcounts[],
                     const int sdispls[], MPI_Datatype sendtype, const int recvcounts[],
                     const int rdispls[], MPI_Datatype recvtype, VectorBytes& out) {
  int size = 0;
  if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS) return Pass::not_ready;
  const bool inplace = in_place(sendbuf);
  const size_t rbytes = element_bytes(recvtype);
  const size_t sbytes = inplace ? rbytes : element_bytes(sendtype);
  if (!rbytes || !sbytes) return Pass::datatype;
  if (!recvcounts || !rdispls || (!inplace && (!sendcounts || !sdispls)))
    return Pass::bad_arguments;
  const size_t n = static_cast<size_t>(size);
  out.recv_counts.resize(n), out.recv_displs.resize(n);
  out.send_counts.resize(n), out.send_displs.resize(n);
  out.sent = out.received = 0;
  for (size_t i = 0; i < n; ++i) {
    if (recvcounts[i] < 0 || rdispls[i] < 0) return Pass::bad_arguments;
    out.recv_counts[i] = static_cast<size_t>(recvcounts[i]) * rbytes;
    out.recv_displs[i] = static_cast<size_t>(rdispls[i]) * rbytes;
    out.received += out.recv_counts[i];
    if (inplace) continue;  // tutti takes the receive side's shape, as MPI does
    if (sendcounts[i] < 0 || sdispls[i] < 0) return Pass::bad_arguments;
    out.send_counts[i] = static_cast<size_t>(sendcounts[i]) * sbytes;
    out.send_displs[i] = static_cast<size_t>(sdispls[i]) * sbytes;
    out.sent += out.send_counts[i];
  }
  return kServe;
}

}  // namespace tutti::interpose
