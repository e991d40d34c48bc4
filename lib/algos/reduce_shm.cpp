// reduce "shm": through the node's shared segment (single-node jobs).
//   Steps:    per chunk (params.chunk_bytes, capped by the segment): every
//             rank copies its chunk into its slot; full synchronisation;
//             the root reduces all P slots in rank order into its output;
//             then avg. Chunks alternate parities (shm_common.hpp): no
//             closing synchronisation.
//   Traffic:  one copy in per rank; the root reads P x n from the shared
//             cache and writes n. No messages.
//   Scratch:  none; shared: 2 x P x chunk.
//   Rounds:   2 per chunk.
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
    if (r != a.root) continue;
    b.reduce(output(off), slots.at(parity, 0), slots.at(parity, 1), c);
    for (int q = 2; q < p; ++q) b.reduce(output(off), output(off), slots.at(parity, q), c);
    b.finalize(output(off), c);
  }
}

}  // namespace

extern const Algorithm kReduceShm{
    "shm", Collective::Reduce, "single node: ranks stage chunks in shared memory, the root reduces them",
    refuse, build};

}  // namespace tutti::algos
