#include "base/types.hpp"

namespace tutti {
namespace {

constexpr std::string_view kDatatypeNames[kNumDatatypes] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64"};
constexpr std::string_view kOpNames[kNumOps] = {"sum", "prod", "min", "max", "avg"};

template <typename Enum, size_t N>
std::optional<Enum> parse_name(const std::string_view (&names)[N], std::string_view name) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<Enum>(i);
  return std::nullopt;
}

}  // namespace

std::string_view datatype_name(Datatype dt) { return kDatatypeNames[static_cast<int>(dt)]; }
std::optional<Datatype> parse_datatype(std::string_view name) {
  return parse_name<Datatype>(kDatatypeNames, name);
}
bool is_floating(Datatype dt) {
  return dt == Datatype::Float16 || dt == Datatype::Bfloat16 || dt == Datatype::Float32 ||
         dt == Datatype::Float64;
}

std::string_view op_name(Op op) { return kOpNames[static_cast<int>(op)]; }
std::optional<Op> parse_op(std::string_view name) { return parse_name<Op>(kOpNames, name); }

std::optional<Collective> parse_collective(std::string_view name) {
  return parse_name<Collective>(kCollectiveNames, name);
}
bool is_reduction(Collective c) {
  return c == Collective::Allreduce || c == Collective::Reduce || c == Collective::ReduceScatter;
}
bool has_root(Collective c) {
  return c == Collective::Reduce || c == Collective::Bcast || c == Collective::Gather ||
         c == Collective::Scatter;
}

std::string_view memory_type_name(MemoryType m) { return m == MemoryType::Host ? "host" : "cuda"; }
std::optional<MemoryType> parse_memory_type(std::string_view name) {
  if (name == "host") return MemoryType::Host;
  if (name == "cuda") return MemoryType::Cuda;
  return std::nullopt;
}

}  // namespace tutti
