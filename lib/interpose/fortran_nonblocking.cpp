// The Fortran bindings of the non-blocking collectives (MPI_I*): each calls
// this library's C function and hands Fortran the request as an integer.
// A request tutti runs completes only when this library drives it, so every
// Fortran function that waits on or tests a request is bound too
// (fortran_requests.cpp).
#include <mpi.h>

#include "interpose/fortran.hpp"

using namespace tutti::interpose::fortran;

namespace {

// The request as Fortran sees it, where the call started one.
void hand_out(int rc, MPI_Request started, MPI_Fint* request, MPI_Fint* ierr) {
  if (rc == MPI_SUCCESS) *request = PMPI_Request_c2f(started);
  set(ierr, rc);
}

}  // namespace

TUTTI_FORTRAN_NAMES(iallreduce, IALLREDUCE,
                    (void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* dt, MPI_Fint* op,
                     MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr)) {
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = MPI_Iallreduce(c_buffer(sendbuf), c_buffer(recvbuf), *count, type_of(dt),
                                op_of(op), comm_of(comm), &r);
  hand_out(rc, r, request, ierr);
}

TUTTI_FORTRAN_NAMES(ireduce, IREDUCE,
                    (void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* dt, MPI_Fint* op,
                     MPI_Fint* root, MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr)) {
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = MPI_Ireduce(c_buffer(sendbuf), c_buffer(recvbuf), *count, type_of(dt),
                             op_of(op), *root, comm_of(comm), &r);
  hand_out(rc, r, request, ierr);
}

TUTTI_FORTRAN_NAMES(ibcast, IBCAST,
                    (void* buf, MPI_Fint* count, MPI_Fint* dt, MPI_Fint* root, MPI_Fint* comm,
                     MPI_Fint* request, MPI_Fint* ierr)) {
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = MPI_Ibcast(c_buffer(buf), *count, type_of(dt), *root, comm_of(comm), &r);
  hand_out(rc, r, request, ierr);
}

TUTTI_FORTRAN_NAMES(iallgather, IALLGATHER,
                    (void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf,
                     MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* request,
                     MPI_Fint* ierr)) {
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = MPI_Iallgather(c_buffer(sendbuf), *sendcount, type_of(sendtype),
                                c_buffer(recvbuf), *recvcount, type_of(recvtype), comm_of(comm),
                                &r);
  hand_out(rc, r, request, ierr);
}

TUTTI_FORTRAN_NAMES(ireduce_scatter_block, IREDUCE_SCATTER_BLOCK,
                    (void* sendbuf, void* recvbuf, MPI_Fint* recvcount, MPI_Fint* dt, MPI_Fint* op,
                     MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr)) {
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = MPI_Ireduce_scatter_block(c_buffer(sendbuf), c_buffer(recvbuf), *recvcount,
                                           type_of(dt), op_of(op), comm_of(comm), &r);
  hand_out(rc, r, request, ierr);
}

TUTTI_FORTRAN_NAMES(ireduce_scatter, IREDUCE_SCATTER,
                    (void* sendbuf, void* recvbuf, MPI_Fint* recvcounts, MPI_Fint* dt,
                     MPI_Fint* op, MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr)) {
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = MPI_Ireduce_scatter(c_buffer(sendbuf), c_buffer(recvbuf), recvcounts,
                                     type_of(dt), op_of(op), comm_of(comm), &r);
  hand_out(rc, r, request, ierr);
}

TUTTI_FORTRAN_NAMES(igather, IGATHER,
                    (void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf,
                     MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* root, MPI_Fint* comm,
                     MPI_Fint* request, MPI_Fint* ierr)) {
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = MPI_Igather(c_buffer(sendbuf), *sendcount, type_of(sendtype), c_buffer(recvbuf),
                             *recvcount, type_of(recvtype), *root, comm_of(comm), &r);
  hand_out(rc, r, request, ierr);
}

TUTTI_FORTRAN_NAMES(iscatter, ISCATTER,
                    (void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf,
                     MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* root, MPI_Fint* comm,
                     MPI_Fint* request, MPI_Fint* ierr)) {
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = MPI_Iscatter(c_buffer(sendbuf), *sendcount, type_of(sendtype),
                              c_buffer(recvbuf), *recvcount, type_of(recvtype), *root,
                              comm_of(comm), &r);
  hand_out(rc, r, request, ierr);
}

TUTTI_FORTRAN_NAMES(ialltoall, IALLTOALL,
                    (void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf,
                     MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* request,
                     MPI_Fint* ierr)) {
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = MPI_Ialltoall(c_buffer(sendbuf), *sendcount, type_of(sendtype),
                               c_buffer(recvbuf), *recvcount, type_of(recvtype), comm_of(comm),
                               &r);
  hand_out(rc, r, request, ierr);
}

TUTTI_FORTRAN_NAMES(ialltoallv, IALLTOALLV,
                    (void* sendbuf, MPI_Fint* sendcounts, MPI_Fint* sdispls, MPI_Fint* sendtype,
                     void* recvbuf, MPI_Fint* recvcounts, MPI_Fint* rdispls, MPI_Fint* recvtype,
                     MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr)) {
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = MPI_Ialltoallv(c_buffer(sendbuf), sendcounts, sdispls, type_of(sendtype),
                                c_buffer(recvbuf), recvcounts, rdispls, type_of(recvtype),
                                comm_of(comm), &r);
  hand_out(rc, r, request, ierr);
}

TUTTI_FORTRAN_NAMES(ibarrier, IBARRIER, (MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr)) {
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = MPI_Ibarrier(comm_of(comm), &r);
  hand_out(rc, r, request, ierr);
}
