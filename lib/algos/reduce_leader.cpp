// reduce "leader": node-aware, one leader per node (the root on its node,
// the first rank on every other node).
//   Steps:    1. inside each node, binomial reduce to its leader, pipelined
//                in segments;
//             2. the leaders reduce between nodes: binomial tree to the
//                root, pipelined in segments. The root finalizes (avg).
//   Segments: params.chunk_bytes (default 256 KiB), in both steps.
//   Scratch:  one segment (landing) on ranks that receive, plus the vector
//             (the node's partial result) on leaders other than the root
//             and inner ranks of the node trees.
//   Cost, N nodes of L ranks, n bytes, unpipelined:
//             ceil(log2 L) (alpha_in + n beta_in + n gamma) +
//             ceil(log2 N) (alpha_out + n beta_out + n gamma).
//             Exactly N-1 messages of n bytes cross between nodes.
//   Any rank count, count, topology and root; every op. On one node it is
//   the tree.
#include <algorithm>

#include "algos/binomial_reduce.hpp"
#include "algos/node_groups.hpp"
#include "algos/patterns.hpp"
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
  const size_t segment = binomial_reduce_segment_bytes(b);
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
    const BinomialTree tree{b.rank(), b.nranks(), g.local_index_of(my_leader)};
    if (tree.children().empty()) {
      append_binomial_reduce(b, tree, input(), input(), input(), n, segment);
    } else {
      const BufRef mine = is_leader ? acc : b.scratch(n);
      append_binomial_reduce(b, tree, input(), mine, b.scratch(std::min(segment, n)), n, segment);
      node_result = mine;
    }
  }
  if (is_leader && g.nnodes() > 1) {
    auto between_nodes = b.within(leaders);
    const BinomialTree tree{b.rank(), b.nranks(), g.node_of(a.root)};
    const BufRef landing = tree.children().empty() ? node_result : b.scratch(std::min(segment, n));
    append_binomial_reduce(b, tree, node_result, acc, landing, n, segment);
  }
  if (is_root) b.finalize(output(), n);
}

}  // namespace

extern const Algorithm kReduceLeader{
    "leader", Collective::Reduce,
    "node-aware, one leader per node: binomial tree to each node's leader, then a binomial "
    "tree between the leaders to the root",
    accept_all, build};

}  // namespace tutti::algos
