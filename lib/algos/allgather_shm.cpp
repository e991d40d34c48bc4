// allgather "shm": through the node's shared segment (single-node jobs).
//   Steps:    per chunk of a block (params.chunk_bytes, capped by the
//             segment): every rank copies its chunk into its slot; full
//             synchronisation; every rank copies all P slots into place.
//             Chunks alternate parities (shm_common.hpp): no closing
//             synchronisation.
//   Traffic:  one copy in and P copies out per rank; no messages.
//   Scratch:  none; shared: 2 x P x chunk.
//   Rounds:   2 per chunk.
//   Small:    blocks of at most carry_bytes (384 bytes on up to 16 ranks)
//             go in the flag lines (shm_common.hpp): one synchronisation,
//             no slots.
#include "algos/shm_common.hpp"

namespace tutti::algos {
namespace {

Refusal refuse(const CollArgs& a, const Topology& topo) { return refuse_shm(a, topo, 1); }

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank();
  const size_t m = a.count * b.elem_size();
  const BufRef mine = output(static_cast<size_t>(r) * m);
  if (!a.in_place) b.copy(mine, input(), m);
  if (p == 1 || m == 0) return;
  if (shm_fits_inline(m, p)) {
    append_shm_exchange(
        b, [&](int) { return ShmCarry{mine, m}; },
        [&](int q) { return ShmCarry{output(static_cast<size_t>(q) * m), m}; });
    return;
  }
  const ShmSlots slots = shm_slots(b, 1, m);
  for (size_t off = 0; off < m; off += slots.slot) {
    const size_t c = std::min(slots.slot, m - off);
    const int parity = b.begin_shm_chunk();
    b.copy(slots.at(parity, r), mine + off, c);
    append_shm_sync_all(b);
    for (int q = 0; q < p; ++q)
      if (q != r) b.copy(output(static_cast<size_t>(q) * m + off), slots.at(parity, q), c);
  }
}

}  // namespace

extern const Algorithm kAllgatherShm{
    "shm", Collective::Allgather,
    "single node: ranks stage their blocks in shared memory, each copies all of them",
    refuse, build};

}  // namespace tutti::algos
