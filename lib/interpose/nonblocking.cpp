// The non-blocking MPI collectives (MPI_I*), served by tutti where the
// blocking form would be (the same checks, call_checks.hpp); the request
// they return is completed by MPI_Wait & co. (requests.cpp).
#include <mpi.h>

#include <memory>

#include "interpose/call_checks.hpp"
#include "interpose/mpi_types.hpp"
#include "interpose/serve.hpp"
#include "tutti/tutti.h"

using namespace tutti::interpose;

extern "C" {

int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                   MPI_Comm comm, MPI_Request* request) {
  return serve_nonblocking(
      comm, Coll::allreduce, request, [&] { return why_not_reduction(count, dt, op); },
      [&] { return reduction_bytes(count, dt); },
      [&](tutti_comm_t t, tutti_request_t* r) {
        return tutti_iallreduce(sendbuf, recvbuf, count, *reduction_type(dt), *reduction_op(op),
                                t, r);
      },
      [&] { return PMPI_Iallreduce(sendbuf, recvbuf, count, dt, op, comm, request); });
}

int MPI_Ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                int root, MPI_Comm comm, MPI_Request* request) {
  return serve_nonblocking(
      comm, Coll::reduce, request, [&] { return why_not_reduction(count, dt, op); },
      [&] { return reduction_bytes(count, dt); },
      [&](tutti_comm_t t, tutti_request_t* r) {
        return tutti_ireduce(sendbuf, recvbuf, count, *reduction_type(dt), *reduction_op(op),
                             root, t, r);
      },
      [&] { return PMPI_Ireduce(sendbuf, recvbuf, count, dt, op, root, comm, request); });
}

int MPI_Ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                              MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  return serve_nonblocking(
      comm, Coll::reduce_scatter, request, [&] { return why_not_reduction(recvcount, dt, op); },
      [&] { return reduction_bytes(recvcount, dt); },
      [&](tutti_comm_t t, tutti_request_t* r) {
        return tutti_ireduce_scatter(sendbuf, recvbuf, recvcount, *reduction_type(dt),
                                     *reduction_op(op), t, r);
      },
      [&] {
        return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, dt, op, comm, request);
      });
}

int MPI_Ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                        MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  return serve_nonblocking(
      comm, Coll::reduce_scatter, request, [&] { return why_not_reduce_scatter(comm, recvcounts, dt, op); },
      [&] { return reduction_bytes(recvcounts[0], dt); },
      [&](tutti_comm_t t, tutti_request_t* r) {
        return tutti_ireduce_scatter(sendbuf, recvbuf, recvcounts[0], *reduction_type(dt),
                                     *reduction_op(op), t, r);
      },
      [&] { return PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, dt, op, comm, request); });
}

int MPI_Ibcast(void* buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
               MPI_Request* request) {
  return serve_nonblocking(
      comm, Coll::bcast, request, [&] { return why_not_bytes(count, dt); },
      [&] { return block_bytes(count, dt); },
      [&](tutti_comm_t t, tutti_request_t* r) {
        return tutti_ibcast(buf, block_bytes(count, dt), TUTTI_UINT8, root, t, r);
      },
      [&] { return PMPI_Ibcast(buf, count, dt, root, comm, request); });
}

int MPI_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return serve_nonblocking(
      comm, Coll::allgather, request,
      [&] { return why_not_symmetric(sendbuf, sendcount, sendtype, recvcount, recvtype); },
      [&] { return block_bytes(recvcount, recvtype); },
      [&](tutti_comm_t t, tutti_request_t* r) {
        return tutti_iallgather(sendbuf, recvbuf, block_bytes(recvcount, recvtype), TUTTI_UINT8,
                                t, r);
      },
      [&] {
        return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                               request);
      });
}

int MPI_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return serve_nonblocking(
      comm, Coll::alltoall, request,
      [&] { return why_not_symmetric(sendbuf, sendcount, sendtype, recvcount, recvtype); },
      [&] { return block_bytes(recvcount, recvtype); },
      [&](tutti_comm_t t, tutti_request_t* r) {
        return tutti_ialltoall(sendbuf, recvbuf, block_bytes(recvcount, recvtype), TUTTI_UINT8,
                               t, r);
      },
      [&] {
        return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                              request);
      });
}

int MPI_Igather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                MPI_Request* request) {
  RootedBlock block;
  return serve_nonblocking(
      comm, Coll::gather, request,
      [&](const Route& route) {
        block = gather_block(route.rank, sendbuf, sendcount, sendtype, recvcount, recvtype, root);
        return block.pass;
      },
      [&] { return block.bytes; },
      [&](tutti_comm_t t, tutti_request_t* r) {
        return tutti_igather(sendbuf, recvbuf, block.bytes, TUTTI_UINT8, root, t, r);
      },
      [&] {
        return PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                            request);
      });
}

int MPI_Iscatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request* request) {
  RootedBlock block;
  return serve_nonblocking(
      comm, Coll::scatter, request,
      [&](const Route& route) {
        block = scatter_block(route.rank, recvbuf, sendcount, sendtype, recvcount, recvtype, root);
        return block.pass;
      },
      [&] { return block.bytes; },
      [&](tutti_comm_t t, tutti_request_t* r) {
        return tutti_iscatter(sendbuf, recvbuf, block.bytes, TUTTI_UINT8, root, t, r);
      },
      [&] {
        return PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                             comm, request);
      });
}

// The byte counts live with the request: tutti may read them until it completes.
int MPI_Ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request* request) {
  auto bytes = std::make_shared<VectorBytes>();
  return serve_nonblocking(
      comm, Coll::alltoallv, request,
      [&] {
        return alltoallv_bytes(comm, sendbuf, sendcounts, sdispls, sendtype, recvcounts, rdispls,
                               recvtype, *bytes);
      },
      // The class of the size the blocking calls agreed on last.
      [](const Route& route) { return route.policy->alltoallv_agreed_bytes(); },
      [&](tutti_comm_t t, tutti_request_t* r) {
        return tutti_ialltoallv(sendbuf, bytes->send_counts.data(), bytes->send_displs.data(),
                                recvbuf, bytes->recv_counts.data(), bytes->recv_displs.data(),
                                TUTTI_UINT8, t, r);
      },
      [&] {
        return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                               rdispls, recvtype, comm, request);
      },
      bytes);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request* request) {
  return serve_nonblocking(
      comm, Coll::barrier, request, [] { return kServe; },
      [] { return size_t{0}; },
      [&](tutti_comm_t t, tutti_request_t* r) { return tutti_ibarrier(t, r); },
      [&] { return PMPI_Ibarrier(comm, request); });
}

}  // extern "C"
