// bcast "leader_shm": node-aware like "leader" (one leader per node: the
// root on its node, the first rank on every other node), with the phase
// inside each node through the node's shared segment.
//   Steps:    1. the leaders broadcast between nodes: binomial tree from the
//                root, pipelined in segments (params.chunk_bytes);
//             2. inside each node the leader hands the vector to the others:
//                in its signals' flag lines up to 384 bytes (on up to 16
//                ranks a node), else chunk by chunk through its slot, each
//                chunk fully synchronised (node_shm.hpp).
//   Scratch:  none.
//   Cost, N nodes of L ranks, n bytes:
//             ceil(log2 N) (alpha_out + n beta_out)
//           + a flag transfer (small), or per chunk a synchronisation and
//             L copies of the chunk (the leader's in, each other rank's
//             out), against ceil(log2 L) (alpha_in + n beta_in) of messages
//             for "leader".
//   Any rank count, count, topology and root; see node_shm.hpp for what the
//   segment must hold. On one node it is a broadcast through the segment.
#include "algos/binomial.hpp"
#include "algos/node_groups.hpp"
#include "algos/node_shm.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t n = a.count * b.elem_size();
  const NodeGroups g = node_groups_of(b.topology(), b.comm_rank());
  const std::vector<int> leaders = g.leaders_for_root(a.root);
  const int my_leader = leaders[static_cast<size_t>(g.my_node)];
  if (b.comm_rank() == my_leader && g.nnodes() > 1) {
    auto between_nodes = b.within(leaders);
    append_binomial_bcast(b, BinomialTree{b.rank(), b.nranks(), g.node_of(a.root)}, output(), n,
                          binomial_segment_bytes(b));
  }
  if (g.my_node_ranks().size() > 1) {
    auto in_node = b.within(g.my_node_ranks());
    append_node_bcast(b, g.local_index_of(my_leader), output(), n, node_slot_bytes(a, b.topology()));
  }
}

}  // namespace

extern const Algorithm kBcastLeaderShm{
    "leader_shm", Collective::Bcast,
    "node-aware, one leader per node: binomial tree between the nodes' leaders, then through "
    "each node's shared segment",
    refuse_node_shm, build};

}  // namespace tutti::algos
