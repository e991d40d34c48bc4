// alltoallv "linear": every message posted at once.
//   Steps:    copy the own block; one round: receive from every rank, send
//             to every rank (empty messages are dropped on both sides).
//             In place (Input == Output): the input is first copied to
//             scratch (up to the end of its last non-empty block) and the
//             sends read from there.
//   Scratch:  0; in place the input's extent.
//   Rounds:   1. Bytes per rank: what it sends.
//   Cost:     alpha + max(sent, received) beta (P-1 messages in flight).
//   Any rank count, counts and displacements.
#include "algos/alltoall_common.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) { append_linear_exchange(b, alltoallv_exchange_layout(b)); }

}  // namespace

extern const Algorithm kAlltoallvLinear{
    "linear", Collective::Alltoallv, "all P-1 sends and receives posted in one round",
    accept_all, build};

}  // namespace tutti::algos
