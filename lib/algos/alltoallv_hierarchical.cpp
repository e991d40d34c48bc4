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
#include "algos/alltoallv_lanes.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

Refusal refuse(const CollArgs& a, const Topology& topo) {
  if (topo.nnodes > 1 && a.node_send_counts.empty() && !a.node_counts_exchangeable)
    return "needs its node's send counts, which only blocking calls on host buffers exchange";
  return std::nullopt;
}

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const AlltoallvLanes lanes(b);
  const ExchangeLayout& x = lanes.layout();
  const std::vector<int>& mine = lanes.local_ranks();
  const size_t l = mine.size(), k = lanes.me();
  auto at = [](const std::vector<size_t>& v, int rank) { return v[static_cast<size_t>(rank)]; };

  // What this rank hands lane j, and what local rank j hands it.
  std::vector<BufRef> to_lane(l), from_local(l), local_in(l);
  for (size_t j = 0; j < l; ++j) {
    if (j == k) continue;
    to_lane[j] = b.scratch(lanes.handed(k, j));
    from_local[j] = b.scratch(lanes.handed(j, k));
    if (a.in_place) local_in[j] = b.scratch(at(x.recv_bytes, mine[j]));
  }

  // 1. Every read of the input happens here: the blocks for the lanes, this
  //    rank's own pieces of its packs and its own block, then the messages.
  for (size_t j = 0; j < l; ++j) {
    if (j == k) continue;
    size_t filled = 0;
    for (const int to : lanes.carried_by(j)) {
      const size_t n = lanes.through_lane(k, to);
      if (n) b.copy(to_lane[j] + filled, input(at(x.send_off, to)), n);
      filled += n;
    }
  }
  lanes.append_own_pieces(b, input());
  const size_t own = at(x.send_bytes, b.comm_rank());
  if (own && !a.in_place)
    b.copy(output(at(x.recv_off, b.comm_rank())), input(at(x.send_off, b.comm_rank())), own);
  for (size_t j = 0; j < l; ++j) {
    if (j == k) continue;
    const int peer = mine[j];
    if (const size_t n = lanes.handed(k, j)) b.send(peer, to_lane[j], n);
    if (const size_t n = lanes.sent(k, peer)) b.send(peer, input(at(x.send_off, peer)), n);
    if (const size_t n = lanes.handed(j, k)) b.recv(peer, from_local[j], n);
    if (const size_t n = at(x.recv_bytes, peer))
      b.recv(peer, a.in_place ? local_in[j] : output(at(x.recv_off, peer)), n);
  }
  b.end_round();

  // 2. The packs completed out of what the lanes handed over, and sent;
  //    the packs for this rank received.
  for (size_t j = 0; j < l; ++j) {
    if (j == k) continue;
    size_t read = 0;
    for (const int to : lanes.carried_by(k)) {
      const size_t n = lanes.through_lane(j, to);
      if (n) b.copy(lanes.pack_piece(to, j), from_local[j] + read, n);
      read += n;
    }
  }
  if (a.in_place)
    for (size_t j = 0; j < l; ++j)
      if (const size_t n = j == k ? 0 : at(x.recv_bytes, mine[j]))
        b.copy(output(at(x.recv_off, mine[j])), local_in[j], n);
  lanes.append_between_nodes(b, input());
}

}  // namespace

extern const Algorithm kAlltoallvHierarchical{
    "hierarchical", Collective::Alltoallv,
    "node-aware, every rank a lane: blocks for another node's rank gather at one local rank "
    "and cross in one message (needs the node's send counts: blocking calls)",
    refuse, build, nullptr, nullptr, /*needs_node_counts=*/true};

}  // namespace tutti::algos
