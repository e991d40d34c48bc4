// alltoallv "hierarchical": node-aware, every rank a lane (the idea of
// alltoall "hierarchical_shm", through messages and for any counts): a
// block for rank i of another node B travels first, inside the node, to
// the local rank of index i mod L (i's lane), which sends rank i all that
// its node has for it in one message.
//   Needs:    the send counts of every rank of its node
//             (CollArgs::node_send_counts): a lane must know the size of
//             what its neighbours hand it. Comm exchanges them inside the
//             node before it builds a blocking call on host buffers
//             (Comm::exchange_node_counts); elsewhere (non-blocking calls,
//             device buffers) it refuses across nodes.
//   Rules:    none choose it: on the emulated cluster, ranks sharing cores,
//             it lost to pairwise and to the MPI library's own
//             (docs/perf/cluster-{2x2,4x2}-alltoallv-2026-11-29.txt).
//   Steps:    1. to every other local rank j one message with this rank's
//                blocks for the ranks j carries, and one with its block
//                for j itself (received straight into j's output; in
//                place into scratch); its own blocks for the ranks it
//                carries go into their packs at once;
//             2. for every rank i of another node it carries, the pack of
//                its node's blocks for i, in local order, is completed out
//                of what step 1 brought and sent to i; from every other
//                node it receives the pack for itself, straight into its
//                output where those blocks lie there in that order (the
//                usual layout), else into scratch, copied out after.
//   Scratch:  what it hands its lanes, what they hand it, its packs and
//             the packs it receives (where they cannot land in place).
//   Cost, N nodes of L ranks, P = N L: 2 (L-1) messages inside the node
//             and N-1 between nodes per rank, against pairwise's P-1, of
//             which (N-1) L between nodes; a block crossing nodes is
//             copied twice more (packed by its sender, then by its lane)
//             and crosses its own node once more:
//             (L-1 + N-1) alpha_in/out + 2 x bytes gamma_copy + bytes beta.
//   Any rank count and topology (uneven nodes, any rank order), counts and
//   displacements; in place too. On one node it is alltoallv "linear".
#include <algorithm>

#include "algos/alltoall_common.hpp"
#include "algos/node_groups.hpp"
#include "algos/registry.hpp"
#include "base/status.hpp"

namespace tutti::algos {
namespace {

Refusal refuse(const CollArgs& a, const Topology& topo) {
  if (topo.nnodes > 1 && a.node_send_counts.empty() && !a.node_counts_exchangeable)
    return "needs its node's send counts, which only blocking calls on host buffers exchange";
  return std::nullopt;
}

// A rank of another node that some lane of this node carries.
struct Carried {
  int rank;
  int lane;  // the local index of the rank of this node that carries it
};

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t p = static_cast<size_t>(b.nranks());
  const size_t es = b.elem_size();
  const int me = b.comm_rank();
  const NodeGroups g = node_groups_of(b.topology(), me);
  const std::vector<int>& mine = g.my_node_ranks();
  const size_t l = mine.size();
  const size_t k = static_cast<size_t>(g.my_local);
  // This rank's blocks, in bytes, per peer.
  const ExchangeLayout x = alltoallv_exchange_layout(b);
  auto at = [](const std::vector<size_t>& v, int rank) { return v[static_cast<size_t>(rank)]; };

  // Every other node's ranks, node by node, with their lanes here.
  std::vector<Carried> carried;
  for (int node = 0; node < g.nnodes(); ++node) {
    if (node == g.my_node) continue;
    const std::vector<int>& theirs = g.ranks_of_node()[static_cast<size_t>(node)];
    for (size_t i = 0; i < theirs.size(); ++i)
      carried.push_back({theirs[i], static_cast<int>(i % l)});
  }
  if (!carried.empty() && a.node_send_counts.size() != l * p)
    fail(TUTTI_ERR_INTERNAL, "alltoallv hierarchical: ", a.node_send_counts.size(),
         " node send counts, want ", l * p);
  // Bytes local rank j sends to rank `to`.
  auto sent = [&](size_t j, int to) {
    return j == k ? at(x.send_bytes, to) : a.node_send_counts[j * p + static_cast<size_t>(to)] * es;
  };

  // The packs this rank sends: for carried rank c, every local rank's
  // block for c in local order. pack_at[c][j] is where local rank j's
  // piece lies.
  std::vector<size_t> mine_carried;  // indices into `carried` of those it carries
  for (size_t c = 0; c < carried.size(); ++c)
    if (static_cast<size_t>(carried[c].lane) == k) mine_carried.push_back(c);
  std::vector<std::vector<size_t>> pack_at(mine_carried.size(), std::vector<size_t>(l + 1));
  size_t packs_bytes = 0;
  for (size_t m = 0; m < mine_carried.size(); ++m) {
    for (size_t j = 0; j < l; ++j) {
      pack_at[m][j] = packs_bytes;
      packs_bytes += sent(j, carried[mine_carried[m]].rank);
    }
    pack_at[m][l] = packs_bytes;
  }
  const BufRef packs = b.scratch(packs_bytes);

  // What this rank hands lane j (its blocks for the ranks j carries, in
  // carried order), and what local rank j hands it.
  auto handed = [&](size_t from, size_t lane) {
    size_t total = 0;
    for (const Carried& c : carried)
      if (static_cast<size_t>(c.lane) == lane) total += sent(from, c.rank);
    return total;
  };
  std::vector<BufRef> to_lane(l), from_local(l), local_in(l);
  for (size_t j = 0; j < l; ++j) {
    if (j == k) continue;
    to_lane[j] = b.scratch(handed(k, j));
    from_local[j] = b.scratch(handed(j, k));
    if (a.in_place) local_in[j] = b.scratch(at(x.recv_bytes, mine[j]));
  }

  // 1. Every read of the input happens here: the blocks for the lanes, this
  //    rank's own pieces of its packs and its own block, then the messages.
  for (size_t j = 0; j < l; ++j) {
    if (j == k) continue;
    size_t filled = 0;
    for (const Carried& c : carried) {
      if (static_cast<size_t>(c.lane) != j) continue;
      const size_t n = sent(k, c.rank);
      if (n) b.copy(to_lane[j] + filled, input(at(x.send_off, c.rank)), n);
      filled += n;
    }
  }
  for (size_t m = 0; m < mine_carried.size(); ++m) {
    const int to = carried[mine_carried[m]].rank;
    const size_t n = sent(k, to);
    if (n) b.copy(packs + pack_at[m][k], input(at(x.send_off, to)), n);
  }
  const size_t own = at(x.send_bytes, me);
  if (own && !a.in_place) b.copy(output(at(x.recv_off, me)), input(at(x.send_off, me)), own);
  for (size_t j = 0; j < l; ++j) {
    if (j == k) continue;
    const int peer = mine[j];
    if (const size_t n = handed(k, j)) b.send(peer, to_lane[j], n);
    if (const size_t n = sent(k, peer)) b.send(peer, input(at(x.send_off, peer)), n);
    if (const size_t n = handed(j, k)) b.recv(peer, from_local[j], n);
    if (const size_t n = at(x.recv_bytes, peer))
      b.recv(peer, a.in_place ? local_in[j] : output(at(x.recv_off, peer)), n);
  }
  b.end_round();

  // 2. The packs completed and sent; the packs for this rank received.
  std::vector<size_t> from_at(l, 0);  // read position in from_local[j]
  for (size_t m = 0; m < mine_carried.size(); ++m) {
    const int to = carried[mine_carried[m]].rank;
    for (size_t j = 0; j < l; ++j) {
      if (j == k) continue;
      const size_t n = sent(j, to);
      if (n) b.copy(packs + pack_at[m][j], from_local[j] + from_at[j], n);
      from_at[j] += n;
    }
  }
  if (a.in_place)
    for (size_t j = 0; j < l; ++j)
      if (const size_t n = j == k ? 0 : at(x.recv_bytes, mine[j]))
        b.copy(output(at(x.recv_off, mine[j])), local_in[j], n);
  for (size_t m = 0; m < mine_carried.size(); ++m)
    if (const size_t n = pack_at[m][l] - pack_at[m][0])
      b.send(carried[mine_carried[m]].rank, packs + pack_at[m][0], n);

  // From node B the pack comes from B's rank of local index k mod |B|.
  struct Landing {
    int node;
    BufRef area;  // scratch where it cannot land in the output
    size_t bytes;
  };
  std::vector<Landing> to_copy;
  for (const int node : g.other_nodes()) {
    const std::vector<int>& theirs = g.ranks_of_node()[static_cast<size_t>(node)];
    const int lane = theirs[k % theirs.size()];
    size_t total = 0, first_off = 0;
    bool in_order = true;
    for (const int from : theirs) {
      const size_t n = at(x.recv_bytes, from);
      if (!n) continue;
      const size_t off = at(x.recv_off, from);
      if (total == 0) first_off = off;
      else if (off != first_off + total) in_order = false;
      total += n;
    }
    if (!total) continue;
    if (in_order) {
      b.recv(lane, output(first_off), total);
    } else {
      const BufRef area = b.scratch(total);
      b.recv(lane, area, total);
      to_copy.push_back({node, area, total});
    }
  }
  b.end_round();

  // 3. Packs that arrived out of the output's order, copied into place.
  for (const Landing& land : to_copy) {
    size_t read = 0;
    for (const int from : g.ranks_of_node()[static_cast<size_t>(land.node)]) {
      const size_t n = at(x.recv_bytes, from);
      if (n) b.copy(output(at(x.recv_off, from)), land.area + read, n);
      read += n;
    }
  }
}

}  // namespace

extern const Algorithm kAlltoallvHierarchical{
    "hierarchical", Collective::Alltoallv,
    "node-aware, every rank a lane: blocks for another node's rank gather at one local rank "
    "and cross in one message (needs the node's send counts: blocking calls)",
    refuse, build, nullptr, nullptr, /*needs_node_counts=*/true};

}  // namespace tutti::algos
