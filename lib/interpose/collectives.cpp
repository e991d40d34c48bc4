// The blocking MPI collectives, served by tutti where it can (see serve.hpp),
// by the MPI library (PMPI_*) everywhere else.
//
// Reductions use tutti's element types; data movement moves bytes, so any
// contiguous datatype works and send and receive types may differ as MPI
// allows, as long as the byte counts agree.
#include <mpi.h>

#include <optional>
#include <vector>

#include "interpose/call_checks.hpp"
#include "interpose/mpi_types.hpp"
#include "interpose/serve.hpp"
#include "tutti/tutti.h"

using namespace tutti::interpose;

extern "C" {

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                  MPI_Comm comm) {
  return serve(
      comm, Coll::allreduce, [&] { return why_not_reduction(count, dt, op); },
      [&] { return reduction_bytes(count, dt); },
      [&](tutti_comm_t t) {
        return tutti_allreduce(sendbuf, recvbuf, count, *reduction_type(dt), *reduction_op(op), t);
      },
      [&] { return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm); });
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype dt, MPI_Op op,
               int root, MPI_Comm comm) {
  return serve(
      comm, Coll::reduce, [&] { return why_not_reduction(count, dt, op); },
      [&] { return reduction_bytes(count, dt); },
      [&](tutti_comm_t t) {
        return tutti_reduce(sendbuf, recvbuf, count, *reduction_type(dt), *reduction_op(op), root,
                            t);
      },
      [&] { return PMPI_Reduce(sendbuf, recvbuf, count, dt, op, root, comm); });
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype dt,
                             MPI_Op op, MPI_Comm comm) {
  return serve(
      comm, Coll::reduce_scatter, [&] { return why_not_reduction(recvcount, dt, op); },
      [&] { return reduction_bytes(recvcount, dt); },
      [&](tutti_comm_t t) {
        return tutti_reduce_scatter(sendbuf, recvbuf, recvcount, *reduction_type(dt),
                                    *reduction_op(op), t);
      },
      [&] { return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, dt, op, comm); });
}

// Served when every rank receives the same count (the block form); other
// counts go to MPI.
int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                       MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
  return serve(
      comm, Coll::reduce_scatter, [&] { return why_not_reduce_scatter(comm, recvcounts, dt, op); },
      [&] { return reduction_bytes(recvcounts[0], dt); },
      [&](tutti_comm_t t) {
        return tutti_reduce_scatter(sendbuf, recvbuf, recvcounts[0], *reduction_type(dt),
                                    *reduction_op(op), t);
      },
      [&] { return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, dt, op, comm); });
}

int MPI_Bcast(void* buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
  return serve(
      comm, Coll::bcast, [&] { return why_not_bytes(count, dt); },
      [&] { return block_bytes(count, dt); },
      [&](tutti_comm_t t) { return tutti_bcast(buf, block_bytes(count, dt), TUTTI_UINT8, root, t); },
      [&] { return PMPI_Bcast(buf, count, dt, root, comm); });
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return serve(
      comm, Coll::allgather,
      [&] { return why_not_symmetric(sendbuf, sendcount, sendtype, recvcount, recvtype); },
      [&] { return block_bytes(recvcount, recvtype); },
      [&](tutti_comm_t t) {
        return tutti_allgather(sendbuf, recvbuf, block_bytes(recvcount, recvtype), TUTTI_UINT8, t);
      },
      [&] {
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      });
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return serve(
      comm, Coll::alltoall,
      [&] { return why_not_symmetric(sendbuf, sendcount, sendtype, recvcount, recvtype); },
      [&] { return block_bytes(recvcount, recvtype); },
      [&](tutti_comm_t t) {
        return tutti_alltoall(sendbuf, recvbuf, block_bytes(recvcount, recvtype), TUTTI_UINT8, t);
      },
      [&] {
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      });
}

// The root's receive arguments matter only at the root; elsewhere only the
// send side is read, as in MPI.
int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  RootedBlock block;
  return serve(
      comm, Coll::gather,
      [&](const Route& route) {
        block = gather_block(route.rank, sendbuf, sendcount, sendtype, recvcount, recvtype, root);
        return block.pass;
      },
      [&] { return block.bytes; },
      [&](tutti_comm_t t) {
        return tutti_gather(sendbuf, recvbuf, block.bytes, TUTTI_UINT8, root, t);
      },
      [&] {
        return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
      });
}

int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  RootedBlock block;
  return serve(
      comm, Coll::scatter,
      [&](const Route& route) {
        block = scatter_block(route.rank, recvbuf, sendcount, sendtype, recvcount, recvtype, root);
        return block.pass;
      },
      [&] { return block.bytes; },
      [&](tutti_comm_t t) {
        return tutti_scatter(sendbuf, recvbuf, block.bytes, TUTTI_UINT8, root, t);
      },
      [&] {
        return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                            comm);
      });
}

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  thread_local VectorBytes bytes;
  return serve(
      comm, Coll::alltoallv,
      [&] {
        return alltoallv_bytes(comm, sendbuf, sendcounts, sdispls, sendtype, recvcounts, rdispls,
                               recvtype, bytes);
      },
      // Each rank's size differs, and a class must be the same on every
      // rank of a call: classed by the size the ranks agree on.
      [&](const Route& route) -> std::optional<size_t> {
        size_t agreed = 0;
        if (!route.policy->agree_alltoallv_bytes(bytes.moved(), comm, agreed)) return std::nullopt;
        return agreed;
      },
      [&](tutti_comm_t t) {
        return tutti_alltoallv(sendbuf, bytes.send_counts.data(), bytes.send_displs.data(),
                               recvbuf, bytes.recv_counts.data(), bytes.recv_displs.data(),
                               TUTTI_UINT8, t);
      },
      [&] {
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                              recvtype, comm);
      });
}

int MPI_Barrier(MPI_Comm comm) {
  return serve(
      comm, Coll::barrier, [] { return kServe; }, [] { return size_t{0}; },
      [&](tutti_comm_t t) { return tutti_barrier(t); },
      [&] { return PMPI_Barrier(comm); });
}

}  // extern "C"
