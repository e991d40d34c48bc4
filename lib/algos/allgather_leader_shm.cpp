// allgather "leader_shm": node-aware like "leader" (one leader per node, its
// first rank), with the phases inside each node through the node's shared
// segment instead of messages.
//   Steps:    1. inside each node, every rank but the leader copies its
//                block into its slot; the node synchronises; the leader
//                copies the blocks to their places in its output (blocks
//                larger than a slot go in slot-sized pieces, one
//                synchronisation each);
//             2. the leaders exchange their nodes' blocks, each with every
//                other, all posted at once (as "leader": one message per
//                pair of nodes where a node's ranks are numbered
//                consecutively);
//             3. inside each node the leader hands the whole output to the
//                others: in its flag lines where it fits, else chunk by
//                chunk through its slot, each chunk fully synchronised
//                (node_shm.hpp).
//   Scratch:  none (blocks land at their place in the output).
//   Cost, N nodes of L ranks, P = N L, blocks of m bytes:
//             a synchronisation and (L-1) m copied in and out (step 1)
//           + alpha_out + (N-1) L m beta_out (step 2)
//           + per chunk of the P m output a synchronisation and L copies
//             (step 3), against ceil(log2 L) (alpha_in + P m beta_in) of
//             messages for "leader".
//   Any rank count, count and topology; see node_shm.hpp for what the
//   segment must hold. On one node it is a gather to rank 0 and a
//   broadcast, through the segment.
#include <algorithm>

#include "algos/between_leaders.hpp"
#include "algos/node_groups.hpp"
#include "algos/node_shm.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t m = a.count * b.elem_size();
  const size_t all = m * static_cast<size_t>(b.nranks());
  const int me = b.comm_rank();
  const size_t slot = node_slot_bytes(a, b.topology());
  const NodeGroups g = node_groups_of(b.topology(), me);
  const std::vector<int>& mine = g.my_node_ranks();
  const int leader = mine.front();
  auto block = [m](int rank) { return output(static_cast<size_t>(rank) * m); };

  if (!a.in_place) b.copy(block(me), input(), m);
  if (mine.size() > 1) {
    auto in_node = b.within(mine);
    b.note_slot_area(mine.size() * slot);
    for (size_t off = 0; off < m; off += slot) {
      const size_t c = std::min(slot, m - off);
      const int parity = b.begin_shm_chunk();
      if (me != leader) b.copy(node_slot(b, parity, b.rank(), slot), block(me) + off, c);
      append_shm_sync_all(b);
      if (me == leader)
        for (size_t i = 1; i < mine.size(); ++i)
          b.copy(block(mine[i]) + off, node_slot(b, parity, static_cast<int>(i), slot), c);
    }
  }

  if (me == leader && g.nnodes() > 1) append_leaders_exchange_blocks(b, g, m);

  if (mine.size() > 1) {
    auto in_node = b.within(mine);
    append_node_bcast(b, 0, output(), all, slot);
  }
}

}  // namespace

extern const Algorithm kAllgatherLeaderShm{
    "leader_shm", Collective::Allgather,
    "node-aware, one leader per node: gather to the leaders through each node's shared segment, "
    "one exchange between every pair of leaders, broadcast through the segment",
    refuse_node_shm, build};

}  // namespace tutti::algos
