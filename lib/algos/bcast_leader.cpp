// bcast "leader": node-aware, one leader per node (the root on its node,
// the first rank on every other node).
//   Steps:    1. the leaders broadcast between nodes: binomial tree from the
//                root, pipelined in segments;
//             2. inside each node, binomial broadcast from its leader,
//                pipelined in segments.
//   Segments: params.chunk_bytes (default 256 KiB), in both steps.
//   Scratch:  none (everything moves in the output).
//   Cost, N nodes of L ranks, n bytes, unpipelined:
//             ceil(log2 N) (alpha_out + n beta_out) +
//             ceil(log2 L) (alpha_in + n beta_in).
//             Exactly N-1 messages of n bytes cross between nodes, against
//             up to P-1 for the flat tree (whose edges ignore the nodes).
//   Any rank count, count, topology and root; on one node it is the tree.
#include "algos/binomial.hpp"
#include "algos/leader_trees.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const NodeLeader nl = append_bcast_between_leaders(b, LeaderTree::Binomial);
  const NodeGroups& g = nl.groups;
  if (g.my_node_ranks().size() > 1) {
    auto in_node = b.within(g.my_node_ranks());
    append_binomial_bcast(b, BinomialTree{b.rank(), b.nranks(), g.local_index_of(nl.leader)},
                          output(), b.args().count * b.elem_size(), binomial_segment_bytes(b));
  }
}

}  // namespace

extern const Algorithm kBcastLeader{
    "leader", Collective::Bcast,
    "node-aware, one leader per node: binomial tree between the nodes' leaders, then a binomial "
    "tree in each node",
    accept_all, build};

}  // namespace tutti::algos
