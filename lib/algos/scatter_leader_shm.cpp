// scatter "leader_shm": node-aware, one leader per node (the root on its
// node, the first rank on every other node), the phase inside each node
// through the node's shared segment.
//   Steps:    1. the root sends each other node's leader that node's blocks,
//                all posted at once (one message per run of consecutively
//                numbered ranks: one per node under mpirun's default
//                numbering);
//             2. inside each node the leader hands every rank its block: in
//                its signals' flag lines where a block fits, else chunk by
//                chunk through each rank's slot, each chunk fully
//                synchronised (node_shm.hpp).
//   Scratch:  L m on the leaders other than the root.
//   Cost, N nodes of L ranks, blocks of m bytes:
//             alpha_out + (N-1) L m beta_out at the root
//           + a flag transfer, or per chunk a synchronisation and the
//             chunk copied in by the leader and out by each rank;
//             against "tree"'s ceil(log2 P) rounds, most of them between
//             nodes where ranks are numbered node by node.
//   Any rank count, count, topology and root; in place at the root. The
//   root talks to every node's leader directly: for the few to tens of
//   nodes the rules choose it on, not for thousands.
#include "algos/node_groups.hpp"
#include "algos/node_shm.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t m = a.count * b.elem_size();
  const int me = b.comm_rank();
  const NodeGroups g = node_groups_of(b.topology(), me);
  const std::vector<int> leaders = g.leaders_for_root(a.root);
  const std::vector<int>& mine = g.my_node_ranks();
  const int my_leader = leaders[static_cast<size_t>(g.my_node)];
  auto at = [m](BufRef base, int index) { return base + static_cast<size_t>(index) * m; };

  // Where the leader finds local rank q's block.
  std::function<BufRef(int)> block;
  if (me == a.root) {
    if (!a.in_place) b.copy(output(), at(input(), me), m);
    for (int node = 0; node < g.nnodes(); ++node) {
      if (node == g.my_node) continue;
      const int peer = leaders[static_cast<size_t>(node)];
      for_each_run(g.ranks_of_node()[static_cast<size_t>(node)], [&](int first, int count, int) {
        b.send(peer, at(input(), first), static_cast<size_t>(count) * m);
      });
    }
    block = [&](int q) { return at(input(), mine[static_cast<size_t>(q)]); };
  } else if (me == my_leader) {
    const BufRef pack = b.scratch(mine.size() * m);
    for_each_run(mine, [&](int, int count, int offset) {
      b.recv(a.root, at(pack, offset), static_cast<size_t>(count) * m);
    });
    b.copy(output(), at(pack, g.my_local), m);
    block = [&, pack](int q) { return at(pack, q); };
  }
  if (mine.size() > 1) {
    auto in_node = b.within(mine);
    append_node_scatter(b, g.local_index_of(my_leader), block, output(), m,
                        node_slot_bytes(a, b.topology()));
  }
}

}  // namespace

extern const Algorithm kScatterLeaderShm{
    "leader_shm", Collective::Scatter,
    "node-aware, one leader per node: the root sends each node's blocks to its leader, which "
    "hands them out through the node's shared segment",
    refuse_node_shm, build};

}  // namespace tutti::algos
