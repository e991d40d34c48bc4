// bcast "leader_shm": node-aware like "leader" (one leader per node: the
// root on its node, the first rank on every other node), with the phase
// inside each node through the node's shared segment.
//   Steps:    a vector that fits the flag lines (384 bytes on up to 16
//             ranks a node), or a job of one node: 1. the leaders broadcast
//             between nodes (binomial tree from the root, pipelined in
//             segments); 2. each leader hands it to its node in its
//             signals.
//             Larger: both phases at once, in segments of one slot
//             (params.chunk_bytes, capped by the segment): in one round a
//             leader copies segment s into its slot, sends it to its
//             children in the tree, receives segment s+1 from its parent
//             and synchronises its node, whose ranks copy segment s out
//             (mixed rounds, engine/schedule.hpp). The network carries
//             segment s+1 while the node copies segment s.
//   Scratch:  none.
//   Cost, N nodes of L ranks, n bytes in S segments:
//             small: ceil(log2 N) alpha_out + a flag transfer;
//             large: about (S + ceil(log2 N) - 1) rounds of
//             max(alpha_out + (n/S) beta_out per child, a synchronisation
//             and two copies of n/S in the node), against the sum of the
//             two phases when they ran one after the other (before
//             2026-11-28: 2 MiB on 2 x 2 emulated nodes, back to back,
//             0.62-0.66 of Open MPI's speed; after, 0.84-1.76).
//   Any rank count, count, topology and root; see node_shm.hpp for what the
//   segment must hold. On one node it is a broadcast through the segment.
#include "algos/leader_trees.hpp"
#include "algos/node_shm.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) { append_leader_shm_bcast(b, LeaderTree::Binomial); }

}  // namespace

extern const Algorithm kBcastLeaderShm{
    "leader_shm", Collective::Bcast,
    "node-aware, one leader per node: binomial tree between the nodes' leaders, then through "
    "each node's shared segment",
    refuse_node_shm, build};

}  // namespace tutti::algos
