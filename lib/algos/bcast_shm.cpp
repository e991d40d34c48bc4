// bcast "shm": through the node's shared segment (single-node jobs).
//   Steps:    per chunk (params.chunk_bytes, capped by the segment): the
//             root copies the chunk into its slot; full synchronisation;
//             every other rank copies it out. Chunks alternate parities
//             (shm_common.hpp): no closing synchronisation.
//   Traffic:  one copy in at the root, one copy out per rank; no messages.
//   Scratch:  none; shared: 2 x P x chunk (only the root's slots are used).
//   Rounds:   1-2 per chunk.
//   Small:    a vector of at most carry_bytes (384 bytes on up to 16
//             ranks) goes from the root in the flag lines (shm_common.hpp),
//             one way: the root signals, the others wait for it; no slots,
//             no reply. A blocking call this small runs directly
//             (engine/direct_call.hpp): the same signals without the engine; so
//             does one of a single chunk below kDirectSlotsBelow (4 KiB),
//             through the slots.
#include <cstring>

#include "algos/shm_common.hpp"
#include "algos/shm_direct.hpp"

namespace tutti::algos {
namespace {

Refusal refuse(const CollArgs& a, const Topology& topo) { return refuse_shm(a, topo, 1); }

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank();
  const size_t n = a.count * b.elem_size();
  if (p == 1 || n == 0) return;
  if (shm_fits_inline(n, p)) {
    // One way: the root's signals carry the vector and nobody answers (the
    // flag lines' acknowledgements keep the root at most signal_groups calls ahead).
    if (r == a.root) {
      for (int q = 0; q < p; ++q)
        if (q != r) b.shm_signal(q, output(), n);
    } else {
      b.shm_wait(a.root, output(), n);
    }
    return;
  }
  const ShmSlots slots = shm_slots(b, 1, n);
  for (size_t off = 0; off < n; off += slots.slot) {
    const size_t c = std::min(slots.slot, n - off);
    const BufRef slot = slots.at(b.begin_shm_chunk(), a.root);
    if (r == a.root) b.copy(slot, output(off), c);
    append_shm_sync_all(b);
    if (r != a.root) b.copy(output(off), slot, c);
  }
}

// build's inline steps, in their order, without the engine.
bool run_direct_inline(const DirectCall& c, size_t n) {
  const int root = c.args.root;
  if (c.rank != root) return direct_wait(c, root, c.output, n);
  for (int q = 0; q < c.nranks; ++q)
    if (q != root && !direct_signal(c, q, c.output, n)) return false;
  return true;
}

// A blocking call of one chunk: build's steps, in its order, in the slots
// the engine would use.
bool run_direct_slots(const DirectCall& c, size_t n) {
  const DirectSlots slots(c);
  const int root = c.args.root;
  if (c.rank == root) std::memcpy(slots.at(root), c.output, n);
  if (!direct_sync_all(c)) return false;
  if (c.rank != root) std::memcpy(c.output, slots.at(root), n);
  return true;
}

bool run_direct(const DirectCall& c) {
  const size_t n = c.args.count * c.args.elem_size();
  return c.schedule.shm_chunks == 0 ? run_direct_inline(c, n) : run_direct_slots(c, n);
}

}  // namespace

extern const Algorithm kBcastShm{
    "shm", Collective::Bcast, "single node: the root stages chunks in shared memory, all copy them out",
    refuse, build, direct_fits_or_one_slot, run_direct};

}  // namespace tutti::algos
