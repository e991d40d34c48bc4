// The phase between nodes of the node-aware allreduces: an allreduce of one
// vector among the ranks of the builder's current group (one rank per
// node), finalized (avg) and left in place on every rank.
#pragma once

#include <cstddef>

#include "engine/schedule.hpp"

namespace tutti::algos {

// Ring reduce-scatter + allgather, recursive doubling, or (beyond the 4
// nodes measured) Rabenseifner's recursive halving + doubling, whichever
// the cost terms below (choose_across_nodes) say is fastest for `count`
// elements at `data` on nranks() nodes. Ends its last round.
//   Ring:     2(N-1) alpha + 2 (N-1)/N n beta + (N-1)/N n gamma, pipelined.
//   Doubling: log2(N) (alpha + n beta + n gamma).
//   Halving:  2 log2(N) alpha + 2 (N-1)/N n beta + (N-1)/N n gamma, and a
//             fold of 2 alpha + 2 n beta + n gamma where N is not a power
//             of two.
void append_allreduce_across_nodes(ScheduleBuilder& b, BufRef data, size_t count);

enum class AcrossNodes { Ring, Doubling, Halving };
AcrossNodes choose_across_nodes(int nodes, size_t bytes);

}  // namespace tutti::algos
