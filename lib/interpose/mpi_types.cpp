#include "interpose/mpi_types.hpp"

#include <cstdint>

namespace tutti::interpose {
namespace {

// The C types whose width varies by platform map by their size.
template <typename T>
tutti_datatype_t signed_type() {
  return sizeof(T) == 4 ? TUTTI_INT32 : sizeof(T) == 8 ? TUTTI_INT64 : TUTTI_INT8;
}
template <typename T>
tutti_datatype_t unsigned_type() {
  return sizeof(T) == 4 ? TUTTI_UINT32 : sizeof(T) == 8 ? TUTTI_UINT64 : TUTTI_UINT8;
}

}  // namespace

std::optional<tutti_datatype_t> reduction_type(MPI_Datatype dt) {
  if (dt == MPI_FLOAT) return TUTTI_FLOAT32;
  if (dt == MPI_DOUBLE) return TUTTI_FLOAT64;
  if (dt == MPI_INT || dt == MPI_INT32_T) return TUTTI_INT32;
  if (dt == MPI_UNSIGNED || dt == MPI_UINT32_T) return TUTTI_UINT32;
  if (dt == MPI_INT64_T) return TUTTI_INT64;
  if (dt == MPI_UINT64_T) return TUTTI_UINT64;
  if (dt == MPI_LONG) return signed_type<long>();
  if (dt == MPI_UNSIGNED_LONG) return unsigned_type<unsigned long>();
  if (dt == MPI_LONG_LONG || dt == MPI_LONG_LONG_INT) return signed_type<long long>();
  if (dt == MPI_UNSIGNED_LONG_LONG) return unsigned_type<unsigned long long>();
  if (dt == MPI_INT8_T || dt == MPI_SIGNED_CHAR) return TUTTI_INT8;
  if (dt == MPI_UINT8_T || dt == MPI_UNSIGNED_CHAR) return TUTTI_UINT8;
  // MPI_CHAR and MPI_BYTE have no arithmetic in MPI; 16-bit integers,
  // long double and complex types have no tutti type.
  return std::nullopt;
}

std::optional<tutti_op_t> reduction_op(MPI_Op op) {
  if (op == MPI_SUM) return TUTTI_SUM;
  if (op == MPI_PROD) return TUTTI_PROD;
  if (op == MPI_MIN) return TUTTI_MIN;
  if (op == MPI_MAX) return TUTTI_MAX;
  return std::nullopt;
}

// The predefined types every program uses, answered without asking MPI
// (three calls, about 30 ns): handles of derived types may be reused after
// MPI_Type_free, so only predefined ones are answered from a table.
std::optional<size_t> predefined_bytes(MPI_Datatype dt) {
  if (dt == MPI_BYTE || dt == MPI_CHAR || dt == MPI_UNSIGNED_CHAR || dt == MPI_SIGNED_CHAR ||
      dt == MPI_INT8_T || dt == MPI_UINT8_T)
    return 1;
  if (dt == MPI_INT || dt == MPI_UNSIGNED || dt == MPI_FLOAT || dt == MPI_INT32_T ||
      dt == MPI_UINT32_T)
    return 4;
  if (dt == MPI_DOUBLE || dt == MPI_INT64_T || dt == MPI_UINT64_T) return 8;
  if (dt == MPI_LONG || dt == MPI_UNSIGNED_LONG) return sizeof(long);
  return std::nullopt;
}

std::optional<size_t> contiguous_bytes(MPI_Datatype dt) {
  if (auto bytes = predefined_bytes(dt)) return bytes;
  if (dt == MPI_DATATYPE_NULL) return std::nullopt;
  int size = 0;
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  if (PMPI_Type_size(dt, &size) != MPI_SUCCESS ||
      PMPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent(dt, &true_lb, &true_extent) != MPI_SUCCESS)
    return std::nullopt;
  if (size <= 0 || lb != 0 || true_lb != 0 || extent != size || true_extent != size)
    return std::nullopt;
  return static_cast<size_t>(size);
}

}  // namespace tutti::interpose
