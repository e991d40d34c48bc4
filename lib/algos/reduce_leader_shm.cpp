// reduce "leader_shm": node-aware like "leader" (one leader per node: the
// root on its node, the first rank on every other node), with the phase
// inside each node through the node's shared segment.
//   Steps:    1. inside each node the others hand their vectors to the
//                leader, which reduces them in local rank order: in the
//                flag lines up to 384 bytes (on up to 16 ranks a node), else
//                chunk by chunk through the slots, each chunk fully
//                synchronised (node_shm.hpp);
//             2. the leaders reduce between nodes: binomial tree to the
//                root, pipelined in segments (params.chunk_bytes). The root
//                finalizes (avg).
//   Scratch:  the vector on leaders other than the root (the node's
//             partial result); a landing segment on leaders that receive;
//             (L-1) n on a leader for a vector in the flag lines.
//   Cost, N nodes of L ranks, n bytes:
//             a flag transfer and (L-1) n gamma (small), or per chunk a
//             synchronisation, L-1 copies in and (L-1) chunks of reduction
//           + ceil(log2 N) (alpha_out + n beta_out + n gamma).
//   Any rank count, count, topology and root; every op. See node_shm.hpp
//   for what the segment must hold. On one node it is a reduce through the
//   segment.
#include <algorithm>

#include "algos/binomial_reduce.hpp"
#include "algos/node_groups.hpp"
#include "algos/node_shm.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t n = a.count * b.elem_size();
  const bool is_root = b.comm_rank() == a.root;
  if (b.nranks() == 1) {
    if (!a.in_place) b.copy(output(), input(), n);
    return;
  }
  const NodeGroups g = node_groups_of(b.topology(), b.comm_rank());
  const std::vector<int> leaders = g.leaders_for_root(a.root);
  const int my_leader = leaders[static_cast<size_t>(g.my_node)];
  const bool is_leader = b.comm_rank() == my_leader;
  // A leader's accumulator: the root's output, else scratch. It holds the
  // node's partial result after step 1 and its subtree's after step 2.
  const BufRef acc = is_root ? output() : (is_leader ? b.scratch(n) : input());
  BufRef node_result = input();  // the whole node's, on its leader after step 1
  if (g.my_node_ranks().size() > 1) {
    auto in_node = b.within(g.my_node_ranks());
    append_node_reduce(b, g.local_index_of(my_leader), input(), acc, n,
                       node_slot_bytes(a, b.topology()));
    node_result = acc;
  }
  if (is_leader && g.nnodes() > 1) {
    auto between_nodes = b.within(leaders);
    const size_t segment = binomial_reduce_segment_bytes(b);
    const BinomialTree tree{b.rank(), b.nranks(), g.node_of(a.root)};
    const BufRef landing = tree.children().empty() ? node_result : b.scratch(std::min(segment, n));
    append_binomial_reduce(b, tree, node_result, acc, landing, n, segment);
  }
  if (is_root) b.finalize(output(), n);
}

}  // namespace

extern const Algorithm kReduceLeaderShm{
    "leader_shm", Collective::Reduce,
    "node-aware, one leader per node: through each node's shared segment to its leader, then a "
    "binomial tree between the leaders to the root",
    refuse_node_shm, build};

}  // namespace tutti::algos
