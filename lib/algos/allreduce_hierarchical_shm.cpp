// allreduce "hierarchical_shm": node-aware and data-partitioned like
// "hierarchical", with the phases inside each node through the node's
// shared segment instead of messages.
//   Lanes:    L = the fewest ranks any node holds; local rank i < L of every
//             node owns slice i of each chunk (a node's other ranks only
//             hand in their vector and take the result).
//   Steps, per chunk (as much of the vector as one slot holds: the
//   segment's half over the most ranks any node has, or params.chunk_bytes):
//             1. every rank copies its chunk into its slot; the node's ranks
//                synchronise (one flag to every other rank of the node);
//             2. lane i reduces slice i over the node's slots, in local rank
//                order, into its output, and allreduces it with lane i of
//                every other node (append_allreduce_across_nodes: ring or
//                recursive doubling);
//             3. lane i copies its reduced slice into the node's result
//                area; the node's ranks synchronise; every rank copies the
//                other slices out.
//   Results:  each element reduced once per node by its lane, then across
//             nodes in one order: bitwise identical on every rank.
//   Cost, N nodes of L ranks, n bytes, chunks of c bytes:
//             n/c (2 sync_in + allreduce across N of c/L bytes)
//           + per rank: 2 n copy-in/out beta_mem + n/L (L gamma) of reduction;
//             between nodes as "hierarchical": n/L per rank per direction
//             (ring), every link of the node busy at once. Inside a node no
//             messages: a flag costs a cache-line transfer (~0.2-1 us)
//             where a message through UCX costs a few microseconds.
//   Any rank count, count, topology and op; where a node holds several
//   ranks, needs each node's segment (Topology::shared_bytes) to hold a
//   slot of 64 bytes per rank of the fullest node. On one node it is a reduce-scatter/allgather through the
//   segment, where each rank reduces 1/P of the vector (the "shm"
//   allreduce reduces all of it on every rank).
#include <algorithm>

#include "algos/across_nodes.hpp"
#include "algos/node_groups.hpp"
#include "algos/registry.hpp"
#include "algos/ring.hpp"
#include "algos/node_shm.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t es = b.elem_size(), n = a.count * es;
  const size_t slot = node_slot_bytes(a, b.topology());
  const NodeGroups g = node_groups_of(b.topology(), b.comm_rank());
  const std::vector<int>& node = g.my_node_ranks();
  const int lanes = g.min_ranks_per_node, local = g.my_local;
  const int node_ranks = static_cast<int>(node.size());
  const bool is_lane = local < lanes;
  if (node_ranks > 1) b.note_slot_area(static_cast<size_t>(node_ranks) * slot);
  auto slot_of = [&](int parity, int rank) { return node_slot(b, parity, rank, slot); };
  for (size_t off = 0; off < n; off += slot) {
    const size_t c = std::min(slot, n - off);
    const BlockPartition slices = aligned_blocks(c / es, lanes, es);
    const size_t mine = is_lane ? slices.offset(local) * es : 0;
    const size_t mine_bytes = is_lane ? slices.size(local) * es : 0;
    if (node_ranks == 1) {  // alone on the node: nothing to share
      b.copy(output(off), input(off), c);
    } else {
      auto in_node = b.within(node);
      const int parity = b.begin_shm_chunk();
      b.copy(slot_of(parity, local), input(off), c);
      append_shm_sync_all(b);
      if (is_lane && mine_bytes > 0) {
        b.reduce(output(off + mine), slot_of(parity, 0) + mine, slot_of(parity, 1) + mine, mine_bytes);
        for (int q = 2; q < node_ranks; ++q)
          b.reduce(output(off + mine), output(off + mine), slot_of(parity, q) + mine, mine_bytes);
      }
    }
    if (is_lane) {
      auto rail = b.within(g.rail(local));
      append_allreduce_across_nodes(b, output(off + mine), mine_bytes / es);
    }
    if (node_ranks == 1) continue;
    auto in_node = b.within(node);
    const int parity = b.begin_shm_chunk();
    const BufRef result = slot_of(parity, 0);  // the slices side by side
    if (is_lane) b.copy(result + mine, output(off + mine), mine_bytes);
    append_shm_sync_all(b);
    for (int i = 0; i < lanes; ++i)
      if (!(is_lane && i == local))
        b.copy(output(off + slices.offset(i) * es), result + slices.offset(i) * es,
               slices.size(i) * es);
  }
}

}  // namespace

extern const Algorithm kAllreduceHierarchicalShm{
    "hierarchical_shm", Collective::Allreduce,
    "node-aware: reduce-scatter through each node's shared segment, allreduce of each slice "
    "across nodes by all local ranks at once, allgather through the segment",
    refuse_node_shm, build};

}  // namespace tutti::algos
