// reduce "leader_shm": node-aware like "leader" (one leader per node: the
// root on its node, the first rank on every other node), with the phase
// inside each node through the node's shared segment.
//   Steps:    1. inside each node the others hand their vectors to the
//                leader, which reduces them in local rank order: in the
//                flag lines up to 384 bytes (on up to 16 ranks a node), else
//                chunk by chunk through the slots, each chunk fully
//                synchronised (node_shm.hpp);
//             2. the leaders reduce between nodes: binomial tree to the
//                root, pipelined in segments (params.chunk_bytes). The root
//                finalizes (avg).
//   Scratch:  the vector on leaders other than the root (the node's
//             partial result); a landing segment on leaders that receive;
//             (L-1) n on a leader for a vector in the flag lines.
//   Cost, N nodes of L ranks, n bytes:
//             a flag transfer and (L-1) n gamma (small), or per chunk a
//             synchronisation, L-1 copies in and (L-1) chunks of reduction
//           + ceil(log2 N) (alpha_out + n beta_out + n gamma).
//   Any rank count, count, topology and root; every op. See node_shm.hpp
//   for what the segment must hold. On one node it is a reduce through the
//   segment.
#include "algos/leader_trees.hpp"
#include "algos/node_shm.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) { append_leader_shm_reduce(b, LeaderTree::Binomial); }

}  // namespace

extern const Algorithm kReduceLeaderShm{
    "leader_shm", Collective::Reduce,
    "node-aware, one leader per node: through each node's shared segment to its leader, then a "
    "binomial tree between the leaders to the root",
    refuse_node_shm, build};

}  // namespace tutti::algos
