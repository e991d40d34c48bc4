// What the Fortran bindings (fortran*.cpp) share: the exported names of one
// Fortran entry point, and the conversion of Fortran arguments to C ones.
//
// Why the bindings exist: Open MPI's Fortran bindings call PMPI_* directly
// (libmpi_mpifh's mpi_allreduce_ is an alias of ompi_allreduce_f, which
// calls PMPI_Allreduce), so a preloaded MPI_Allreduce never sees a Fortran
// call. Each binding turns the Fortran handles into C ones and calls this
// library's C function, which serves the call or passes it to PMPI as for
// a C program.
//
// Fortran passes everything by reference; MPI_Fint is the default INTEGER.
// MPI_IN_PLACE, MPI_BOTTOM, MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE are
// Fortran variables (common blocks), told apart by address, as Open MPI's
// own bindings do.
#pragma once

#include <dlfcn.h>
#include <mpi.h>

#include <array>
#include <cctype>
#include <cstdio>

namespace tutti::interpose::fortran {

static_assert(sizeof(MPI_Fint) == sizeof(int),
              "count and index arrays are passed on as int arrays: MPI_Fint must be int");

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
inline const void* c_buffer(const void* fortran) {
  static const Sentinel in_place("mpi_fortran_in_place");
  static const Sentinel bottom("mpi_fortran_bottom");
  if (in_place.is(fortran)) return MPI_IN_PLACE;
  if (bottom.is(fortran)) return MPI_BOTTOM;
  return fortran;
}
inline void* c_buffer(void* fortran) {
  return const_cast<void*>(c_buffer(static_cast<const void*>(fortran)));
}

inline bool is_status_ignore(const MPI_Fint* status) {
  static const Sentinel ignore("mpi_fortran_status_ignore");
  return ignore.is(status);
}
inline bool is_statuses_ignore(const MPI_Fint* statuses) {
  static const Sentinel ignore("mpi_fortran_statuses_ignore");
  return ignore.is(statuses);
}

inline MPI_Comm comm_of(const MPI_Fint* f) { return PMPI_Comm_f2c(*f); }
inline MPI_Datatype type_of(const MPI_Fint* f) { return PMPI_Type_f2c(*f); }
inline MPI_Op op_of(const MPI_Fint* f) { return PMPI_Op_f2c(*f); }
inline void set(MPI_Fint* ierr, int rc) {
  if (ierr) *ierr = rc;
}

}  // namespace tutti::interpose::fortran

// One Fortran entry point, exported under every name a Fortran call to it
// may take: ompi_NAME_f (through which Open MPI's mpi_f08 module calls most
// functions) and the four manglings of Fortran compilers (mpi_NAME_,
// mpi_NAME, mpi_NAME__, MPI_NAME), as Open MPI exports them for mpif.h and
// `use mpi`.
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

// The same, also under the profiling names pmpi_NAME_ & co.: Open MPI's
// mpi_f08 module calls a few functions (MPI_Test and its -all/-any/-some
// forms, MPI_Request_get_status) through those instead of ompi_NAME_f.
#define TUTTI_FORTRAN_AND_PROFILING_NAMES(lower, upper, params)                            \
  extern "C" [[gnu::visibility("default"), gnu::alias("ompi_" #lower "_f")]] void          \
      pmpi_##lower##_ params;                                                                \
  extern "C" [[gnu::visibility("default"), gnu::alias("ompi_" #lower "_f")]] void          \
      pmpi_##lower params;                                                                   \
  extern "C" [[gnu::visibility("default"), gnu::alias("ompi_" #lower "_f")]] void          \
      pmpi_##lower##__ params;                                                               \
  extern "C" [[gnu::visibility("default"), gnu::alias("ompi_" #lower "_f")]] void          \
      PMPI_##upper params;                                                                   \
  TUTTI_FORTRAN_NAMES(lower, upper, params)
