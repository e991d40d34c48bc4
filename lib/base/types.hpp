// Core vocabulary shared by every part of tutti: datatypes, reduction ops,
// collectives and memory types, with their names and sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "tutti/tutti.h"

namespace tutti {

enum class Datatype : uint8_t {
  Int8 = TUTTI_INT8,
  Uint8 = TUTTI_UINT8,
  Int32 = TUTTI_INT32,
  Uint32 = TUTTI_UINT32,
  Int64 = TUTTI_INT64,
  Uint64 = TUTTI_UINT64,
  Float16 = TUTTI_FLOAT16,
  Bfloat16 = TUTTI_BFLOAT16,
  Float32 = TUTTI_FLOAT32,
  Float64 = TUTTI_FLOAT64,
};
inline constexpr int kNumDatatypes = 10;
inline constexpr Datatype kAllDatatypes[kNumDatatypes] = {
    Datatype::Int8,    Datatype::Uint8,    Datatype::Int32,   Datatype::Uint32,  Datatype::Int64,
    Datatype::Uint64,  Datatype::Float16,  Datatype::Bfloat16, Datatype::Float32, Datatype::Float64};

enum class Op : uint8_t {
  Sum = TUTTI_SUM,
  Prod = TUTTI_PROD,
  Min = TUTTI_MIN,
  Max = TUTTI_MAX,
  Avg = TUTTI_AVG,
};
inline constexpr int kNumOps = 5;
inline constexpr Op kAllOps[kNumOps] = {Op::Sum, Op::Prod, Op::Min, Op::Max, Op::Avg};

enum class Collective : uint8_t {
  Allreduce,
  Reduce,
  Bcast,
  Allgather,
  ReduceScatter,
  Gather,
  Scatter,
  Alltoall,
  Alltoallv,
  Barrier,
};
inline constexpr int kNumCollectives = 10;
inline constexpr Collective kAllCollectives[kNumCollectives] = {
    Collective::Allreduce, Collective::Reduce,  Collective::Bcast,    Collective::Allgather,
    Collective::ReduceScatter, Collective::Gather, Collective::Scatter, Collective::Alltoall,
    Collective::Alltoallv, Collective::Barrier};

enum class MemoryType : uint8_t { Host, Cuda };

// Inline: every call asks these (the API checks, the schedule key).
inline constexpr size_t kDatatypeSizes[kNumDatatypes] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
inline size_t datatype_size(Datatype dt) { return kDatatypeSizes[static_cast<int>(dt)]; }
inline bool is_valid_datatype(int dt) { return dt >= 0 && dt < kNumDatatypes; }
std::string_view datatype_name(Datatype dt);  // "float32", ...
std::optional<Datatype> parse_datatype(std::string_view name);
bool is_floating(Datatype dt);

std::string_view op_name(Op op);  // "sum", ...
std::optional<Op> parse_op(std::string_view name);
inline bool is_valid_op(int op) { return op >= 0 && op < kNumOps; }

inline constexpr std::string_view kCollectiveNames[kNumCollectives] = {
    "allreduce", "reduce",  "bcast",    "allgather", "reduce_scatter",
    "gather",    "scatter", "alltoall", "alltoallv", "barrier"};
// "allreduce", "reduce_scatter", ...
inline std::string_view collective_name(Collective c) { return kCollectiveNames[static_cast<int>(c)]; }
std::optional<Collective> parse_collective(std::string_view name);
bool is_reduction(Collective c);  // takes an op
bool has_root(Collective c);

std::string_view memory_type_name(MemoryType m);
std::optional<MemoryType> parse_memory_type(std::string_view name);

}  // namespace tutti
