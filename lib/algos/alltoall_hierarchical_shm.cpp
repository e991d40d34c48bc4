// alltoall "hierarchical_shm": node-aware and multi-lane, the idea of NCCL's
// PXN with every rank a lane: a block for rank k of another node travels
// first, inside the node, to the rank with k's local index, which sends
// its node's blocks for k in one message.
//   Lanes:    local rank k (lane k) of every node carries what its node
//             sends to the ranks of local index k on the other nodes.
//   Steps:    1. inside each node through the segment, chunk by chunk: each
//                rank copies, for every other local rank k and every node,
//                its block for that node's k-th rank into its slot; the
//                node synchronises; lane k copies out of every other
//                rank's slots the pieces for itself (to its output) and for
//                the k-th ranks of the other nodes (to its outgoing pack
//                for that node: the node's blocks in local order);
//             2. lane k sends each other node's k-th rank its pack and
//                receives theirs straight into its output, all posted at
//                once (one message per run of consecutively numbered ranks:
//                one per node under mpirun's default numbering).
//   Scratch:  N L m (the outgoing packs).
//   Cost, N nodes of L ranks, P = N L, blocks of m bytes:
//             per chunk a synchronisation and (L-1) N pieces copied in and
//             out by every rank, then alpha_out + (N-1) L m beta_out per
//             lane, all lanes at once: N-1 messages between nodes per rank
//             against P-1 for pairwise and linear, the same bytes.
//   Nodes of equal rank counts (else it refuses: a lane would be missing),
//   up to 64 nodes,
//   any rank numbering and count; in place too (step 2 writes the output
//   only after step 1 read all of the input). On one node it is an
//   alltoall through the segment.
#include <algorithm>

#include "algos/node_groups.hpp"
#include "algos/node_shm.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

// Slots per rank and parity: one per (local rank, node) pair.
size_t slots_per_rank(const Topology& topo) {
  return static_cast<size_t>(topo.max_ranks_per_node) * static_cast<size_t>(topo.nnodes);
}

// Past this many nodes every rank would copy (L-1) N pieces per chunk and
// post N-1 messages; Bruck's log2 P rounds win there (the cost model, 512
// ranks on 64 nodes, 2 KiB: 782 us against 190), and simulating it at
// thousands of nodes would only slow tutti-sim down.
constexpr int kMostNodes = 64;

Refusal refuse(const CollArgs& a, const Topology& topo) {
  if (node_groups_of(topo, 0).min_ranks_per_node != topo.max_ranks_per_node)
    return "needs the same number of ranks on every node";
  if (topo.nnodes > kMostNodes) return str("made for up to ", kMostNodes, " nodes");
  if (topo.max_ranks_per_node == 1) return std::nullopt;
  if (topo.shared_bytes == 0) return "no shared-memory segment (TUTTI_SHM_BYTES=0 or unavailable)";
  const size_t chunk = a.params.chunk_bytes ? a.params.chunk_bytes : kDefaultChunkBytes;
  if (shm_slot_bytes(topo.shared_bytes, topo.max_ranks_per_node, chunk, slots_per_rank(topo)) <
      kMinShmSlot)
    return str("the shared segment (", topo.shared_bytes, " bytes) is too small for ",
               topo.max_ranks_per_node, " ranks per node and ", topo.nnodes, " nodes");
  return std::nullopt;
}

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t m = a.count * b.elem_size();
  const int me = b.comm_rank();
  const NodeGroups g = node_groups_of(b.topology(), me);
  const auto& nodes = g.ranks_of_node();
  const int n = g.nnodes(), l = static_cast<int>(g.my_node_ranks().size()), k = g.my_local;
  auto block = [m](BufRef base, int rank) { return base + static_cast<size_t>(rank) * m; };
  auto rank_at = [&](int node, int local) {
    return nodes[static_cast<size_t>(node)][static_cast<size_t>(local)];
  };
  // Pack for node `node`: the blocks this node's ranks send to its k-th
  // rank, in local order.
  const BufRef packs = b.scratch(static_cast<size_t>(n) * static_cast<size_t>(l) * m);
  auto pack = [&](int node, int local) {
    return packs + (static_cast<size_t>(node) * static_cast<size_t>(l) + static_cast<size_t>(local)) * m;
  };

  // 1. What this rank sends to lane k's ranks on other nodes goes to its
  //    own pack directly; the rest through the segment.
  if (l == 1) {
    for (int node = 0; node < n; ++node)
      if (node != g.my_node) b.copy(pack(node, 0), block(input(), rank_at(node, 0)), m);
    if (!a.in_place) b.copy(block(output(), me), block(input(), me), m);
  } else {
    auto in_node = b.within(g.my_node_ranks());
    const size_t per_rank = static_cast<size_t>(l) * static_cast<size_t>(n);
    const ShmSlots slots = shm_slots(b, per_rank, m);
    auto slot = [&](int parity, int from, int lane, int node) {
      return slots.at(parity, from, static_cast<size_t>(lane) * static_cast<size_t>(n) +
                                         static_cast<size_t>(node));
    };
    for (size_t off = 0; off < m; off += slots.slot) {
      const size_t c = std::min(slots.slot, m - off);
      const int parity = b.begin_shm_chunk();
      for (int lane = 0; lane < l; ++lane) {
        if (lane == k) continue;
        for (int node = 0; node < n; ++node)
          b.copy(slot(parity, k, lane, node), block(input(), rank_at(node, lane)) + off, c);
      }
      for (int node = 0; node < n; ++node)
        if (node != g.my_node) b.copy(pack(node, k) + off, block(input(), rank_at(node, k)) + off, c);
      if (!a.in_place) b.copy(block(output(), me) + off, block(input(), me) + off, c);
      append_shm_sync_all(b);
      for (int from = 0; from < l; ++from) {
        if (from == k) continue;
        for (int node = 0; node < n; ++node) {
          const BufRef to = node == g.my_node ? block(output(), rank_at(node, from)) + off
                                              : pack(node, from) + off;
          b.copy(to, slot(parity, from, k, node), c);
        }
      }
    }
  }

  // 2. Lane k's packs between the nodes, received straight into place.
  for (const int node : g.other_nodes()) {
    const int peer = rank_at(node, k);
    for_each_run(g.my_node_ranks(), [&](int, int count, int offset) {
      b.send(peer, pack(node, offset), static_cast<size_t>(count) * m);
    });
    for_each_run(nodes[static_cast<size_t>(node)], [&](int first, int count, int) {
      b.recv(peer, block(output(), first), static_cast<size_t>(count) * m);
    });
  }
}

}  // namespace

extern const Algorithm kAlltoallHierarchicalShm{
    "hierarchical_shm", Collective::Alltoall,
    "node-aware, every rank a lane: blocks for another node's k-th rank gather at local rank k "
    "through the node's segment and cross in one message",
    refuse, build};

}  // namespace tutti::algos
