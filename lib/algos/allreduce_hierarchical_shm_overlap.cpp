// allreduce "hierarchical_shm_overlap": "hierarchical_shm" on two nodes with
// its phases overlapped chunk by chunk: while lane i exchanges its slice of
// chunk k with lane i of the other node, its node reduces chunk k+1 and
// copies in chunk k+2, and takes chunk k-1's result out.
//   Lanes and slices as "hierarchical_shm" (L = the fewest ranks any node
//   holds; lane i < L owns slice i of each chunk).
//   Per chunk k, five steps, each in a later round than the one before:
//     in:     every rank copies chunk k into its input slot (half k % 2);
//     reduce: lane i reduces slice i over the node's slots into its output;
//     swap:   lane i sends its slice to lane i of the other node and
//             receives that node's (messages);
//     result: lane i combines the two (node order), finalizes it and copies
//             it into the node's result area (half k % 2);
//     out:    every rank copies the other lanes' slices out.
//   Round t (mixed: messages posted first, then the local steps while they
//   travel, then one flag to every rank of the node) holds: result of
//   chunk t-3, out of t-4, reduce of t-1 and in of t (local steps), and
//   swap of t-2 (messages). A half is written again only after everyone
//   read what it held two chunks before (one flag round in between), and
//   a last flag round lets every rank finish before the next call writes
//   the segment.
//   Cost, n bytes in K chunks of c: (K + 4) rounds of max(flags + local
//   work of one chunk, one exchange of c/L bytes) where "hierarchical_shm"
//   pays K (2 flag rounds + local work + exchange): the exchange hides the
//   node's copies and reductions. Per rank the same copies and reductions;
//   between nodes n/L bytes each way per lane, one message per chunk.
//   Two nodes (any ranks per node, uneven too): the exchange is one
//   message each way, as recursive doubling on two; more nodes use
//   "hierarchical_shm". On one node there is no exchange (a pipelined
//   reduce-scatter and allgather through the segment, which the one-node
//   algorithms beat). Needs each node's segment to hold L + 1 slots of at
//   least 64 bytes per half.
#include <algorithm>

#include "algos/node_groups.hpp"
#include "algos/node_shm.hpp"
#include "algos/patterns.hpp"
#include "algos/registry.hpp"
#include "algos/shm_common.hpp"

namespace tutti::algos {
namespace {

// Chunks of 128 KiB unless the call's parameters say otherwise: the size
// "hierarchical_shm" measured best on two nodes (tuning/table.cpp).
constexpr size_t kDefaultOverlapChunk = 128 * 1024;

// The slot size: the chunk, or less where a half of the segment cannot
// hold the node's input slots and the result area.
size_t overlap_slot_bytes(const CollArgs& a, const Topology& topo) {
  const size_t chunk = std::max(a.params.chunk_bytes ? a.params.chunk_bytes : kDefaultOverlapChunk,
                                kMinShmSlot);
  if (topo.max_ranks_per_node == 1) return chunk / kMinShmSlot * kMinShmSlot;
  return shm_slot_bytes(topo.shared_bytes, topo.max_ranks_per_node + 1, chunk, 1);
}

Refusal refuse(const CollArgs& a, const Topology& topo) {
  if (topo.nnodes > 2) return str("for one or two nodes (this job: ", topo.nnodes, ")");
  if (Refusal r = refuse_node_shm(a, topo)) return r;
  // Beside the input slots, each half holds the result area.
  if (topo.max_ranks_per_node > 1 && overlap_slot_bytes(a, topo) < kMinShmSlot)
    return str("the shared segment (", topo.shared_bytes, " bytes) is too small for ",
               topo.max_ranks_per_node, " ranks per node");
  return std::nullopt;
}

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t es = b.elem_size(), n = a.count * es;
  if (n == 0) return;
  const size_t slot = overlap_slot_bytes(a, b.topology());
  const NodeGroups g = node_groups_of(b.topology(), b.comm_rank());
  const std::vector<int>& node = g.my_node_ranks();
  const int lanes = g.min_ranks_per_node, local = g.my_local;
  const int node_ranks = static_cast<int>(node.size());
  const bool is_lane = local < lanes, shared_node = node_ranks > 1;
  const size_t chunks = n / slot + (n % slot != 0);
  const size_t half = shared_half_bytes(b.shared_capacity());
  if (shared_node) b.note_slot_area(static_cast<size_t>(node_ranks + 1) * slot);

  // Chunk k: where it starts, its bytes, its slice bounds, its half.
  auto offset = [&](size_t k) { return k * slot; };
  auto bytes = [&](size_t k) { return std::min(slot, n - k * slot); };
  auto slices = [&](size_t k) { return aligned_blocks(bytes(k) / es, lanes, es); };
  auto mine = [&](size_t k) { return is_lane ? slices(k).offset(local) * es : 0; };
  auto mine_bytes = [&](size_t k) { return is_lane ? slices(k).size(local) * es : 0; };
  std::vector<int> parity(chunks, 0);  // (a rank alone on its node has no segment)
  if (shared_node)
    for (size_t k = 0; k < chunks; ++k) parity[k] = b.begin_shm_chunk();
  auto input_slot = [&](size_t k, int rank) {
    return shared(static_cast<size_t>(parity[k]) * half + static_cast<size_t>(rank) * slot);
  };
  auto result_area = [&](size_t k) {
    return shared(static_cast<size_t>(parity[k]) * half + static_cast<size_t>(node_ranks) * slot);
  };
  // The other node's lane, and whether this node comes first (the order in
  // which every lane combines the two nodes' values).
  const bool swaps = is_lane && g.nnodes() == 2;
  const std::vector<int> rail = swaps ? g.rail(local) : std::vector<int>{};
  const int peer = swaps ? rail[rail[0] == b.comm_rank() ? 1 : 0] : -1;
  const bool first_node = swaps && g.node_of(peer) > g.my_node;
  const BufRef landing = swaps ? b.scratch(2 * slot) : BufRef{};
  auto landing_of = [&](size_t k) { return landing + (k % 2) * slot; };

  // Round t holds the steps of chunks t-4 .. t; chunk_at says whether
  // chunk t - back exists.
  auto chunk_at = [&](size_t t, size_t back, size_t& k) {
    if (t < back || t - back >= chunks) return false;
    k = t - back;
    return true;
  };
  for (size_t t = 0; t < chunks + 4; ++t) {
    b.begin_mixed_round();
    size_t k = 0;
    // Local steps first (the builder ends a round at a local step that
    // follows its communication).
    if (is_lane && chunk_at(t, 3, k) && mine_bytes(k) > 0) {  // result
      const BufRef out = output(offset(k) + mine(k));
      if (swaps && first_node) b.reduce(out, out, landing_of(k), mine_bytes(k));
      else if (swaps) b.reduce(out, landing_of(k), out, mine_bytes(k));
      b.finalize(out, mine_bytes(k));
      if (shared_node) b.copy(result_area(k) + mine(k), out, mine_bytes(k));
    }
    if (shared_node && chunk_at(t, 4, k)) {  // out
      const BlockPartition s = slices(k);
      for (int i = 0; i < lanes; ++i)
        if (!(is_lane && i == local))
          b.copy(output(offset(k) + s.offset(i) * es), result_area(k) + s.offset(i) * es,
                 s.size(i) * es);
    }
    if (is_lane && chunk_at(t, 1, k) && mine_bytes(k) > 0) {  // reduce
      const BufRef out = output(offset(k) + mine(k));
      if (!shared_node) {
        b.copy(out, input(offset(k) + mine(k)), mine_bytes(k));
      } else {
        b.reduce(out, input_slot(k, 0) + mine(k), input_slot(k, 1) + mine(k), mine_bytes(k));
        for (int q = 2; q < node_ranks; ++q)
          b.reduce(out, out, input_slot(k, q) + mine(k), mine_bytes(k));
      }
    }
    if (shared_node && chunk_at(t, 0, k))  // in
      b.copy(input_slot(k, local), input(offset(k)), bytes(k));
    if (swaps && chunk_at(t, 2, k) && mine_bytes(k) > 0) {  // swap
      b.send(peer, output(offset(k) + mine(k)), mine_bytes(k));
      b.recv(peer, landing_of(k), mine_bytes(k));
    }
    if (shared_node) append_signal_then_wait(b, node);
    b.end_round();
  }
}

}  // namespace

extern const Algorithm kAllreduceHierarchicalShmOverlap{
    "hierarchical_shm_overlap", Collective::Allreduce,
    "node-aware, up to two nodes: hierarchical_shm with each chunk's exchange between the "
    "nodes overlapping the next chunks' work inside the node",
    refuse, build};

}  // namespace tutti::algos
