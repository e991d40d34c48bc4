// barrier "leader_shm": node-aware like "leader", with the fan-in and
// fan-out inside each node as flags in the node's shared segment.
//   Steps:    1. inside each node, every rank signals its leader (the
//                node's first rank), which waits for all of them: one
//                round of flags;
//             2. dissemination among the leaders (zero-byte messages);
//             3. inside each node, the leader signals every rank.
//   Cost, N nodes of L ranks: 2 flag transfers (~0.2-1 us each; the
//             leader's L-1 waits overlap) + ceil(log2 N) alpha_out, against
//             2 ceil(log2 L) alpha_in of messages for "leader".
//   Any rank count and topology; see node_shm.hpp for what the segment
//   must hold. On one node it is a fan-in and fan-out through rank 0.
#include "algos/dissemination.hpp"
#include "algos/node_groups.hpp"
#include "algos/node_shm.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const NodeGroups g = node_groups_of(b.topology(), b.comm_rank());
  const std::vector<int>& mine = g.my_node_ranks();
  const bool leader = mine.front() == b.comm_rank();
  if (mine.size() > 1) {
    auto in_node = b.within(mine);
    append_node_reduce_to(b, 0, input(), output(), 0, 0);
  }
  if (leader && g.nnodes() > 1) {
    std::vector<int> leaders;
    for (const std::vector<int>& node : g.ranks_of_node()) leaders.push_back(node.front());
    auto across = b.within(leaders);
    append_dissemination(b);
  }
  if (mine.size() > 1) {
    auto in_node = b.within(mine);
    append_node_bcast_from(b, 0, output(), 0, 0);
  }
}

}  // namespace

extern const Algorithm kBarrierLeaderShm{
    "leader_shm", Collective::Barrier,
    "node-aware: flags to one leader per node through the shared segment, dissemination among "
    "the leaders, flags back",
    refuse_node_shm, build};

}  // namespace tutti::algos
