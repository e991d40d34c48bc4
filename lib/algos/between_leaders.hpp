// The phase between nodes that the one-leader-per-node algorithms share
// (allgather and reduce_scatter "leader" and "leader_shm"): every leader
// (its node's first rank) exchanges with every other leader in one round,
// one message per run of consecutive ranks (mpirun's default numbering
// makes a node one run). Called on leaders of jobs of several nodes.
#pragma once

#include <cstddef>

#include "algos/node_groups.hpp"
#include "engine/schedule.hpp"

namespace tutti::algos {

// allgather: the blocks (m bytes, block r at output(r m)) of this node's
// ranks to every other leader, theirs into place. Ends its round.
void append_leaders_exchange_blocks(ScheduleBuilder& b, const NodeGroups& g, size_t m);

// reduce_scatter: `work` holds this node's partial sum of the whole vector
// (block r at work + r m). To every other leader go the blocks of its
// node's ranks; what arrives is reduced in, in node order (so every block is
// reduced in the same order wherever it ends), into this node's blocks of
// `work`. Nothing is finalized.
void append_leaders_reduce_partial_sums(ScheduleBuilder& b, const NodeGroups& g, BufRef work,
                                        size_t m);

}  // namespace tutti::algos
