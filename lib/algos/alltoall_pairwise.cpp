// alltoall "pairwise" (MPICH's and Open MPI's pairwise exchange): one
// message per round, so a rank never has more than one send and one receive
// in flight, which keeps large exchanges from congesting the network.
//   Steps:    copy the own block; round k = 1..P-1: send block (r+k) to rank
//             r+k, receive block (r-k) from rank r-k.
//             In place (Input == Output): a shifted round would receive into
//             a block a later round still has to send, so the rounds follow a
//             round-robin pairing instead (r meets one peer per round, both
//             swap the blocks meant for each other); the message lands in a
//             one-block scratch and is copied into place at the start of the
//             next round. P-1 rounds for even P, P for odd P (each rank sits
//             one out).
//   Scratch:  0; in place one block (count * elem_size bytes).
//   Rounds:   P-1 (in place, odd P: P). Bytes per rank: (P-1)/P n each way.
//   Cost:     (P-1) alpha + (P-1)/P n beta, n = P * block.
//   Any rank count and count. Best for large blocks.
#include "algos/alltoall_common.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) { append_pairwise_exchange(b, alltoall_exchange_layout(b)); }

}  // namespace

extern const Algorithm kAlltoallPairwise{
    "pairwise", Collective::Alltoall,
    "P-1 rounds, one send and one receive each, to r+k and from r-k; for large blocks",
    accept_all, build};

}  // namespace tutti::algos
