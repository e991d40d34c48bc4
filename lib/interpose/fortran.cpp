// The Fortran bindings of the blocking collectives, so that Fortran
// programs (mpif.h, `use mpi`, `use mpi_f08`) reach tutti too.
//
// Why: Open MPI's Fortran bindings call PMPI_* directly (libmpi_mpifh's
// mpi_allreduce_ is an alias of ompi_allreduce_f, which calls
// PMPI_Allreduce), so a preloaded MPI_Allreduce never sees a Fortran call.
// This file defines the names a Fortran program's calls resolve to:
// mpi_X_, mpi_X, mpi_X__ and MPI_X (the name manglings of Fortran
// compilers, as Open MPI exports them) for mpif.h and `use mpi`, and
// ompi_X_f, through which Open MPI's mpi_f08 module calls (its
// mpi_X_f08_ calls it by name); MPI_Finalize too, where this library
// cleans up. Each turns the Fortran handles into C
// ones and calls this library's C function, which serves the call or
// passes it to PMPI as for a C program. The non-blocking forms are not
// bound: their requests go back to Fortran as integers, so they stay the
// MPI library's (correct, only not through tutti).
//
// Fortran passes everything by reference; MPI_Fint is the default
// INTEGER. MPI_IN_PLACE and MPI_BOTTOM are Fortran variables (common
// blocks), told apart by address, as Open MPI's own bindings do.
#include <dlfcn.h>
#include <mpi.h>

#include <array>
#include <cctype>
#include <cstdio>

namespace {

static_assert(sizeof(MPI_Fint) == sizeof(int),
              "the count arrays are passed on as int arrays: MPI_Fint must be int");

// The addresses of a Fortran sentinel variable under each name mangling,
// null where the program has none.
struct Sentinel {
  std::array<const void*, 4> addresses{};
  explicit Sentinel(const char* lower) {
    std::array<char, 64> name{};
    const char* forms[] = {"%s_", "%s", "%s__"};
    for (int i = 0; i < 3; ++i) {
      snprintf(name.data(), name.size(), forms[i], lower);
      addresses[i] = dlsym(RTLD_DEFAULT, name.data());
    }
    int n = snprintf(name.data(), name.size(), "%s", lower);
    for (int i = 0; i < n; ++i) name[i] = static_cast<char>(toupper(name[i]));
    addresses[3] = dlsym(RTLD_DEFAULT, name.data());
  }
  bool is(const void* p) const {
    for (const void* a : addresses)
      if (a && a == p) return true;
    return false;
  }
};

// A buffer argument as C sees it: MPI_IN_PLACE and MPI_BOTTOM for the
// Fortran variables that stand for them.
const void* c_buffer(const void* fortran) {
  static const Sentinel in_place("mpi_fortran_in_place");
  static const Sentinel bottom("mpi_fortran_bottom");
  if (in_place.is(fortran)) return MPI_IN_PLACE;
  if (bottom.is(fortran)) return MPI_BOTTOM;
  return fortran;
}
void* c_buffer(void* fortran) { return const_cast<void*>(c_buffer(static_cast<const void*>(fortran))); }

MPI_Comm comm_of(const MPI_Fint* f) { return PMPI_Comm_f2c(*f); }
MPI_Datatype type_of(const MPI_Fint* f) { return PMPI_Type_f2c(*f); }
MPI_Op op_of(const MPI_Fint* f) { return PMPI_Op_f2c(*f); }
void set(MPI_Fint* ierr, int rc) {
  if (ierr) *ierr = rc;
}

}  // namespace

// One Fortran entry point, exported under every name a Fortran call to it
// may take: ompi_NAME_f (Open MPI's mpi_f08) and the four manglings.
#define TUTTI_FORTRAN_NAMES(lower, upper, params)                                          \
  extern "C" [[gnu::visibility("default")]] void ompi_##lower##_f params;                   \
  extern "C" [[gnu::visibility("default"), gnu::alias("ompi_" #lower "_f")]] void          \
      mpi_##lower##_ params;                                                                 \
  extern "C" [[gnu::visibility("default"), gnu::alias("ompi_" #lower "_f")]] void          \
      mpi_##lower params;                                                                    \
  extern "C" [[gnu::visibility("default"), gnu::alias("ompi_" #lower "_f")]] void          \
      mpi_##lower##__ params;                                                                \
  extern "C" [[gnu::visibility("default"), gnu::alias("ompi_" #lower "_f")]] void          \
      MPI_##upper params;                                                                    \
  extern "C" void ompi_##lower##_f params

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
