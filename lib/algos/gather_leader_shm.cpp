// gather "leader_shm": node-aware, one leader per node (the root on its
// node, the first rank on every other node), the phase inside each node
// through the node's shared segment; the mirror of scatter "leader_shm".
//   Steps:    1. inside each node every rank hands its block to the leader:
//                in its signals' flag lines where a block fits, else chunk
//                by chunk through its slot, each chunk fully synchronised
//                (node_shm.hpp);
//             2. each other node's leader sends its node's blocks to the
//                root, which receives them all at once straight into its
//                output (one message per run of consecutively numbered
//                ranks: one per node under mpirun's default numbering).
//   Scratch:  L m on the leaders other than the root.
//   Cost, N nodes of L ranks, blocks of m bytes:
//             a flag transfer, or per chunk a synchronisation and the chunk
//             copied in by each rank and out by the leader
//           + alpha_out + (N-1) L m beta_out at the root (incast);
//             against "tree"'s ceil(log2 P) rounds, most of them between
//             nodes where ranks are numbered node by node.
//   Any rank count, count, topology and root; in place at the root. For
//   the few to tens of nodes the rules choose it on (the root hears from
//   every node's leader directly).
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

  // Where the leader puts local rank q's block: the root straight into its
  // output, another leader into scratch, with its own block.
  std::function<BufRef(int)> block;
  BufRef pack = output();
  if (me == a.root) {
    if (!a.in_place) b.copy(at(output(), me), input(), m);
    block = [&](int q) { return at(output(), mine[static_cast<size_t>(q)]); };
  } else if (me == my_leader) {
    pack = b.scratch(mine.size() * m);
    b.copy(at(pack, g.my_local), input(), m);
    block = [&](int q) { return at(pack, q); };
  }
  if (mine.size() > 1) {
    auto in_node = b.within(mine);
    append_node_gather(b, g.local_index_of(my_leader), input(), block, m,
                       node_slot_bytes(a, b.topology()));
  }

  if (me == a.root) {
    for (int node = 0; node < g.nnodes(); ++node) {
      if (node == g.my_node) continue;
      const int peer = leaders[static_cast<size_t>(node)];
      for_each_run(g.ranks_of_node()[static_cast<size_t>(node)], [&](int first, int count, int) {
        b.recv(peer, at(output(), first), static_cast<size_t>(count) * m);
      });
    }
  } else if (me == my_leader) {
    for_each_run(mine, [&](int, int count, int offset) {
      b.send(a.root, at(pack, offset), static_cast<size_t>(count) * m);
    });
  }
}

}  // namespace

extern const Algorithm kGatherLeaderShm{
    "leader_shm", Collective::Gather,
    "node-aware, one leader per node: each node's blocks through its shared segment to its "
    "leader, which sends them to the root in one message",
    refuse_node_shm, build};

}  // namespace tutti::algos
