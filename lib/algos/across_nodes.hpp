// The phase between nodes of the node-aware allreduces: an allreduce of one
// vector among the ranks of the builder's current group (one rank per
// node), finalized (avg) and left in place on every rank.
#pragma once

#include <cstddef>

#include "engine/schedule.hpp"

namespace tutti::algos {

// Ring reduce-scatter + allgather, or recursive doubling, whichever the
// cost terms below (use_ring_across_nodes) say is faster for `count`
// elements at `data` on nranks() nodes. Ends its last round.
//   Ring:     2(N-1) alpha + 2 (N-1)/N n beta + (N-1)/N n gamma, pipelined.
//   Doubling: log2(N) (alpha + n beta + n gamma).
void append_allreduce_across_nodes(ScheduleBuilder& b, BufRef data, size_t count);

// True where the ring is the faster of the two.
bool use_ring_across_nodes(int nodes, size_t bytes);

}  // namespace tutti::algos
