// reduce_scatter "leader": node-aware, one leader per node (its first rank),
// for small and mid-size vectors, where the number of messages between
// nodes is what counts. Rank r's result is block r of the reduced vector.
//   Steps:    1. inside each node, binomial reduce of the whole vector to
//                the leader, pipelined in segments;
//             2. the leaders exchange partial sums, each with every other,
//                all posted at once: to the leader of node k go the blocks
//                of node k's ranks (one message per run of consecutive
//                ranks); what arrives lands apart and is reduced in after
//                the round, in node order (so every block is reduced in the
//                same order wherever it ends);
//             3. the leader finalizes (avg) its node's blocks and sends each
//                rank of its node its block.
//   Scratch:  on ranks with children in the node's tree, the whole vector
//             and a segment; on leaders also (N-1) x their node's blocks.
//   Cost, N nodes of L ranks, P = N L, blocks of m bytes (vector P m):
//             ceil(log2 L) (alpha_in + P m beta_in + P m gamma)
//             + (alpha_out + (N-1) L m beta_out) + (N-1) L m gamma
//             + (alpha_in + (L-1) m beta_in).
//             Each node sends N-1 messages to other nodes, in one round,
//             against log2(P) rounds for recursive halving, every one of
//             which may cross between nodes.
//   Any rank count, count, op and topology (uneven nodes, any rank order).
#include <algorithm>

#include "algos/binomial_reduce.hpp"
#include "algos/between_leaders.hpp"
#include "algos/node_groups.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t m = a.count * b.elem_size();
  const size_t total = m * static_cast<size_t>(b.nranks());
  const int me = b.comm_rank();
  const NodeGroups g = node_groups_of(b.topology(), me);
  const std::vector<int>& mine = g.my_node_ranks();
  const int leader = mine.front();
  const bool is_leader = me == leader;
  auto at = [m](BufRef base, int rank) { return base + static_cast<size_t>(rank) * m; };

  // 1. The node's sum on the leader, in `work` (the input is read-only; in
  //    place it is the output buffer, whose first block ends as the result).
  BufRef work = input();
  if (mine.size() == 1) {
    work = b.scratch(total);
    b.copy(work, input(), total);
  } else {
    auto in_node = b.within(mine);
    const BinomialTree tree{b.rank(), b.nranks(), 0};
    const size_t segment = binomial_reduce_segment_bytes(b);
    if (tree.children().empty()) {
      append_binomial_reduce(b, tree, input(), input(), input(), total, segment);
    } else {
      work = b.scratch(total);
      append_binomial_reduce(b, tree, input(), work, b.scratch(std::min(segment, total)), total,
                             segment);
    }
  }

  if (is_leader) {
    // 2. Partial sums between the leaders.
    if (g.nnodes() > 1) append_leaders_reduce_partial_sums(b, g, work, m);
    // 3. Every rank of the node gets its block.
    for (int r : mine) b.finalize(at(work, r), m);
    for (size_t i = 1; i < mine.size(); ++i) b.send(mine[i], at(work, mine[i]), m);
    b.copy(output(), at(work, me), m);
  } else {
    b.recv(leader, output(), m);
  }
}

}  // namespace

extern const Algorithm kReduceScatterLeader{
    "leader", Collective::ReduceScatter,
    "node-aware, one leader per node: binomial reduce to the leaders, one exchange of partial "
    "sums between every pair of leaders, each rank's block from its leader",
    accept_all, build};

}  // namespace tutti::algos
