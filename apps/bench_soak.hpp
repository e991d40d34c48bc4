// tutti-bench --soak N: a long run of mixed collectives, each of a random
// kind, size, datatype, op, root, algorithm, in-place and blocking mode, every
// result checked against the reference, with the resident memory sampled
// along the way (a long job must not grow).
#pragma once

#include <cstdint>

#include "bench_options.hpp"
#include "tutti/tutti.h"

namespace tutti::apps {

// Runs o.soak_calls calls on `comm` (all ranks of MPI_COMM_WORLD). Returns
// the process exit code: 0 if every result was right and no call failed.
int run_soak(tutti_comm_t comm, int rank, int nranks, const BenchOptions& o);

}  // namespace tutti::apps
