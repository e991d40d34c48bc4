// Which MPI datatypes and ops tutti can serve, and as what.
//
// Reductions need one of tutti's element types and ops. Data movement
// (bcast, gather, alltoall ...) moves bytes: any datatype whose elements lie
// back to back (size == extent == true extent, lower bound 0) is served as
// count * size bytes. The answer depends only on the datatype, never on the
// rank, so every rank of a call takes the same path (a rank that passed a
// collective to MPI while another ran it in tutti would hang both).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>

#include "tutti/tutti.h"

namespace tutti::interpose {

// Inline, as every reduction asks (see element_bytes below).
namespace detail {
// The C types whose width varies by platform map by their size.
template <typename T>
constexpr tutti_datatype_t signed_type() {
  return sizeof(T) == 4 ? TUTTI_INT32 : sizeof(T) == 8 ? TUTTI_INT64 : TUTTI_INT8;
}
template <typename T>
constexpr tutti_datatype_t unsigned_type() {
  return sizeof(T) == 4 ? TUTTI_UINT32 : sizeof(T) == 8 ? TUTTI_UINT64 : TUTTI_UINT8;
}
}  // namespace detail

// Fortran's REAL, DOUBLE PRECISION, INTEGER and their sized forms (out of
// line: C programs never get this far), by the size the MPI library gives
// them.
std::optional<tutti_datatype_t> fortran_reduction_type(MPI_Datatype dt);

inline std::optional<tutti_datatype_t> reduction_type(MPI_Datatype dt) {
  if (dt == MPI_FLOAT) return TUTTI_FLOAT32;
  if (dt == MPI_DOUBLE) return TUTTI_FLOAT64;
  if (dt == MPI_INT || dt == MPI_INT32_T) return TUTTI_INT32;
  if (dt == MPI_UNSIGNED || dt == MPI_UINT32_T) return TUTTI_UINT32;
  if (dt == MPI_INT64_T) return TUTTI_INT64;
  if (dt == MPI_UINT64_T) return TUTTI_UINT64;
  if (dt == MPI_LONG) return detail::signed_type<long>();
  if (dt == MPI_UNSIGNED_LONG) return detail::unsigned_type<unsigned long>();
  if (dt == MPI_LONG_LONG || dt == MPI_LONG_LONG_INT) return detail::signed_type<long long>();
  if (dt == MPI_UNSIGNED_LONG_LONG) return detail::unsigned_type<unsigned long long>();
  if (dt == MPI_INT8_T || dt == MPI_SIGNED_CHAR) return TUTTI_INT8;
  if (dt == MPI_UINT8_T || dt == MPI_UNSIGNED_CHAR) return TUTTI_UINT8;
  // MPI_CHAR and MPI_BYTE have no arithmetic in MPI; 16-bit integers,
  // long double and complex types have no tutti type.
  return fortran_reduction_type(dt);
}

inline std::optional<tutti_op_t> reduction_op(MPI_Op op) {
  if (op == MPI_SUM) return TUTTI_SUM;
  if (op == MPI_PROD) return TUTTI_PROD;
  if (op == MPI_MIN) return TUTTI_MIN;
  if (op == MPI_MAX) return TUTTI_MAX;
  return std::nullopt;
}

// Bytes of one element when the datatype's elements are contiguous, else 0
// (no contiguous datatype has size 0 here: those are refused). The
// predefined types every program uses are answered inline, without asking
// MPI (three calls, about 30 ns); handles of derived types may be reused
// after MPI_Type_free, so only predefined ones are answered from a table.
// Inline and a plain size_t because every interposed call asks two to four
// times: out of line, returning std::optional through memory, the checks
// took 40-60 ns of an 8-byte MPI_Gather of 0.15 us (a store-forwarding
// stall on each return; perf, 2026-11-28).
size_t derived_type_bytes(MPI_Datatype dt);
inline size_t element_bytes(MPI_Datatype dt) {
  if (dt == MPI_BYTE || dt == MPI_CHAR || dt == MPI_UNSIGNED_CHAR || dt == MPI_SIGNED_CHAR ||
      dt == MPI_INT8_T || dt == MPI_UINT8_T)
    return 1;
  if (dt == MPI_FLOAT || dt == MPI_INT || dt == MPI_UNSIGNED || dt == MPI_INT32_T ||
      dt == MPI_UINT32_T)
    return 4;
  if (dt == MPI_DOUBLE || dt == MPI_INT64_T || dt == MPI_UINT64_T) return 8;
  if (dt == MPI_LONG || dt == MPI_UNSIGNED_LONG) return sizeof(long);
  return derived_type_bytes(dt);
}

}  // namespace tutti::interpose
