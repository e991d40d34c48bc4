// alltoall "leader": node-aware aggregation of small blocks, one leader per
// node (its first rank), the idea of NCCL's PXN: what a node sends to
// another node travels as one message between their leaders instead of
// L x L messages between their ranks.
//   Steps:    1. inside each node, every rank sends its whole input (P blocks)
//                to the leader;
//             2. each leader packs, for every other node, the blocks its
//                ranks send there (in the receiving node's rank order), and
//                the leaders exchange these packs, all posted at once;
//             3. each leader assembles every local rank's output (P blocks
//                in source order) and sends it; its own it writes in place.
//   Scratch (leader only), L ranks on its node, blocks of m bytes:
//             3 L P m (the gathered inputs, the packs sent and received);
//             other ranks: none.
//   Cost, N nodes of L ranks, P = N L:
//             2 (alpha_in + L P m beta_in) + alpha_out + (N-1) L^2 m beta_out
//             + 2 L P m gamma_copy (packing and unpacking at the leader).
//             N-1 messages per node cross between nodes, against P-1 per
//             rank (L (P-1) per node) for pairwise and linear: for blocks
//             small enough that the latency of a message between nodes
//             outweighs moving every byte through the leader.
//   Any rank count and topology (uneven nodes, any rank order); in place
//   too (every input is read into the leader's scratch before any output
//   is written). On one node it is a gather to rank 0 and a scatter back.
#include "algos/node_groups.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t m = a.count * b.elem_size();
  const int p = b.nranks();
  const size_t row = m * static_cast<size_t>(p);  // one rank's whole buffer
  const int me = b.comm_rank();
  const NodeGroups g = node_groups_of(b.topology(), me);
  const std::vector<int>& mine = g.my_node_ranks();
  const size_t l = mine.size();
  const int leader = mine.front();

  if (me != leader) {
    b.send(leader, input(), row);
    b.end_round();
    b.recv(leader, output(), row);
    b.end_round();
    return;
  }

  // 1. The node's inputs, local rank k's at k * row.
  const BufRef gathered = b.scratch(l * row);
  b.copy(gathered, input(), row);
  for (size_t k = 1; k < l; ++k) b.recv(mine[k], gathered + k * row, row);
  b.end_round();

  // 2. Packs for node B: block (j, k) = what local rank k sends to B's j-th
  //    rank, at (j l + k) m; the pack received from B holds block (d, s) =
  //    what B's s-th rank sends to local rank d, at (d |B| + s) m.
  const BufRef packs_out = b.scratch(l * row);
  const BufRef packs_in = b.scratch(l * row);
  std::vector<size_t> pack_offset(static_cast<size_t>(g.nnodes()), 0);
  size_t offset = 0;
  for (int node = 0; node < g.nnodes(); ++node) {
    if (node == g.my_node) continue;
    pack_offset[static_cast<size_t>(node)] = offset;
    offset += g.ranks_of_node()[static_cast<size_t>(node)].size() * l * m;
  }
  // Every pack is made before the first is sent: a copy after a message
  // would start a new round, and the exchanges, one round each, would run
  // one after the other (and wait on each other in a cycle where each node
  // starts with the next).
  for (const int node : g.other_nodes()) {
    const std::vector<int>& theirs = g.ranks_of_node()[static_cast<size_t>(node)];
    const size_t at = pack_offset[static_cast<size_t>(node)];
    for (size_t j = 0; j < theirs.size(); ++j)
      for (size_t k = 0; k < l; ++k)
        b.copy(packs_out + at + (j * l + k) * m,
               gathered + k * row + static_cast<size_t>(theirs[j]) * m, m);
  }
  for (const int node : g.other_nodes()) {
    const std::vector<int>& theirs = g.ranks_of_node()[static_cast<size_t>(node)];
    const size_t at = pack_offset[static_cast<size_t>(node)];
    b.send(theirs.front(), packs_out + at, theirs.size() * l * m);
    b.recv(theirs.front(), packs_in + at, theirs.size() * l * m);
  }
  b.end_round();

  // 3. Local rank d's output: from local rank k the block in `gathered`,
  //    from node B's ranks one run at a time out of B's pack. The leader's
  //    own goes straight to its output; the others' are assembled in
  //    packs_out (sent in the last round, free again).
  //    All of them are assembled before the first is sent, so that the
  //    sends share one round.
  auto assembled = [&](size_t d) { return d == 0 ? output() : packs_out + d * row; };
  for (size_t d = 0; d < l; ++d) {
    const BufRef out = assembled(d);
    for (size_t k = 0; k < l; ++k)
      b.copy(out + static_cast<size_t>(mine[k]) * m,
             gathered + k * row + static_cast<size_t>(mine[d]) * m, m);
    for (int node = 0; node < g.nnodes(); ++node) {
      if (node == g.my_node) continue;
      const std::vector<int>& theirs = g.ranks_of_node()[static_cast<size_t>(node)];
      const BufRef from = packs_in + pack_offset[static_cast<size_t>(node)] + d * theirs.size() * m;
      for_each_run(theirs, [&](int first, int count, int before) {
        b.copy(out + static_cast<size_t>(first) * m, from + static_cast<size_t>(before) * m,
               static_cast<size_t>(count) * m);
      });
    }
  }
  for (size_t d = 1; d < l; ++d) b.send(mine[d], assembled(d), row);
  b.end_round();
}

}  // namespace

extern const Algorithm kAlltoallLeader{
    "leader", Collective::Alltoall,
    "node-aware aggregation (PXN-like): each node's blocks for another node travel as one message "
    "between their leaders",
    accept_all, build};

}  // namespace tutti::algos
