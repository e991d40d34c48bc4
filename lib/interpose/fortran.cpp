// The Fortran bindings of the blocking collectives, MPI_Finalize and
// MPI_Error_string, so that Fortran programs (mpif.h, `use mpi`,
// `use mpi_f08`) reach tutti too (why they are needed: fortran.hpp). The
// non-blocking collectives: fortran_nonblocking.cpp; the functions that
// complete their requests: fortran_requests.cpp.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "interpose/fortran.hpp"

using namespace tutti::interpose::fortran;

TUTTI_FORTRAN_NAMES(allreduce, ALLREDUCE,
                    (void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* dt, MPI_Fint* op,
                     MPI_Fint* comm, MPI_Fint* ierr)) {
  set(ierr, MPI_Allreduce(c_buffer(sendbuf), c_buffer(recvbuf), *count, type_of(dt), op_of(op),
                          comm_of(comm)));
}

TUTTI_FORTRAN_NAMES(reduce, REDUCE,
                    (void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* dt, MPI_Fint* op,
                     MPI_Fint* root, MPI_Fint* comm, MPI_Fint* ierr)) {
  set(ierr, MPI_Reduce(c_buffer(sendbuf), c_buffer(recvbuf), *count, type_of(dt), op_of(op), *root,
                       comm_of(comm)));
}

TUTTI_FORTRAN_NAMES(bcast, BCAST,
                    (void* buf, MPI_Fint* count, MPI_Fint* dt, MPI_Fint* root, MPI_Fint* comm,
                     MPI_Fint* ierr)) {
  set(ierr, MPI_Bcast(c_buffer(buf), *count, type_of(dt), *root, comm_of(comm)));
}

TUTTI_FORTRAN_NAMES(allgather, ALLGATHER,
                    (void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf,
                     MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* ierr)) {
  set(ierr, MPI_Allgather(c_buffer(sendbuf), *sendcount, type_of(sendtype), c_buffer(recvbuf),
                          *recvcount, type_of(recvtype), comm_of(comm)));
}

TUTTI_FORTRAN_NAMES(reduce_scatter_block, REDUCE_SCATTER_BLOCK,
                    (void* sendbuf, void* recvbuf, MPI_Fint* recvcount, MPI_Fint* dt, MPI_Fint* op,
                     MPI_Fint* comm, MPI_Fint* ierr)) {
  set(ierr, MPI_Reduce_scatter_block(c_buffer(sendbuf), c_buffer(recvbuf), *recvcount,
                                     type_of(dt), op_of(op), comm_of(comm)));
}

TUTTI_FORTRAN_NAMES(reduce_scatter, REDUCE_SCATTER,
                    (void* sendbuf, void* recvbuf, MPI_Fint* recvcounts, MPI_Fint* dt,
                     MPI_Fint* op, MPI_Fint* comm, MPI_Fint* ierr)) {
  set(ierr, MPI_Reduce_scatter(c_buffer(sendbuf), c_buffer(recvbuf), recvcounts, type_of(dt),
                               op_of(op), comm_of(comm)));
}

TUTTI_FORTRAN_NAMES(gather, GATHER,
                    (void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf,
                     MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* root, MPI_Fint* comm,
                     MPI_Fint* ierr)) {
  set(ierr, MPI_Gather(c_buffer(sendbuf), *sendcount, type_of(sendtype), c_buffer(recvbuf),
                       *recvcount, type_of(recvtype), *root, comm_of(comm)));
}

TUTTI_FORTRAN_NAMES(scatter, SCATTER,
                    (void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf,
                     MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* root, MPI_Fint* comm,
                     MPI_Fint* ierr)) {
  set(ierr, MPI_Scatter(c_buffer(sendbuf), *sendcount, type_of(sendtype), c_buffer(recvbuf),
                        *recvcount, type_of(recvtype), *root, comm_of(comm)));
}

TUTTI_FORTRAN_NAMES(alltoall, ALLTOALL,
                    (void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf,
                     MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* ierr)) {
  set(ierr, MPI_Alltoall(c_buffer(sendbuf), *sendcount, type_of(sendtype), c_buffer(recvbuf),
                         *recvcount, type_of(recvtype), comm_of(comm)));
}

TUTTI_FORTRAN_NAMES(alltoallv, ALLTOALLV,
                    (void* sendbuf, MPI_Fint* sendcounts, MPI_Fint* sdispls, MPI_Fint* sendtype,
                     void* recvbuf, MPI_Fint* recvcounts, MPI_Fint* rdispls, MPI_Fint* recvtype,
                     MPI_Fint* comm, MPI_Fint* ierr)) {
  set(ierr, MPI_Alltoallv(c_buffer(sendbuf), sendcounts, sdispls, type_of(sendtype),
                          c_buffer(recvbuf), recvcounts, rdispls, type_of(recvtype),
                          comm_of(comm)));
}

TUTTI_FORTRAN_NAMES(barrier, BARRIER, (MPI_Fint* comm, MPI_Fint* ierr)) {
  set(ierr, MPI_Barrier(comm_of(comm)));
}

// MPI_Finalize: this library destroys what tutti still holds and prints its
// statistics there, before the MPI library shuts down.
TUTTI_FORTRAN_NAMES(finalize, FINALIZE, (MPI_Fint* ierr)) { set(ierr, MPI_Finalize()); }

// MPI_Error_string: the C function adds what tutti last reported to the
// text of tutti's error codes. The text is blank-padded to the Fortran
// string's length (passed after the arguments, as Fortran compilers do).
TUTTI_FORTRAN_NAMES(error_string, ERROR_STRING,
                    (MPI_Fint* errorcode, char* string, MPI_Fint* resultlen, MPI_Fint* ierr,
                     int string_len)) {
  std::array<char, MPI_MAX_ERROR_STRING> text{};
  int length = 0;
  const int rc = MPI_Error_string(*errorcode, text.data(), &length);
  if (rc == MPI_SUCCESS) {
    const int copied = std::min(length, string_len);
    std::memcpy(string, text.data(), copied);
    std::memset(string + copied, ' ', string_len - copied);
    *resultlen = copied;
  }
  set(ierr, rc);
}
