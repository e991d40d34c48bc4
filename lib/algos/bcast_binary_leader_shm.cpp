// bcast "binary_leader_shm": "leader_shm" for many nodes and large vectors:
// one leader per node (the root on its node, the first rank on every other
// node), a pipelined binary tree between the leaders instead of a binomial
// one, then each node's shared segment.
//   Steps:    1. the leaders broadcast between nodes: binary tree from the
//                root's node (patterns.hpp BinaryTree), pipelined in segments
//                (binomial_segment_bytes);
//             2. inside each node the leader hands the vector to the others
//                through the segment (append_node_bcast). One after the
//                other, unlike "leader_shm" (leader_trees.cpp says why).
//   Scratch:  none.
//   Cost, N nodes of L ranks, n bytes in S segments:
//             about 2 (S + floor(log2 N)) (alpha_out + n/S beta_out): each
//             leader sends the vector at most twice between nodes, where
//             "leader_shm"'s root leader sends it ceil(log2 N) times (at
//             2,048 nodes, 8 MiB: 11 times); for one segment twice its
//             latency;
//           + the phase inside the node, as "leader_shm".
//   Any rank count, count, topology and root; see node_shm.hpp for what the
//   segment must hold.
#include "algos/leader_trees.hpp"
#include "algos/node_shm.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) { append_leader_shm_bcast(b, LeaderTree::Binary); }

}  // namespace

extern const Algorithm kBcastBinaryLeaderShm{
    "binary_leader_shm", Collective::Bcast,
    "node-aware, one leader per node: pipelined binary tree between the nodes' leaders, then "
    "through each node's shared segment",
    refuse_node_shm, build};

}  // namespace tutti::algos
