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
  const CollArgs& a = b.args();
  const size_t n = a.count * b.elem_size();
  const NodeGroups g = node_groups_of(b.topology(), b.comm_rank());
  const std::vector<int>& node = g.my_node_ranks();
  const int node_ranks = static_cast<int>(node.size());
  if (n == 0 || b.nranks() == 1) return;
  if (g.nnodes() == 1 || shm_fits_inline(n, node_ranks) || tree == LeaderTree::Binary) {
    // One node, or a vector that rides in the flag lines (the second phase
    // is one flag transfer), or the binary tree: the phases one after the
    // other. The binary tree pipelines light rounds (a segment to two
    // children) through a deep tree; tied to its node's copies every round
    // would wait for them, and the model puts that at 1.8x the time of the
    // phases in turn on 512 nodes of 8 ranks (8 MiB). The binomial tree's
    // rounds send a segment up to log2(N) times: the node's copies hide
    // under them.
    const NodeLeader nl = append_bcast_between_leaders(b, tree);
    if (node_ranks > 1) {
      auto in_node = b.within(node);
      append_node_bcast(b, g.local_index_of(nl.leader), output(), n,
                        node_slot_bytes(a, b.topology()));
    }
    return;
  }
  // Segments of one slot, the same on every node (the leaders' messages
  // must match): segment s goes between the nodes while segment s-1 goes
  // through each node's slots (mixed rounds).
  const size_t slot = node_slot_bytes(a, b.topology());  // ~0 with no chunk size and no node phase
  const size_t segments = n / slot + (n % slot != 0);
  auto seg = [&](size_t s) { return output(s * slot); };
  auto seg_bytes = [&](size_t s) { return std::min(slot, n - s * slot); };
  const std::vector<int> leaders = g.leaders_for_root(a.root);
  const int leader = leaders[static_cast<size_t>(g.my_node)];
  const int leader_local = g.local_index_of(leader);
  const int me = b.comm_rank();
  if (node_ranks > 1) b.note_slot_area(static_cast<size_t>(node_ranks) * slot);

  if (me != leader) {
    // Each segment: the node's synchronisation, then this rank copies the
    // leader's slot out (in the next round's local steps).
    for (size_t s = 0; s < segments; ++s) {
      const BufRef from = node_slot(b, b.begin_shm_chunk(), leader_local, slot);
      append_signal_then_wait(b, node);
      b.end_round();
      b.copy(seg(s), from, seg_bytes(s));
    }
    b.end_round();
    return;
  }
  // The leader: its parent and children in the tree between the leaders,
  // as communicator ranks.
  Links l = links_of(tree, g.my_node, g.nnodes(), g.node_of(a.root));
  if (tree == LeaderTree::Binomial)
    std::reverse(l.children.begin(), l.children.end());  // largest subtree first
  const int parent = l.parent >= 0 ? leaders[static_cast<size_t>(l.parent)] : -1;
  if (parent >= 0) {
    b.recv(parent, seg(0), seg_bytes(0));
    b.end_round();
  }
  for (size_t s = 0; s < segments; ++s) {
    // Segment s into the slot, to the children and to the node; segment
    // s+1 arrives meanwhile.
    b.begin_mixed_round();
    if (node_ranks > 1) b.copy(node_slot(b, b.begin_shm_chunk(), leader_local, slot), seg(s), seg_bytes(s));
    for (int child : l.children) b.send(leaders[static_cast<size_t>(child)], seg(s), seg_bytes(s));
    if (parent >= 0 && s + 1 < segments) b.recv(parent, seg(s + 1), seg_bytes(s + 1));
    append_signal_then_wait(b, node);
    b.end_round();
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
