// alltoallv "pairwise": alltoall "pairwise" on the caller's per-peer counts
// and displacements.
//   Steps:    copy the own block; round k = 1..P-1: send to rank r+k,
//             receive from rank r-k (empty messages are dropped on both
//             sides). In place (Input == Output, send layout == receive
//             layout, symmetric counts): round-robin pairing, each message
//             landing in scratch and copied into place at the start of the
//             next round (see alltoall_pairwise.cpp).
//   Scratch:  0; in place the largest receive block.
//   Rounds:   P-1 (in place, odd P: P). Bytes per rank: what it sends.
//   Cost:     (P-1) alpha + max(sent, received) beta.
//   Any rank count, counts and displacements.
#include "algos/alltoall_common.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) { append_pairwise_exchange(b, alltoallv_exchange_layout(b)); }

}  // namespace

extern const Algorithm kAlltoallvPairwise{
    "pairwise", Collective::Alltoallv,
    "P-1 rounds, one send and one receive each, to r+k and from r-k", accept_all, build};

}  // namespace tutti::algos
