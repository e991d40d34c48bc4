// The blocking MPI collectives, served by tutti where it can (see serve.hpp),
// by the MPI library (PMPI_*) everywhere else.
//
// Reductions use tutti's element types; data movement moves bytes, so any
// contiguous datatype works and send and receive types may differ as MPI
// allows, as long as the byte counts agree.
#include <mpi.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "interpose/mpi_types.hpp"
#include "interpose/serve.hpp"
#include "tutti/tutti.h"

using namespace tutti::interpose;

namespace {

constexpr Pass kServe = Pass::count_;

bool in_place(const void* buf) { return buf == MPI_IN_PLACE; }

// Bytes of `count` elements of `dt`, when they are contiguous.
std::optional<size_t> block_bytes(int count, MPI_Datatype dt) {
  if (count < 0) return std::nullopt;
  auto bytes = contiguous_bytes(dt);
  if (!bytes) return std::nullopt;
  return *bytes * static_cast<size_t>(count);
}

Pass why_not_reduction(int count, MPI_Datatype dt, MPI_Op op) {
  if (count < 0) return Pass::bad_arguments;
  if (!reduction_type(dt)) return Pass::datatype;
  if (!reduction_op(op)) return Pass::op;
  return kServe;
}

// Why a block of `count` x `dt` cannot be moved as bytes.
Pass why_not_bytes(int count, MPI_Datatype dt) {
  if (count < 0) return Pass::bad_arguments;
  return contiguous_bytes(dt) ? kServe : Pass::datatype;
}

// Both sides of a data-movement call: contiguous, and the same bytes.
Pass why_not_pair(int send_count, MPI_Datatype send_dt, int recv_count, MPI_Datatype recv_dt) {
  if (const Pass p = why_not_bytes(recv_count, recv_dt); p != kServe) return p;
  if (const Pass p = why_not_bytes(send_count, send_dt); p != kServe) return p;
  return *block_bytes(send_count, send_dt) == *block_bytes(recv_count, recv_dt)
             ? kServe
             : Pass::bad_arguments;
}

}  // namespace

extern "C" {

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                  MPI_Comm comm) {
  return serve(
      comm, [&] { return why_not_reduction(count, dt, op); },
      [&](tutti_comm_t t) {
        return tutti_allreduce(sendbuf, recvbuf, count, *reduction_type(dt), *reduction_op(op), t);
      },
      [&] { return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm); });
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype dt, MPI_Op op,
               int root, MPI_Comm comm) {
  return serve(
      comm, [&] { return why_not_reduction(count, dt, op); },
      [&](tutti_comm_t t) {
        return tutti_reduce(sendbuf, recvbuf, count, *reduction_type(dt), *reduction_op(op), root,
                            t);
      },
      [&] { return PMPI_Reduce(sendbuf, recvbuf, count, dt, op, root, comm); });
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype dt,
                             MPI_Op op, MPI_Comm comm) {
  return serve(
      comm, [&] { return why_not_reduction(recvcount, dt, op); },
      [&](tutti_comm_t t) {
        return tutti_reduce_scatter(sendbuf, recvbuf, recvcount, *reduction_type(dt),
                                    *reduction_op(op), t);
      },
      [&] { return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, dt, op, comm); });
}

// Served when every rank receives the same count (the block form); other
// counts go to MPI. recvcounts is the same array on every rank.
int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                       MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
  auto equal_counts = [&]() -> Pass {
    int size = 0;
    if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS || !recvcounts) return Pass::bad_arguments;
    for (int i = 1; i < size; ++i)
      if (recvcounts[i] != recvcounts[0]) return Pass::uneven_counts;
    return why_not_reduction(recvcounts[0], dt, op);
  };
  return serve(
      comm, equal_counts,
      [&](tutti_comm_t t) {
        return tutti_reduce_scatter(sendbuf, recvbuf, recvcounts[0], *reduction_type(dt),
                                    *reduction_op(op), t);
      },
      [&] { return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, dt, op, comm); });
}

int MPI_Bcast(void* buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
  return serve(
      comm, [&] { return why_not_bytes(count, dt); },
      [&](tutti_comm_t t) { return tutti_bcast(buf, *block_bytes(count, dt), TUTTI_UINT8, root, t); },
      [&] { return PMPI_Bcast(buf, count, dt, root, comm); });
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return serve(
      comm,
      [&] {
        return in_place(sendbuf) ? why_not_bytes(recvcount, recvtype)
                                 : why_not_pair(sendcount, sendtype, recvcount, recvtype);
      },
      [&](tutti_comm_t t) {
        return tutti_allgather(sendbuf, recvbuf, *block_bytes(recvcount, recvtype), TUTTI_UINT8, t);
      },
      [&] {
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      });
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return serve(
      comm,
      [&] {
        return in_place(sendbuf) ? why_not_bytes(recvcount, recvtype)
                                 : why_not_pair(sendcount, sendtype, recvcount, recvtype);
      },
      [&](tutti_comm_t t) {
        return tutti_alltoall(sendbuf, recvbuf, *block_bytes(recvcount, recvtype), TUTTI_UINT8, t);
      },
      [&] {
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      });
}

// The root's receive arguments matter only at the root; elsewhere only the
// send side is read, as in MPI.
int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  int rank = -1;
  size_t bytes = 0;
  auto check = [&]() -> Pass {
    if (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS) return Pass::not_ready;
    const bool at_root = rank == root;
    const Pass p = at_root ? (in_place(sendbuf) ? why_not_bytes(recvcount, recvtype)
                                                : why_not_pair(sendcount, sendtype, recvcount,
                                                               recvtype))
                           : why_not_bytes(sendcount, sendtype);
    if (p == kServe)
      bytes = at_root && in_place(sendbuf) ? *block_bytes(recvcount, recvtype)
                                           : *block_bytes(sendcount, sendtype);
    return p;
  };
  return serve(
      comm, check,
      [&](tutti_comm_t t) { return tutti_gather(sendbuf, recvbuf, bytes, TUTTI_UINT8, root, t); },
      [&] {
        return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
      });
}

int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  int rank = -1;
  size_t bytes = 0;
  auto check = [&]() -> Pass {
    if (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS) return Pass::not_ready;
    const bool at_root = rank == root;
    const Pass p = at_root ? (in_place(recvbuf) ? why_not_bytes(sendcount, sendtype)
                                                : why_not_pair(sendcount, sendtype, recvcount,
                                                               recvtype))
                           : why_not_bytes(recvcount, recvtype);
    if (p == kServe)
      bytes = at_root ? *block_bytes(sendcount, sendtype) : *block_bytes(recvcount, recvtype);
    return p;
  };
  return serve(
      comm, check,
      [&](tutti_comm_t t) { return tutti_scatter(sendbuf, recvbuf, bytes, TUTTI_UINT8, root, t); },
      [&] {
        return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                            comm);
      });
}

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  // Counts and displacements in bytes, for tutti's byte-wise alltoallv.
  thread_local std::vector<size_t> scounts, sdisps, rcounts, rdisps;
  auto check = [&]() -> Pass {
    int size = 0;
    if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS) return Pass::not_ready;
    const bool inplace = in_place(sendbuf);
    const auto rbytes = contiguous_bytes(recvtype);
    const auto sbytes = inplace ? rbytes : contiguous_bytes(sendtype);
    if (!rbytes || !sbytes) return Pass::datatype;
    if (!recvcounts || !rdispls || (!inplace && (!sendcounts || !sdispls)))
      return Pass::bad_arguments;
    rcounts.resize(size), rdisps.resize(size), scounts.resize(size), sdisps.resize(size);
    for (int i = 0; i < size; ++i) {
      if (recvcounts[i] < 0 || rdispls[i] < 0) return Pass::bad_arguments;
      rcounts[i] = recvcounts[i] * *rbytes;
      rdisps[i] = rdispls[i] * *rbytes;
      if (inplace) continue;
      if (sendcounts[i] < 0 || sdispls[i] < 0) return Pass::bad_arguments;
      scounts[i] = sendcounts[i] * *sbytes;
      sdisps[i] = sdispls[i] * *sbytes;
    }
    return kServe;
  };
  return serve(
      comm, check,
      [&](tutti_comm_t t) {
        return tutti_alltoallv(sendbuf, scounts.data(), sdisps.data(), recvbuf, rcounts.data(),
                               rdisps.data(), TUTTI_UINT8, t);
      },
      [&] {
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                              recvtype, comm);
      });
}

int MPI_Barrier(MPI_Comm comm) {
  return serve(
      comm, [] { return kServe; }, [&](tutti_comm_t t) { return tutti_barrier(t); },
      [&] { return PMPI_Barrier(comm); });
}

}  // extern "C"
