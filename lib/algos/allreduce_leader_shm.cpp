// allreduce "leader_shm": node-aware with one leader per node, like
// "leader", with the phases inside each node through the node's shared
// segment instead of messages: for small vectors, where the number of
// steps counts, not the bytes.
//   Steps, per chunk (as much of the vector as one slot holds; see
//   node_shm.hpp):
//             1. fan-in: every rank but the node's first (its leader) hands
//                its chunk over and signals the leader: in the signal's flag
//                lines where it fits (up to 384 bytes on up to 16 ranks a
//                node), else in its slot;
//             2. the leader reduces the node's chunks in local rank order
//                and allreduces the result with the other nodes' leaders
//                (append_allreduce_across_nodes: recursive doubling, or a
//                ring for large vectors);
//             3. fan-out: the leader hands the result to the node's other
//                ranks, in the flag lines or in its slot, and signals each.
//   Results:  computed by the leaders, bitwise identical everywhere.
//   Cost, N nodes of L ranks, n bytes:
//             2 (L-1) flags (a cache-line transfer each, ~0.2-1 us; the
//             leader's waits overlap) + (L-1) n gamma at the leader
//           + log2(N) (alpha_out + n beta_out + n gamma) between leaders;
//             in slots, 2 n copies more per rank. Against "leader", whose
//             binomial trees take 2 ceil(log2 L) message steps of a few
//             microseconds each inside the node.
//   Fan-in and fan-out (node_shm.cpp) need no full synchronisation: the
//   leader reads the slots of a fan-in before it signals the fan-out, and
//   a rank writes its next fan-in only after that fan-out; the leader
//   writes its next fan-out only after every rank's next fan-in, sent
//   after it copied the last result out.
//   Any rank count, count, topology and op; see node_shm.hpp for what the
//   segment must hold. On one node it is a reduce-and-broadcast through
//   the segment.
#include <algorithm>

#include "algos/across_nodes.hpp"
#include "algos/node_groups.hpp"
#include "algos/node_shm.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

constexpr int kLeader = 0;  // local index of the node's leader

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t es = b.elem_size(), n = a.count * es;
  const size_t slot = node_slot_bytes(a, b.topology());
  const NodeGroups g = node_groups_of(b.topology(), b.comm_rank());
  const std::vector<int>& node = g.my_node_ranks();
  const int node_ranks = static_cast<int>(node.size());
  if (node_ranks > 1 && n > SharedSegment::carry_bytes(node_ranks))
    b.note_slot_area(static_cast<size_t>(node_ranks) * slot);
  for (size_t off = 0; off < n; off += slot) {
    const size_t c = std::min(slot, n - off);
    if (node_ranks == 1) {
      b.copy(output(off), input(off), c);
    } else {
      auto in_node = b.within(node);
      append_node_reduce_to(b, kLeader, input(off), output(off), c, slot);
    }
    if (g.my_local == kLeader) {
      auto leaders = b.within(g.rail(kLeader));
      append_allreduce_across_nodes(b, output(off), c / es);
    }
    if (node_ranks > 1) {
      auto in_node = b.within(node);
      append_node_bcast_from(b, kLeader, output(off), c, slot);
    }
  }
}

}  // namespace

extern const Algorithm kAllreduceLeaderShm{
    "leader_shm", Collective::Allreduce,
    "node-aware, one leader per node: the node's vectors to its leader through the shared "
    "segment, allreduce between the leaders, the result back through the segment",
    refuse_node_shm, build};

}  // namespace tutti::algos
