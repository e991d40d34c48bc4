// Pipelined binomial-tree reduce: the vector is cut into segments; a rank
// reduces segment s from each of its children in turn (smallest subtree
// first) and passes it to its parent while it reduces segment s+1, so every
// level of the tree works at once on large vectors. Used by reduce "tree"
// and allreduce "tree"; on a binary tree by reduce "binary_tree" and
// "binary_leader_shm".
#pragma once

#include <cstddef>
#include <vector>

#include "algos/patterns.hpp"
#include "engine/schedule.hpp"

namespace tutti::algos {

// Segment size of the pipeline: chunk_bytes_of(b) rounded down to whole
// elements (at least one). Both ends of every message derive it alike.
size_t binomial_reduce_segment_bytes(const ScheduleBuilder& b);

// Reduces every rank's `in` (`bytes`) towards the root of `tree`. A rank with
// children accumulates into `acc` (for the root, where the result ends; it
// may be the same memory as `in`) with receives landing in `landing`
// (min(segment, bytes) of scratch); a leaf sends `in` to its parent and
// touches neither. Nothing is finalized. Ends its last round.
// Rounds: segments * children + 1 (a leaf: segments).
void append_binomial_reduce(ScheduleBuilder& b, const BinomialTree& tree, BufRef in, BufRef acc,
                            BufRef landing, size_t bytes, size_t segment_bytes);

// The same on any tree: this rank's `parent` (-1 at the root) and its
// `children` in the order their segments are reduced.
void append_pipelined_reduce(ScheduleBuilder& b, int parent, const std::vector<int>& children,
                             BufRef in, BufRef acc, BufRef landing, size_t bytes,
                             size_t segment_bytes);

// A whole reduce on any tree, as reduce "tree" runs it on the binomial one:
// ranks with children accumulate in scratch (the root in its output), the
// root finalizes (avg); one rank copies its input.
void append_tree_reduce(ScheduleBuilder& b, int parent, const std::vector<int>& children);

}  // namespace tutti::algos
