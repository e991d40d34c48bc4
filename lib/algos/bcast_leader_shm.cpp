// bcast "leader_shm": node-aware like "leader" (one leader per node: the
// root on its node, the first rank on every other node), with the phase
// inside each node through the node's shared segment.
//   Steps:    1. the leaders broadcast between nodes: binomial tree from the
//                root, pipelined in segments (params.chunk_bytes);
//             2. inside each node the leader hands the vector to the others:
//                in its signals' flag lines up to 384 bytes (on up to 16
//                ranks a node), else chunk by chunk through its slot, each
//                chunk fully synchronised (node_shm.hpp).
//   Scratch:  none.
//   Cost, N nodes of L ranks, n bytes:
//             ceil(log2 N) (alpha_out + n beta_out)
//           + a flag transfer (small), or per chunk a synchronisation and
//             L copies of the chunk (the leader's in, each other rank's
//             out), against ceil(log2 L) (alpha_in + n beta_in) of messages
//             for "leader".
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
