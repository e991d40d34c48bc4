// reduce "binary_leader_shm": "leader_shm" for many nodes and large
// vectors: one leader per node (the root on its node, the first rank on
// every other node), each node's vectors reduced to its leader through the
// node's shared segment, then a pipelined binary tree between the leaders
// instead of a binomial one.
//   Steps:    1. inside each node, as "leader_shm" (append_node_reduce);
//             2. the leaders reduce between nodes: binary tree to the root's
//                node (patterns.hpp BinaryTree), pipelined in segments
//                (binomial_reduce.hpp). The root finalizes (avg).
//   Scratch:  the vector on leaders other than the root (the node's
//             partial result); a landing segment on leaders that receive.
//   Cost, N nodes of L ranks, n bytes in S segments:
//             the phase inside the node, as "leader_shm"
//           + about 2 (S + floor(log2 N)) (alpha_out + n/S (beta_out +
//             gamma)): each leader receives the vector at most twice
//             between nodes, where "leader_shm"'s root receives it
//             ceil(log2 N) times; for one segment twice its latency.
//   Any rank count, count, topology and root; every op. See node_shm.hpp
//   for what the segment must hold.
#include "algos/leader_trees.hpp"
#include "algos/node_shm.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) { append_leader_shm_reduce(b, LeaderTree::Binary); }

}  // namespace

extern const Algorithm kReduceBinaryLeaderShm{
    "binary_leader_shm", Collective::Reduce,
    "node-aware, one leader per node: through each node's shared segment to its leader, then a "
    "pipelined binary tree between the leaders to the root",
    refuse_node_shm, build};

}  // namespace tutti::algos
