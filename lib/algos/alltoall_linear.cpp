// alltoall "linear": every message posted at once (Open MPI's "basic
// linear"). One round of latency, but P-1 concurrent messages per rank, which
// can congest large jobs; best for small and medium jobs and blocks.
//   Steps:    copy the own block; one round: receive block p from every rank
//             p, send block p to every rank p (receives posted first, peers
//             in shifted order r+1, r+2, ... so that not everyone targets the
//             same rank first).
//             In place (Input == Output): the whole buffer is first copied to
//             scratch and the sends read from there.
//   Scratch:  0; in place n = P * count * elem_size bytes.
//   Rounds:   1. Bytes per rank: (P-1)/P n each way.
//   Cost:     alpha + (P-1)/P n beta (with P-1 messages in flight per rank).
//   Any rank count and count.
#include "algos/alltoall_common.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) { append_linear_exchange(b, alltoall_exchange_layout(b)); }

}  // namespace

extern const Algorithm kAlltoallLinear{
    "linear", Collective::Alltoall,
    "all P-1 sends and receives posted in one round; for small jobs and blocks", accept_all,
    build};

}  // namespace tutti::algos
