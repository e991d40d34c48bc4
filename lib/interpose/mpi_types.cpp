#include "interpose/mpi_types.hpp"

#include <array>

namespace tutti::interpose {

std::optional<tutti_datatype_t> fortran_reduction_type(MPI_Datatype dt) {
  struct Entry {
    MPI_Datatype dt;
    std::optional<tutti_datatype_t> type;
  };
  // Asked once, after MPI_Init (the first reduction comes later). A type
  // the MPI library lacks (its Fortran compiler had no INTEGER1, say) is
  // MPI_DATATYPE_NULL there, and its size query fails: no entry.
  static const std::array<Entry, 8> table = [] {
    auto entry = [](MPI_Datatype dt, bool real) {
      int size = 0;
      if (dt == MPI_DATATYPE_NULL || PMPI_Type_size(dt, &size) != MPI_SUCCESS) return Entry{dt, {}};
      std::optional<tutti_datatype_t> type;
      if (real && size == 4) type = TUTTI_FLOAT32;
      if (real && size == 8) type = TUTTI_FLOAT64;
      if (!real && size == 1) type = TUTTI_INT8;
      if (!real && size == 4) type = TUTTI_INT32;
      if (!real && size == 8) type = TUTTI_INT64;
      return Entry{dt, type};
    };
    return std::array<Entry, 8>{entry(MPI_REAL, true), entry(MPI_DOUBLE_PRECISION, true),
                                entry(MPI_REAL4, true), entry(MPI_REAL8, true),
                                entry(MPI_INTEGER, false), entry(MPI_INTEGER1, false),
                                entry(MPI_INTEGER4, false), entry(MPI_INTEGER8, false)};
  }();
  if (dt == MPI_DATATYPE_NULL) return std::nullopt;
  for (const Entry& e : table)
    if (e.dt == dt) return e.type;
  return std::nullopt;
}

size_t derived_type_bytes(MPI_Datatype dt) {
  if (dt == MPI_DATATYPE_NULL) return 0;
  int size = 0;
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  if (PMPI_Type_size(dt, &size) != MPI_SUCCESS ||
      PMPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent(dt, &true_lb, &true_extent) != MPI_SUCCESS)
    return 0;
  if (size <= 0 || lb != 0 || true_lb != 0 || extent != size || true_extent != size) return 0;
  return static_cast<size_t>(size);
}

}  // namespace tutti::interpose
