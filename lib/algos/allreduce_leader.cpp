// allreduce "leader": node-aware with one leader per node, for small
// vectors, where the number of messages between nodes is what counts.
//   Steps:    1. inside each node, binomial reduce to the node's first rank
//                (its leader), pipelined in segments;
//             2. the leaders (one per node) allreduce: recursive doubling,
//                or for large vectors a ring (append_allreduce_across_nodes);
//             3. inside each node, binomial broadcast from the leader.
//   Results:  computed by the leaders, bitwise identical everywhere
//             (each element reduced once, or lower op upper on both ends).
//   Cost, N nodes of L ranks, n bytes:
//             2 ceil(log2 L) (alpha_in + n beta_in) + log2(N) (alpha_out +
//             n beta_out + n gamma) (+2 alpha_out + 2 n beta_out to fold a
//             non-power-of-two N). Only log2(N) messages cross between
//             nodes per leader, against log2(P) for flat recursive doubling,
//             every one of which may cross.
//   Any rank count, count, topology and op; on one node it is a tree
//   allreduce.
#include <algorithm>

#include "algos/across_nodes.hpp"
#include "algos/binomial.hpp"
#include "algos/binomial_reduce.hpp"
#include "algos/node_groups.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t n = a.count * b.elem_size();
  const NodeGroups g = node_groups_of(b.topology(), b.comm_rank());
  {
    auto in_node = b.within(g.my_node_ranks());
    if (b.nranks() == 1) {
      b.copy(output(), input(), n);
    } else {
      const BinomialTree tree{b.rank(), b.nranks(), 0};
      const size_t segment = binomial_reduce_segment_bytes(b);
      const BufRef landing = tree.children().empty() ? output() : b.scratch(std::min(segment, n));
      append_binomial_reduce(b, tree, input(), output(), landing, n, segment);
    }
  }
  if (g.my_local == 0) {
    auto leaders = b.within(g.rail(0));
    append_allreduce_across_nodes(b, output(), a.count);
  }
  auto in_node = b.within(g.my_node_ranks());
  if (b.nranks() > 1)
    append_binomial_bcast(b, BinomialTree{b.rank(), b.nranks(), 0}, output(), n,
                          binomial_segment_bytes(b));
}

}  // namespace

extern const Algorithm kAllreduceLeader{
    "leader", Collective::Allreduce,
    "node-aware, one leader per node: reduce to the leaders, allreduce between them (recursive "
    "doubling, or a ring for large vectors), broadcast in each node",
    accept_all, build};

}  // namespace tutti::algos
