// Calls a generic lambda with the C++ element type of a Datatype:
//   visit_datatype(dt, [&]<typename T>() { ... });
#pragma once

#include <cstdint>

#include "base/types.hpp"
#include "host/half.hpp"

namespace tutti {

template <typename F>
decltype(auto) visit_datatype(Datatype dt, F&& f) {
  switch (dt) {
    case Datatype::Int8: return f.template operator()<int8_t>();
    case Datatype::Uint8: return f.template operator()<uint8_t>();
    case Datatype::Int32: return f.template operator()<int32_t>();
    case Datatype::Uint32: return f.template operator()<uint32_t>();
    case Datatype::Int64: return f.template operator()<int64_t>();
    case Datatype::Uint64: return f.template operator()<uint64_t>();
    case Datatype::Float16: return f.template operator()<Half>();
    case Datatype::Bfloat16: return f.template operator()<BFloat16>();
    case Datatype::Float32: return f.template operator()<float>();
    case Datatype::Float64: return f.template operator()<double>();
  }
  return f.template operator()<uint8_t>();
}

}  // namespace tutti
