// alltoall "shm": through the node's shared segment (single-node jobs).
//   Steps:    per chunk of a block (params.chunk_bytes, capped by the
//             segment): every rank copies the chunk of each of its P blocks
//             into its P slots; full synchronisation; every rank copies its
//             piece out of every rank's slots. Chunks alternate parities
//             (shm_common.hpp): no closing synchronisation.
//   Traffic:  each byte copied twice (in and out); no messages.
//   Scratch:  none; shared: 2 x P x P x chunk.
//   Rounds:   2 per chunk.
#include "algos/shm_common.hpp"

namespace tutti::algos {
namespace {

Refusal refuse(const CollArgs& a, const Topology& topo) {
  return refuse_shm(a, topo, static_cast<size_t>(topo.nranks));
}

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank();
  const size_t m = a.count * b.elem_size();
  const size_t own = static_cast<size_t>(r) * m;
  if (p == 1) {
    b.copy(output(), input(), m);
    return;
  }
  const ShmSlots slots = shm_slots(b, static_cast<size_t>(p), m);
  for (size_t off = 0; off < m; off += slots.slot) {
    const size_t c = std::min(slots.slot, m - off);
    const int parity = b.begin_shm_chunk();
    for (int q = 0; q < p; ++q)
      if (q != r) b.copy(slots.at(parity, r, q), input(static_cast<size_t>(q) * m + off), c);
    // The own block needs no staging (in place it is already where it goes).
    if (!a.in_place) b.copy(output(own + off), input(own + off), c);
    append_shm_sync_all(b);
    for (int q = 0; q < p; ++q)
      if (q != r) b.copy(output(static_cast<size_t>(q) * m + off), slots.at(parity, q, r), c);
  }
}

}  // namespace

extern const Algorithm kAlltoallShm{
    "shm", Collective::Alltoall,
    "single node: ranks stage their blocks in shared memory, each copies its pieces out",
    refuse, build};

}  // namespace tutti::algos
