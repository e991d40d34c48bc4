// allreduce "hierarchical": node-aware and data-partitioned (multi-leader):
// every rank of a node drives one slice of the vector across the nodes, so
// all of a node's links to the network work at once and each byte crosses
// between nodes once per direction (the design of NCCL's tree/ring split
// and of UCC's and HAN's hierarchies).
//   Lanes:    L = the fewest ranks any node holds. The vector is cut into L
//             slices; local rank i < L of every node owns slice i. A node's
//             extra ranks (local index >= L) first hand their vector to
//             local rank (index mod L), which reduces it in, and get the
//             result back at the end.
//   Steps:    1. inside each node, ring reduce-scatter over the L lanes:
//                local rank i holds its node's sum of slice i;
//             2. across nodes, on each rail (local rank i of every node):
//                allreduce of slice i (append_allreduce_across_nodes: ring
//                or recursive doubling, whichever costs less);
//             3. inside each node, ring allgather of the slices.
//   Results:  each element is reduced once, by its owner, then copied:
//             bitwise identical on every rank.
//   Cost, N nodes of L ranks, n bytes, alpha/beta per link:
//             2(L-1) alpha_in + 2 (L-1)/L n beta_in            (steps 1, 3)
//           + 2(N-1) alpha_out + 2 (N-1)/N (n/L) beta_out      (step 2, ring)
//           or log2(N) (alpha_out + (n/L) beta_out)             (step 2, small)
//           + n/L gamma per node. Against a flat ring, the bytes between
//             nodes drop from 2 (P-1)/P n per rank on every inter-node hop
//             to n/L per rank, and the latency from 2(P-1) to 2(N-1) hops.
//   Any rank count, count, topology (uneven nodes, ranks not numbered by
//   node) and op; on one node it is a ring allreduce.
#include "algos/across_nodes.hpp"
#include "algos/node_groups.hpp"
#include "algos/registry.hpp"
#include "algos/ring.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t es = b.elem_size(), n = a.count * es;
  const size_t chunk = chunk_bytes_of(b);
  const NodeGroups g = node_groups_of(b.topology(), b.comm_rank());
  const std::vector<int>& node = g.my_node_ranks();
  const int lanes = g.min_ranks_per_node;
  const int local = g.my_local;
  b.copy(output(), input(), n);
  if (local >= lanes) {  // an extra rank: its lane's rank works for it
    auto in_node = b.within(node);
    b.send(local % lanes, output(), n, chunk);
    b.end_round();
    b.recv(local % lanes, output(), n, chunk);
    return;
  }
  std::vector<int> extras;
  for (int e = local + lanes; e < static_cast<int>(node.size()); e += lanes) extras.push_back(e);
  if (!extras.empty()) {
    auto in_node = b.within(node);
    const BufRef landing = b.scratch(n);
    for (int e : extras) {
      b.recv_reduce(e, output(), output(), landing, n, chunk);
      b.end_round();
    }
  }

  const BlockPartition slices = aligned_blocks(a.count, lanes, b.elem_size());
  const std::vector<int> lane_ranks = g.first_local_ranks(lanes);  // of this node
  {
    auto lanes_of_node = b.within(lane_ranks);
    append_ring_reduce_scatter_inplace(b, slices, output());
  }
  {
    auto rail = b.within(g.rail(local));
    append_allreduce_across_nodes(b, output(slices.offset(local) * es), slices.size(local));
  }
  {
    auto lanes_of_node = b.within(lane_ranks);
    append_ring_allgather(b, slices, output());
  }
  if (!extras.empty()) {
    auto in_node = b.within(node);
    for (int e : extras) b.send(e, output(), n, chunk);
  }
}

}  // namespace

extern const Algorithm kAllreduceHierarchical{
    "hierarchical", Collective::Allreduce,
    "node-aware: reduce-scatter in each node, allreduce of each slice across nodes by all "
    "local ranks at once, allgather in each node",
    accept_all, build};

}  // namespace tutti::algos
