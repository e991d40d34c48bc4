// Building blocks of the node-aware algorithms that work inside each node
// through the node's shared segment (*_hierarchical_shm.cpp, *_leader_shm.cpp),
// in jobs of one node or many: every node has its own segment
// (Comm::allocate_node_memory), of one size on all of them.
#pragma once

#include <algorithm>
#include <functional>

#include "algos/shm_common.hpp"

namespace tutti::algos {

// Bytes of one slot: the same on every node (an algorithm's chunks, and so
// its messages between nodes, must match), whatever the node's own rank
// count. Where every node holds one rank nothing is shared, and the chunks
// are only the pipeline's (params.chunk_bytes) or the whole vector.
inline size_t node_slot_bytes(const CollArgs& a, const Topology& topo) {
  const size_t chunk = a.params.chunk_bytes ? std::max(a.params.chunk_bytes, kMinShmSlot) : ~size_t{0};
  if (topo.max_ranks_per_node == 1) return chunk / kMinShmSlot * kMinShmSlot;
  return shm_slot_bytes(topo.shared_bytes, topo.max_ranks_per_node, chunk, 1);
}

inline Refusal refuse_node_shm(const CollArgs& a, const Topology& topo) {
  if (topo.max_ranks_per_node == 1) return std::nullopt;
  if (topo.shared_bytes == 0) return "no shared-memory segment (TUTTI_SHM_BYTES=0 or unavailable)";
  if (node_slot_bytes(a, topo) < kMinShmSlot)
    return str("the shared segment (", topo.shared_bytes, " bytes) is too small for ",
               topo.max_ranks_per_node, " ranks per node");
  return std::nullopt;
}

// Slot `rank` (a local index) of parity `parity`, slots of `slot` bytes.
inline BufRef node_slot(const ScheduleBuilder& b, int parity, int rank, size_t slot) {
  return shared(static_cast<size_t>(parity) * shared_half_bytes(b.shared_capacity()) +
                static_cast<size_t>(rank) * slot);
}

// Inside the current group (one node's ranks, in a b.within scope): every
// rank but `leader` hands `bytes` at `src` to the leader, which reduces
// them all into `dst`: its own `src` first (it may be `dst`), then the
// others' in local rank order. In the signals' flag lines where the data
// fits (shm_fits_inline), else through the slots (`slot` bytes each, from
// node_slot_bytes). bytes 0: a fan-in
// of bare signals. One-way through the slots, so it must be followed by
// append_node_bcast_from from the same leader, which tells every rank that
// the leader has read the slots (shm_common.hpp's rule for reusing a
// parity: a rank writes chunk k+2 only after the readers of chunk k have
// signalled it in chunk k+1).
void append_node_reduce_to(ScheduleBuilder& b, int leader, BufRef src, BufRef dst, size_t bytes,
                           size_t slot);

// Inside the current group: the leader's `bytes` at `buf` to `buf` on
// every other rank, in the flag lines or through the leader's slot.
void append_node_bcast_from(ScheduleBuilder& b, int leader, BufRef buf, size_t bytes, size_t slot);

// The same two for a rooted collective's phase inside a node, which has
// nothing after it to close a one-way pass through the slots: in the flag
// lines where `bytes` fits, else chunk by chunk (`slot` bytes each), each
// chunk written into the slots, fully synchronised (every rank signals
// every other), then read, like the one-node shm algorithms.
void append_node_bcast(ScheduleBuilder& b, int leader, BufRef buf, size_t bytes, size_t slot);
void append_node_reduce(ScheduleBuilder& b, int leader, BufRef src, BufRef dst, size_t bytes,
                        size_t slot);

// Inside the current group: the leader's `bytes` at block(q) to `dst` on
// each other rank q (local indices), in the flag lines where a block fits,
// else chunk by chunk through each rank's own slot, each chunk fully
// synchronised. The leader's own block stays where it is.
void append_node_scatter(ScheduleBuilder& b, int leader, const std::function<BufRef(int)>& block,
                         BufRef dst, size_t bytes, size_t slot);

// Its mirror: each other rank q's `bytes` at `src` to block(q) on the
// leader. The leader's own block is left to the caller.
void append_node_gather(ScheduleBuilder& b, int leader, BufRef src,
                        const std::function<BufRef(int)>& block, size_t bytes, size_t slot);

}  // namespace tutti::algos
