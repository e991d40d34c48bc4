// allgather "leader": node-aware, one leader per node (its first rank), for
// small and mid-size blocks, where the number of messages between nodes is
// what counts.
//   Steps:    1. inside each node, every rank sends its block to the leader,
//                which puts it at the sender's place in the output;
//             2. the leaders exchange their nodes' blocks, each with every
//                other, all posted at once: one message per pair of nodes
//                where a node's ranks are numbered consecutively (mpirun's
//                default), else one per run of consecutive ranks;
//             3. inside each node, binomial broadcast of the whole output
//                from the leader, pipelined in segments.
//   Scratch:  none (blocks land at their place in the output).
//   Cost, N nodes of L ranks, P = N L, blocks of m bytes:
//             (alpha_in + (L-1) m beta_in) + (alpha_out + (N-1) L m beta_out)
//             + ceil(log2 L) (alpha_in + P m beta_in).
//             Each node sends N-1 messages to other nodes, in one round,
//             against P-1 rounds for the ring (each as slow as its
//             inter-node link) and log2(P) for recursive doubling, every
//             round of which may cross between nodes.
//   Any rank count, count and topology (uneven nodes, any rank order); on
//   one node it is a gather to rank 0 and a broadcast.
#include "algos/binomial.hpp"
#include "algos/between_leaders.hpp"
#include "algos/node_groups.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t m = a.count * b.elem_size();
  const size_t all = m * static_cast<size_t>(b.nranks());
  const int me = b.comm_rank();
  const NodeGroups g = node_groups_of(b.topology(), me);
  const std::vector<int>& mine = g.my_node_ranks();
  const int leader = mine.front();
  auto block = [m](int rank) { return output(static_cast<size_t>(rank) * m); };

  if (!a.in_place) b.copy(block(me), input(), m);
  if (me == leader) {
    for (size_t i = 1; i < mine.size(); ++i) b.recv(mine[i], block(mine[i]), m);
  } else {
    b.send(leader, block(me), m);
  }
  b.end_round();

  if (me == leader && g.nnodes() > 1) append_leaders_exchange_blocks(b, g, m);

  if (mine.size() > 1) {
    auto in_node = b.within(mine);
    append_binomial_bcast(b, BinomialTree{b.rank(), b.nranks(), 0}, output(), all,
                          binomial_segment_bytes(b));
  }
}

}  // namespace

extern const Algorithm kAllgatherLeader{
    "leader", Collective::Allgather,
    "node-aware, one leader per node: gather to the leaders, one exchange between every pair of "
    "leaders, broadcast in each node",
    accept_all, build};

}  // namespace tutti::algos
