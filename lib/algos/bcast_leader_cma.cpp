// bcast "leader_cma": node-aware like "leader_shm" (one leader per node:
// the root on its node, the first rank on every other node), with the
// phase inside each node by single copies: every other rank of the node
// reads the vector straight from its leader's buffer (cross-memory attach).
//   Steps:    1. the leaders broadcast between nodes: binomial tree from the
//                root, pipelined in segments (binomial_segment_bytes);
//             2. inside each node the leader publishes its buffer (flags),
//                each other rank copies the vector from it and signals the
//                leader, which returns once all have read.
//   Scratch:  none; shared: flag lines only.
//   Cost, N nodes of L ranks, n bytes:
//             ceil(log2 N) (alpha_out + n beta_out)
//           + 2 flag rounds + n / copy bandwidth (the L-1 readers at once),
//             against "leader_shm"'s L copies of n (the leader's in, each
//             other rank's out): one copy of the vector per reader where the
//             segment needs two, which is what counts where ranks share
//             cores or memory bandwidth.
//   Any rank count, count, topology and root.
#include "algos/cma_common.hpp"
#include "algos/leader_trees.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const size_t n = b.args().count * b.elem_size();
  if (n == 0) return;
  const NodeLeader nl = append_bcast_between_leaders(b, LeaderTree::Binomial);
  const NodeGroups& g = nl.groups;
  if (g.my_node_ranks().size() > 1) {
    auto in_node = b.within(g.my_node_ranks());
    const int leader = g.local_index_of(nl.leader);
    append_all_read_root(b, leader, [&] { b.peer_read(leader, output(), output(), n); });
  }
}

}  // namespace

extern const Algorithm kBcastLeaderCma{
    "leader_cma", Collective::Bcast,
    "node-aware, one leader per node: binomial tree between the nodes' leaders, then every rank "
    "of a node copies the vector straight from its leader's buffer (one copy)",
    refuse_node_cma, build};

}  // namespace tutti::algos
