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
//   Small:    a vector of at most 56 bytes goes to the root in the flag
//             lines (shm_common.hpp): one synchronisation; scratch P x n at
//             the root.
#include "algos/shm_common.hpp"

namespace tutti::algos {
namespace {

Refusal refuse(const CollArgs& a, const Topology& topo) { return refuse_shm(a, topo, 1); }

// The vectors travel to the root only; the others' signals are plain (the
// synchronisation stays full, as the flag lines need).
void build_inline(ScheduleBuilder& b, size_t n) {
  const int p = b.nranks(), r = b.rank(), root = b.args().root;
  if (r != root) {
    for (int q = 0; q < p; ++q)
      if (q != r) b.shm_signal(q, input(), q == root ? n : 0);
    for (int q = 0; q < p; ++q)
      if (q != r) b.shm_wait(q);
    return;
  }
  const BufRef values = b.scratch(static_cast<size_t>(p) * n);
  auto value = [&](int q) { return values + static_cast<size_t>(q) * n; };
  b.copy(value(r), input(), n);
  for (int q = 0; q < p; ++q)
    if (q != r) b.shm_signal(q);
  for (int q = 0; q < p; ++q)
    if (q != r) b.shm_wait(q, value(q), n);
  b.end_round();
  b.reduce(output(), value(0), value(1), n);
  for (int q = 2; q < p; ++q) b.reduce(output(), output(), value(q), n);
  b.finalize(output(), n);
}

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank();
  const size_t n = a.count * b.elem_size();
  if (p == 1) {
    b.copy(output(), input(), n);
    return;
  }
  if (n == 0) return;
  if (shm_fits_inline(n)) return build_inline(b, n);
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
