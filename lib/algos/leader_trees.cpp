#include "algos/leader_trees.hpp"

#include <algorithm>
#include <vector>

#include "algos/binomial.hpp"
#include "algos/binomial_reduce.hpp"
#include "algos/node_groups.hpp"
#include "algos/node_shm.hpp"

namespace tutti::algos {
namespace {

// This leader's parent and children in the tree between the leaders (the
// current group), rooted at `root`. Binomial children come smallest
// subtree first (reduce's order); bcast reverses them.
struct Links {
  int parent;
  std::vector<int> children;
};
Links links_of(LeaderTree tree, int rank, int nranks, int root) {
  if (tree == LeaderTree::Binomial) {
    const BinomialTree t{rank, nranks, root};
    return {t.parent(), t.children()};
  }
  const BinaryTree t{rank, nranks, root};
  return {t.parent(), t.children()};
}

}  // namespace

NodeLeader append_bcast_between_leaders(ScheduleBuilder& b, LeaderTree tree) {
  const CollArgs& a = b.args();
  const NodeGroups g = node_groups_of(b.topology(), b.comm_rank());
  const std::vector<int> leaders = g.leaders_for_root(a.root);
  const int my_leader = leaders[static_cast<size_t>(g.my_node)];
  if (b.comm_rank() == my_leader && g.nnodes() > 1) {
    auto between_nodes = b.within(leaders);
    Links l = links_of(tree, b.rank(), b.nranks(), g.node_of(a.root));
    if (tree == LeaderTree::Binomial)
      std::reverse(l.children.begin(), l.children.end());  // largest subtree first
    append_pipelined_bcast(b, l.parent, l.children, output(), a.count * b.elem_size(),
                           binomial_segment_bytes(b));
  }
  return {g, my_leader};
}

void append_leader_shm_bcast(ScheduleBuilder& b, LeaderTree tree) {
  const NodeLeader nl = append_bcast_between_leaders(b, tree);
  const NodeGroups& g = nl.groups;
  if (g.my_node_ranks().size() > 1) {
    auto in_node = b.within(g.my_node_ranks());
    append_node_bcast(b, g.local_index_of(nl.leader), output(), b.args().count * b.elem_size(),
                      node_slot_bytes(b.args(), b.topology()));
  }
}

void append_leader_shm_reduce(ScheduleBuilder& b, LeaderTree tree) {
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
  // node's partial result after the phase inside the node and its
  // subtree's after the one between nodes.
  const BufRef acc = is_root ? output() : (is_leader ? b.scratch(n) : input());
  BufRef node_result = input();  // the whole node's, on its leader
  if (g.my_node_ranks().size() > 1) {
    auto in_node = b.within(g.my_node_ranks());
    append_node_reduce(b, g.local_index_of(my_leader), input(), acc, n,
                       node_slot_bytes(a, b.topology()));
    node_result = acc;
  }
  if (is_leader && g.nnodes() > 1) {
    auto between_nodes = b.within(leaders);
    const size_t segment = binomial_reduce_segment_bytes(b);
    const Links l = links_of(tree, b.rank(), b.nranks(), g.node_of(a.root));
    const BufRef landing = l.children.empty() ? node_result : b.scratch(std::min(segment, n));
    append_pipelined_reduce(b, l.parent, l.children, node_result, acc, landing, n, segment);
  }
  if (is_root) b.finalize(output(), n);
}

}  // namespace tutti::algos
