// Ring building blocks (UCC-style composition): a ring reduce-scatter and a
// ring allgather over a vector split into one block per rank. Allreduce ring
// is one followed by the other; reduce_scatter ring and allgather ring use
// one each. After the reduce-scatter, rank r holds the reduced block r.
#pragma once

#include "algos/patterns.hpp"
#include "engine/schedule.hpp"

namespace tutti::algos {

// Default pipelining granularity for large messages.
inline constexpr size_t kDefaultChunkBytes = 256 * 1024;

inline size_t chunk_bytes_of(const ScheduleBuilder& b) {
  return b.args().params.chunk_bytes ? b.args().params.chunk_bytes : kDefaultChunkBytes;
}

// Reduce-scatter around the ring. Block i of the input is at in + offset(i)
// (bytes, from `blocks` in elements). Partial sums travel through scratch; the
// reduced block r is written to `result`. When `in` is the same memory as
// `result` (in-place reduce_scatter) pass result_aliases_input so the last
// write goes through scratch.
void append_ring_reduce_scatter(ScheduleBuilder& b, const BlockPartition& blocks, BufRef in,
                                BufRef result, bool result_aliases_input);

// Reduce-scatter in place on a full vector `work` (read and written): after
// it, block r of `work` is fully reduced on rank r (other blocks: partial).
void append_ring_reduce_scatter_inplace(ScheduleBuilder& b, const BlockPartition& blocks,
                                        BufRef work);

// Allgather around the ring on a full vector `work`: on entry rank r's block
// r is in place; on exit every block is.
void append_ring_allgather(ScheduleBuilder& b, const BlockPartition& blocks, BufRef work);

}  // namespace tutti::algos
