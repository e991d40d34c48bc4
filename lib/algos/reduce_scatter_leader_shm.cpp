// reduce_scatter "leader_shm": node-aware like "leader" (one leader per
// node, its first rank), with the phases inside each node through the
// node's shared segment instead of messages. Rank r's result is block r
// of the reduced vector.
//   Steps:    1. inside each node the others hand the whole vector to the
//                leader, which reduces them (node_shm.hpp: in the flag
//                lines where it fits, else chunk by chunk through the
//                slots, each chunk fully synchronised);
//             2. the leaders exchange partial sums, each with every other,
//                all posted at once, and reduce in node order (as "leader");
//             3. the leader finalizes (avg) its node's blocks and hands each
//                rank its block: in a flag line where it fits, else through
//                the rank's slot.
//   Scratch:  on leaders the whole vector, (N-1) x their node's blocks and
//             one node's blocks; (L-1) P m for a vector in the flag lines.
//   Cost, N nodes of L ranks, P = N L, blocks of m bytes (vector P m):
//             per chunk of the vector a synchronisation, (L-1) copies in and
//             (L-1) chunks of reduction at the leader
//           + (alpha_out + (N-1) L m beta_out) + (N-1) L m gamma
//           + a synchronisation and (L-1) m copied in and out;
//             against ceil(log2 L) (alpha_in + P m beta_in + P m gamma) and
//             alpha_in + (L-1) m beta_in of messages for "leader".
//   Any rank count, count, op and topology; see node_shm.hpp for what the
//   segment must hold.
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
  const size_t total = m * static_cast<size_t>(b.nranks());
  const int me = b.comm_rank();
  const NodeGroups g = node_groups_of(b.topology(), me);
  const std::vector<int>& mine = g.my_node_ranks();
  const int leader = mine.front();
  const bool is_leader = me == leader;
  auto at = [m](BufRef base, int rank) { return base + static_cast<size_t>(rank) * m; };

  // 1. The node's sum on the leader, in `work` (scratch: the input is
  //    read-only, and in place it is the output buffer).
  const size_t slot = node_slot_bytes(a, b.topology());
  BufRef work = input();
  if (is_leader) work = b.scratch(total);
  if (mine.size() == 1) {
    b.copy(work, input(), total);
  } else {
    auto in_node = b.within(mine);
    append_node_reduce(b, 0, input(), work, total, slot);
  }

  if (is_leader) {
    // 2. Partial sums between the leaders.
    if (g.nnodes() > 1) append_leaders_reduce_partial_sums(b, g, work, m);
    // 3. Every rank of the node gets its block.
    for (int r : mine) b.finalize(at(work, r), m);
    b.copy(output(), at(work, me), m);
  }
  if (mine.size() > 1) {
    auto in_node = b.within(mine);
    append_node_scatter(
        b, 0, [&](int q) { return at(work, mine[static_cast<size_t>(q)]); }, output(), m, slot);
  }
}

}  // namespace

extern const Algorithm kReduceScatterLeaderShm{
    "leader_shm", Collective::ReduceScatter,
    "node-aware, one leader per node: through each node's shared segment to its leader, one "
    "exchange of partial sums between every pair of leaders, each rank's block back through the "
    "segment",
    refuse_node_shm, build};

}  // namespace tutti::algos
