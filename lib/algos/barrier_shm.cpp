// barrier "shm": through the node's shared segment (single-node jobs).
//   Steps:    every rank raises its flag for every other rank, then waits
//             for theirs: one round, no messages, each wait one cache-line
//             transfer. Waiting ranks yield like any other wait, so an
//             oversubscribed node does not spin itself to a standstill.
//   Scratch:  none; shared: flags only.
//   Rounds:   1.
#include "algos/shm_common.hpp"

namespace tutti::algos {
namespace {

Refusal refuse(const CollArgs& a, const Topology& topo) { return refuse_shm(a, topo, 1); }

void build(ScheduleBuilder& b) {
  if (b.nranks() > 1) append_shm_sync_all(b);
}

}  // namespace

extern const Algorithm kBarrierShm{
    "shm", Collective::Barrier,
    "single node: every rank raises a flag in shared memory for every other and waits for theirs",
    refuse, build};

}  // namespace tutti::algos
