// gather "shm": through the node's shared segment (single-node jobs).
//   Steps:    per chunk of a block (params.chunk_bytes, capped by the
//             segment): every rank but the root copies its chunk into its
//             slot; full synchronisation; the root copies the P-1 slots
//             into place. Chunks alternate parities (shm_common.hpp): no
//             closing synchronisation.
//   Traffic:  one copy in per rank, P-1 copies out at the root; no messages.
//   Scratch:  none; shared: 2 x P x chunk.
//   Rounds:   2 per chunk.
//   Small:    blocks of at most carry_bytes (384 bytes on up to 16 ranks)
//             go to the root in the flag lines (shm_common.hpp), one way:
//             the others signal and return, the root waits for them all.
//             A blocking call this small runs directly
//             (engine/direct_call.hpp): the same signals without the
//             engine; so does one of a single chunk below kDirectSlotsBelow
//             (4 KiB), through the slots.
//   Any root; in place at the root.
#include <cstring>

#include "algos/shm_common.hpp"
#include "algos/shm_direct.hpp"

namespace tutti::algos {
namespace {

Refusal refuse(const CollArgs& a, const Topology& topo) { return refuse_shm(a, topo, 1); }

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank(), root = a.root;
  const size_t m = a.count * b.elem_size();
  auto block = [m](int q) { return output(static_cast<size_t>(q) * m); };
  if (r == root && !a.in_place) b.copy(block(r), input(), m);
  if (p == 1 || m == 0) return;
  if (shm_fits_inline(m, p)) {
    // One way: nobody answers (the flag lines' acknowledgements keep a
    // sender at most signal_groups calls ahead).
    if (r != root) {
      b.shm_signal(root, input(), m);
      return;
    }
    for (int q = 0; q < p; ++q)
      if (q != r) b.shm_wait(q, block(q), m);
    b.end_round();
    return;
  }
  const ShmSlots slots = shm_slots(b, 1, m);
  for (size_t off = 0; off < m; off += slots.slot) {
    const size_t c = std::min(slots.slot, m - off);
    const int parity = b.begin_shm_chunk();
    if (r != root) b.copy(slots.at(parity, r), input(off), c);
    append_shm_sync_all(b);
    if (r == root)
      for (int q = 0; q < p; ++q)
        if (q != r) b.copy(block(q) + off, slots.at(parity, q), c);
  }
}

// build's steps, in its order, without the engine.
bool run_direct(const DirectCall& c) {
  const size_t m = c.args.count * c.args.elem_size();
  const int root = c.args.root;
  char* out = static_cast<char*>(c.output);
  auto block = [&](int q) { return out + static_cast<size_t>(q) * m; };
  if (c.rank == root && !c.args.in_place) std::memcpy(block(root), c.input, m);
  if (c.schedule.shm_chunks == 0) {  // in the flag lines
    if (c.rank != root) return direct_signal(c, root, c.input, m);
    for (int q = 0; q < c.nranks; ++q)
      if (q != c.rank && !direct_wait(c, q, block(q), m)) return false;
    return true;
  }
  const DirectSlots slots(c);  // one chunk
  if (c.rank != root) std::memcpy(slots.at(c.rank), c.input, m);
  if (!direct_sync_all(c)) return false;
  if (c.rank == root)
    for (int q = 0; q < c.nranks; ++q)
      if (q != c.rank) std::memcpy(block(q), slots.at(q), m);
  return true;
}

}  // namespace

extern const Algorithm kGatherShm{
    "shm", Collective::Gather,
    "single node: ranks stage their blocks in shared memory, the root copies them out", refuse,
    build, direct_fits_or_one_slot, run_direct};

}  // namespace tutti::algos
