// reduce "binary_leader_shm": "leader_shm" for many nodes and large
// vectors: one leader per node (the root on its node, the first rank on
// every other node), each node's vectors reduced to its leader through the
// node's shared segment, then a pipelined binary tree between the leaders
// instead of a binomial one.
//   Steps:    1. inside each node, as "leader_shm" (append_node_reduce);
//             2. the leaders reduce between nodes: binary tree to the root's
//                node (patterns.hpp BinaryTree), pipelined in segments
//                (binomial_reduce.hpp). The root finalizes (avg).
//   Scratch:  the vector on leaders other than the root (the node's
//             partial result); a landing segment on leaders that receive.
//   Cost, N nodes of L ranks, n bytes in S segments:
//             the phase inside the node, as "leader_shm"
//           + about 2 (S + floor(log2 N)) (alpha_out + n/S (beta_out +
//             gamma)): each leader receives the vector at most twice
//             between nodes, where "leader_shm"'s root receives it
//             ceil(log2 N) times; for one segment twice its latency.
//   Any rank count, count, topology and root; every op. See node_shm.hpp
//   for what the segment must hold.
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
    const BinaryTree tree{b.rank(), b.nranks(), g.node_of(a.root)};
    const std::vector<int> children = tree.children();
    const BufRef landing = children.empty() ? node_result : b.scratch(std::min(segment, n));
    append_pipelined_reduce(b, tree.parent(), children, node_result, acc, landing, n, segment);
  }
  if (is_root) b.finalize(output(), n);
}

}  // namespace

extern const Algorithm kReduceBinaryLeaderShm{
    "binary_leader_shm", Collective::Reduce,
    "node-aware, one leader per node: through each node's shared segment to its leader, then a "
    "pipelined binary tree between the leaders to the root",
    refuse_node_shm, build};

}  // namespace tutti::algos
