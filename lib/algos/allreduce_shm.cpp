// allreduce "shm": through the node's shared segment (single-node jobs).
//   Steps:    per chunk (params.chunk_bytes, capped by the segment): every
//             rank copies its chunk into its slot; full synchronisation;
//             every rank reduces all P slots, in rank order (so results are
//             identical everywhere), straight into its output; then avg.
//             Chunks alternate parities (shm_common.hpp), so one
//             synchronisation per chunk suffices, and none closes the call.
//   Traffic:  per rank, the input read once and the output written once;
//             the slots (2 x P x chunk) stay in the shared cache when the
//             chunk is small enough. No messages: synchronisation is a
//             cache-line flag per pair of ranks.
//   Scratch:  none; shared: 2 x P x chunk.
//   Rounds:   2 per chunk. Cost: chunks x (sync + P x chunk gamma).
//   Best for mid-size to large vectors on few ranks per node; every rank
//   reduces the whole vector, so the work grows with P.
#include "algos/shm_common.hpp"

namespace tutti::algos {
namespace {

Refusal refuse(const CollArgs& a, const Topology& topo) { return refuse_shm(a, topo, 1); }

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank();
  const size_t n = a.count * b.elem_size();
  if (p == 1) {
    b.copy(output(), input(), n);
    return;
  }
  const ShmSlots slots = shm_slots(b);
  for (size_t off = 0; off < n; off += slots.slot) {
    const size_t c = std::min(slots.slot, n - off);
    const int parity = b.begin_shm_chunk();
    b.copy(slots.at(parity, r), input(off), c);
    append_shm_sync_all(b);
    b.reduce(output(off), slots.at(parity, 0), slots.at(parity, 1), c);
    for (int q = 2; q < p; ++q) b.reduce(output(off), output(off), slots.at(parity, q), c);
    b.finalize(output(off), c);
  }
}

}  // namespace

extern const Algorithm kAllreduceShm{
    "shm", Collective::Allreduce,
    "single node: ranks stage chunks in shared memory and each reduces all of them",
    refuse, build};

}  // namespace tutti::algos
