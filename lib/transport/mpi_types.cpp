#include "transport/mpi_types.hpp"

#include <mutex>

#include "base/status.hpp"
#include "host/reduce.hpp"

namespace tutti {
namespace {

template <Datatype kDt, Op kOp>
void half_op(void* in, void* inout, int* len, MPI_Datatype*) {
  // MPI's contract: inout = in op inout.
  host_reduce(inout, in, inout, static_cast<size_t>(*len), kDt, kOp);
}

struct HalfOps {
  MPI_Op ops[2][4];  // [fp16, bf16][sum, prod, min, max]
};

const HalfOps& half_ops() {
  static HalfOps table;
  static std::once_flag once;
  std::call_once(once, [] {
    MPI_User_function* fns[2][4] = {
        {half_op<Datatype::Float16, Op::Sum>, half_op<Datatype::Float16, Op::Prod>,
         half_op<Datatype::Float16, Op::Min>, half_op<Datatype::Float16, Op::Max>},
        {half_op<Datatype::Bfloat16, Op::Sum>, half_op<Datatype::Bfloat16, Op::Prod>,
         half_op<Datatype::Bfloat16, Op::Min>, half_op<Datatype::Bfloat16, Op::Max>}};
    for (int t = 0; t < 2; ++t)
      for (int o = 0; o < 4; ++o) check_mpi(MPI_Op_create(fns[t][o], 1, &table.ops[t][o]), "MPI_Op_create");
  });
  return table;
}

}  // namespace

MPI_Datatype mpi_datatype(Datatype dt) {
  switch (dt) {
    case Datatype::Int8: return MPI_INT8_T;
    case Datatype::Uint8: return MPI_UINT8_T;
    case Datatype::Int32: return MPI_INT32_T;
    case Datatype::Uint32: return MPI_UINT32_T;
    case Datatype::Int64: return MPI_INT64_T;
    case Datatype::Uint64: return MPI_UINT64_T;
    case Datatype::Float16:
    case Datatype::Bfloat16: return MPI_UINT16_T;
    case Datatype::Float32: return MPI_FLOAT;
    case Datatype::Float64: return MPI_DOUBLE;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(Op op, Datatype dt) {
  const int index = op == Op::Avg ? 0 : static_cast<int>(op);
  if (dt == Datatype::Float16 || dt == Datatype::Bfloat16)
    return half_ops().ops[dt == Datatype::Float16 ? 0 : 1][index];
  static const MPI_Op kOps[4] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
  return kOps[index];
}

std::string mpi_error_string(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return str("MPI error ", rc);
  return std::string(text, static_cast<size_t>(len));
}

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) fail(TUTTI_ERR_TRANSPORT, what, " failed: ", mpi_error_string(rc));
}

}  // namespace tutti
