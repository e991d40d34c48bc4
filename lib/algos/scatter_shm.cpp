// scatter "shm": through the node's shared segment (single-node jobs).
//   Steps:    per chunk of a block (params.chunk_bytes, capped by the
//             segment): the root copies every other rank's chunk into that
//             rank's slot; full synchronisation; every rank copies its slot
//             out, the root its own block's chunk meanwhile (not first:
//             the others would wait for it). Chunks alternate parities
//             (shm_common.hpp): no closing synchronisation.
//   Traffic:  P-1 copies in at the root, one copy out per rank; no messages.
//   Scratch:  none; shared: 2 x P x chunk.
//   Rounds:   2 per chunk.
//   Small:    blocks of at most carry_bytes (384 bytes on up to 16 ranks)
//             go from the root in the flag lines (shm_common.hpp), one way:
//             the root signals, the others wait for it. A blocking call this
//             small runs directly (engine/direct_call.hpp): the same signals
//             without the engine; so does one of a single chunk below
//             kDirectSlotsBelow (4 KiB), through the slots.
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
  auto block = [m](int q) { return input(static_cast<size_t>(q) * m); };
  // The root's own block, or a piece of it: copied after the others'
  // pieces are out, while they copy theirs out of the slots.
  auto own_piece = [&](size_t off, size_t c) {
    if (r == root && !a.in_place) b.copy(output(off), block(r) + off, c);
  };
  if (p == 1 || m == 0) return own_piece(0, m);
  if (shm_fits_inline(m, p)) {
    // One way: nobody answers (the flag lines' acknowledgements keep the
    // root at most signal_groups calls ahead).
    if (r == root) {
      for (int q = 0; q < p; ++q)
        if (q != r) b.shm_signal(q, block(q), m);
    } else {
      b.shm_wait(root, output(), m);
    }
    b.end_round();
    own_piece(0, m);
    return;
  }
  const ShmSlots slots = shm_slots(b, 1, m);
  for (size_t off = 0; off < m; off += slots.slot) {
    const size_t c = std::min(slots.slot, m - off);
    const int parity = b.begin_shm_chunk();
    if (r == root)
      for (int q = 0; q < p; ++q)
        if (q != r) b.copy(slots.at(parity, q), block(q) + off, c);
    append_shm_sync_all(b);
    own_piece(off, c);
    if (r != root) b.copy(output(off), slots.at(parity, r), c);
  }
}

// build's steps, in its order, without the engine.
bool run_direct(const DirectCall& c) {
  const size_t m = c.args.count * c.args.elem_size();
  const int root = c.args.root;
  const char* in = static_cast<const char*>(c.input);
  auto block = [&](int q) { return in + static_cast<size_t>(q) * m; };
  auto own_block = [&] {
    if (c.rank == root && !c.args.in_place) std::memcpy(c.output, block(root), m);
  };
  if (c.nranks == 1 || m == 0) {
    own_block();
    return true;
  }
  if (c.schedule.shm_chunks == 0) {  // in the flag lines
    if (c.rank != root) return direct_wait(c, root, c.output, m);
    for (int q = 0; q < c.nranks; ++q)
      if (q != c.rank && !direct_signal(c, q, block(q), m)) return false;
    own_block();
    return true;
  }
  const DirectSlots slots(c);  // one chunk
  if (c.rank == root)
    for (int q = 0; q < c.nranks; ++q)
      if (q != c.rank) std::memcpy(slots.at(q), block(q), m);
  if (!direct_sync_all(c)) return false;
  own_block();
  if (c.rank != root) std::memcpy(c.output, slots.at(c.rank), m);
  return true;
}

}  // namespace

extern const Algorithm kScatterShm{
    "shm", Collective::Scatter,
    "single node: the root stages every rank's block in shared memory, each copies its own out",
    refuse, build, direct_fits_or_one_slot, run_direct};

}  // namespace tutti::algos
