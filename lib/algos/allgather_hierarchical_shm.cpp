// allgather "hierarchical_shm": node-aware and multi-lane, for large blocks:
// every rank of a node carries a share of the blocks between nodes, and
// inside a node the blocks move through the node's shared segment.
//   Lanes:    L = the fewest ranks any node holds. Group i is the ranks of
//             local index i, i + L, i + 2L, ... on every node; local rank
//             i < L of each node (lane i) carries group i's blocks.
//   Steps:    1. on a node with more than L ranks, the extra ranks put their
//                blocks in their slots; the node synchronises; each lane
//                copies its group's blocks to their places in its output;
//             2. lane i sends its node's group-i blocks to lane i of every
//                other node and receives theirs, all posted at once;
//             3. lane i copies the blocks of group i (every node's) into
//                its slot, chunk by chunk; the node synchronises; every
//                rank copies the other lanes' chunks to their places.
//   Scratch:  none (blocks land at their place in the output).
//   Cost, N nodes of L ranks, P = N L, blocks of m bytes:
//             alpha_out + (N-1) m beta_out per lane, all lanes at once
//             (each block crosses between two nodes once, over the link of
//             its own lane), against log2(P) rounds of growing messages for
//             recursive doubling and P-1 for the ring, each as slow as the
//             inter-node link
//           + per chunk of N m a synchronisation and L copies of it inside
//             the node (step 3).
//   Any rank count, count and topology; see node_shm.hpp for what the
//   segment must hold. On one node it is an allgather through the segment.
#include <algorithm>

#include "algos/node_groups.hpp"
#include "algos/node_shm.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

// The ranks of group `lane` (communicator ranks, ascending).
std::vector<int> group_of(const NodeGroups& g, int lane, int lanes) {
  std::vector<int> ranks;
  for (const std::vector<int>& node : g.ranks_of_node())
    for (size_t i = static_cast<size_t>(lane); i < node.size(); i += static_cast<size_t>(lanes))
      ranks.push_back(node[i]);
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

// For the byte range [from, from + bytes) of a stream made of the blocks of
// `ranks` one after another (m bytes each): f(rank, offset in its block,
// stream offset, length) for every piece.
template <typename F>
void for_each_piece(const std::vector<int>& ranks, size_t m, size_t from, size_t bytes, F f) {
  const size_t end = std::min(from + bytes, ranks.size() * m);
  for (size_t at = from; at < end;) {
    const size_t k = at / m, within = at % m;
    const size_t len = std::min(m - within, end - at);
    f(ranks[k], within, at - from, len);
    at += len;
  }
}

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t m = a.count * b.elem_size();
  const int me = b.comm_rank();
  const size_t slot = node_slot_bytes(a, b.topology());
  const NodeGroups g = node_groups_of(b.topology(), me);
  const std::vector<int>& mine = g.my_node_ranks();
  const int node_ranks = static_cast<int>(mine.size());
  const int lanes = g.min_ranks_per_node, local = g.my_local;
  auto block = [m](int rank) { return output(static_cast<size_t>(rank) * m); };

  if (!a.in_place) b.copy(block(me), input(), m);
  if (m == 0) return;

  // 1. A node's extra ranks hand their blocks to their lanes.
  if (node_ranks > lanes) {
    auto in_node = b.within(mine);
    b.note_slot_area(static_cast<size_t>(node_ranks) * slot);
    for (size_t off = 0; off < m; off += slot) {
      const size_t c = std::min(slot, m - off);
      const int parity = b.begin_shm_chunk();
      if (local >= lanes) b.copy(node_slot(b, parity, local, slot), block(me) + off, c);
      append_shm_sync_all(b);
      if (local < lanes)
        for (int e = local + lanes; e < node_ranks; e += lanes)
          b.copy(block(mine[static_cast<size_t>(e)]) + off, node_slot(b, parity, e, slot), c);
    }
  }

  // 2. Lane i's node blocks to lane i of every other node, and theirs back.
  if (local < lanes && g.nnodes() > 1) {
    for (const int node : g.other_nodes()) {
      const std::vector<int>& theirs = g.ranks_of_node()[static_cast<size_t>(node)];
      const int peer = theirs[static_cast<size_t>(local)];
      for (int i = local; i < node_ranks; i += lanes) b.send(peer, block(mine[static_cast<size_t>(i)]), m);
      for (size_t i = static_cast<size_t>(local); i < theirs.size(); i += static_cast<size_t>(lanes))
        b.recv(peer, block(theirs[i]), m);
    }
    b.end_round();
  }

  // 3. Every lane's group to every rank of the node.
  if (node_ranks == 1) return;
  auto in_node = b.within(mine);
  std::vector<std::vector<int>> groups;
  size_t longest = 0;
  for (int lane = 0; lane < lanes; ++lane) {
    groups.push_back(group_of(g, lane, lanes));
    longest = std::max(longest, groups.back().size() * m);
  }
  b.note_slot_area(static_cast<size_t>(node_ranks) * slot);
  for (size_t off = 0; off < longest; off += slot) {
    const int parity = b.begin_shm_chunk();
    if (local < lanes)
      for_each_piece(groups[static_cast<size_t>(local)], m, off, slot,
                     [&](int rank, size_t within, size_t at, size_t len) {
                       b.copy(node_slot(b, parity, local, slot) + at, block(rank) + within, len);
                     });
    append_shm_sync_all(b);
    for (int lane = 0; lane < lanes; ++lane) {
      if (lane == local) continue;
      for_each_piece(groups[static_cast<size_t>(lane)], m, off, slot,
                     [&](int rank, size_t within, size_t at, size_t len) {
                       if (rank != me) b.copy(block(rank) + within, node_slot(b, parity, lane, slot) + at, len);
                     });
    }
  }
}

}  // namespace

extern const Algorithm kAllgatherHierarchicalShm{
    "hierarchical_shm", Collective::Allgather,
    "node-aware, every rank a lane: each lane's blocks to the same lane of every other node, "
    "then every lane's blocks through the node's shared segment",
    refuse_node_shm, build};

}  // namespace tutti::algos
