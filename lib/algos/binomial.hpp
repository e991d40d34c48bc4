// Binomial-tree pieces for the rooted data-movement collectives: a pipelined
// broadcast of one buffer (bcast "tree"), and the scatter and gather of
// per-rank blocks (scatter/gather "tree", bcast "scatter_allgather").
//
// The tree is BinomialTree: virtual rank v = (rank - root) mod P; the
// subtree of v is the virtual ranks [v, v + subtree_size(v)), so the blocks
// a subtree sends or receives are contiguous in virtual-rank order. Where a
// rank keeps the block of virtual rank v is up to the caller (a
// BlockLocator): the root of scatter/gather keeps blocks in real-rank order,
// which is virtual order cut once, at virtual rank (P - root) mod P; every
// message spanning the cut is sent as two (both ends split alike).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "algos/patterns.hpp"
#include "engine/schedule.hpp"

namespace tutti::algos {

// Where this rank keeps the first byte of virtual rank v's block. Blocks of
// consecutive virtual ranks on the same side of the cut must be contiguous.
using BlockLocator = std::function<BufRef(int vrank)>;

// Pipeline segment: chunk_bytes_of(b) rounded down to whole elements (at
// least one); every rank derives the same value.
size_t binomial_segment_bytes(const ScheduleBuilder& b);

// Broadcasts `bytes` at `data` (the same place on every rank) from the root
// of `tree`. Segment s of a rank goes to each child in turn, largest subtree
// first, one send a round; the parent's segment s+1 arrives meanwhile. Leaves
// post all their receives in one round. Ends its last round.
// Rounds: S*children (+1 to receive the first segment) for S segments.
void append_binomial_bcast(ScheduleBuilder& b, const BinomialTree& tree, BufRef data,
                           size_t bytes, size_t segment_bytes);

// The same on any tree: this rank's `parent` (-1 at the root) and its
// `children` in the order they get each segment.
void append_pipelined_bcast(ScheduleBuilder& b, int parent, const std::vector<int>& children,
                            BufRef data, size_t bytes, size_t segment_bytes);

// Scatters blocks (by virtual rank, in elements) from the root: a non-root
// rank receives the blocks of its subtree at locate(v...), then sends each
// child its subtree's blocks, largest subtree first, one child a round (the
// classic binomial order: the big subtree starts forwarding soonest).
// Rounds: 1 + children (the root: children).
void append_binomial_scatter(ScheduleBuilder& b, const BinomialTree& tree,
                             const BlockPartition& blocks, const BlockLocator& locate, int cut);

// Gathers blocks (by virtual rank) to the root: on entry a rank's own block
// is at locate(v); it receives all its children's subtrees in one round,
// then sends its whole subtree to its parent in the next.
// Rounds: 2 on inner ranks, 1 on leaves and the root.
void append_binomial_gather(ScheduleBuilder& b, const BinomialTree& tree,
                            const BlockPartition& blocks, const BlockLocator& locate, int cut);

}  // namespace tutti::algos
