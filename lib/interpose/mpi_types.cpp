#include "interpose/mpi_types.hpp"

namespace tutti::interpose {
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
