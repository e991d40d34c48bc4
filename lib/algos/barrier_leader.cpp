// barrier "leader": node-aware, one leader per node (its first rank), so
// that only the leaders' rounds cross between nodes.
//   Steps:    1. inside each node, binomial fan-in of zero-byte signals to
//                the leader;
//             2. dissemination among the leaders (round k: leader i signals
//                leader i + 2^k and waits for leader i - 2^k);
//             3. inside each node, binomial fan-out from the leader.
//   Messages: zero bytes. Scratch: none.
//   Cost, N nodes of L ranks: 2 ceil(log2 L) alpha_in + ceil(log2 N) alpha_out,
//             against ceil(log2 (N L)) rounds for flat dissemination, each
//             of which may cross between nodes (on 2 x 2 both of its two
//             rounds do; here one round does).
//   Any rank count and topology (uneven nodes, any rank order); on one
//   node it is a fan-in and fan-out through rank 0.
#include "algos/dissemination.hpp"
#include "algos/node_groups.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

// Binomial fan-in to position 0 of the current group: position i waits for
// i + 2^k while bit k of i is clear, then signals i - 2^k at its lowest set
// bit.
void append_fan_in(ScheduleBuilder& b) {
  const int n = b.nranks(), i = b.rank();
  for (int mask = 1; mask < n; mask <<= 1) {
    if (i & mask) {
      b.signal(i - mask);
      b.end_round();
      return;
    }
    if (i + mask < n) {
      b.wait_signal(i + mask);
      b.end_round();
    }
  }
}

// The mirror image: position i waits for its parent (i minus its lowest set
// bit), then signals its children, largest subtree first.
void append_fan_out(ScheduleBuilder& b) {
  const int n = b.nranks(), i = b.rank();
  int mask = 1;
  while (mask < n) mask <<= 1;
  if (i != 0) {
    mask = i & -i;
    b.wait_signal(i - mask);
    b.end_round();
  }
  for (mask >>= 1; mask >= 1; mask >>= 1)
    if (i + mask < n) b.signal(i + mask);
  b.end_round();
}

void build(ScheduleBuilder& b) {
  const NodeGroups g = node_groups_of(b.topology(), b.comm_rank());
  const std::vector<int>& mine = g.my_node_ranks();
  const bool leader = mine.front() == b.comm_rank();

  if (mine.size() > 1) {
    auto in_node = b.within(mine);
    append_fan_in(b);
  }
  if (leader && g.nnodes() > 1) {
    std::vector<int> leaders;
    for (const std::vector<int>& node : g.ranks_of_node()) leaders.push_back(node.front());
    auto across = b.within(leaders);
    append_dissemination(b);
  }
  if (mine.size() > 1) {
    auto in_node = b.within(mine);
    append_fan_out(b);
  }
}

}  // namespace

extern const Algorithm kBarrierLeader{
    "leader", Collective::Barrier,
    "node-aware: binomial fan-in to one leader per node, dissemination among the leaders, "
    "binomial fan-out",
    accept_all, build};

}  // namespace tutti::algos
