// Portable build of the host reducer: the baseline every CPU can run, and the
// only one off x86-64.
#include "host/reduce_kernels.hpp"

namespace tutti {

// The one copy of each functor that code not inlining it calls (see
// host/reduce_kernels.hpp), compiled here with baseline flags.
TUTTI_HOST_FUNCTORS()

namespace {

struct Generic {
  static constexpr const char* kName = "generic";
  // No hand-written vector code: the loops are auto-vectorised for the
  // baseline ISA (fp16/bf16 stay scalar, they need F16C to be fast).
  template <typename T, class F>
  static size_t reduce_vectors(T*, const T*, const T*, size_t) {
    return 0;
  }
  template <typename T>
  static size_t divide_vectors(T*, size_t, int) {
    return 0;
  }
};

}  // namespace

const HostReduceTable& host_reduce_table_generic() {
  static constexpr HostReduceTable kTable = make_table<Generic>();
  return kTable;
}

}  // namespace tutti
