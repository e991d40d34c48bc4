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
//   Small:    a vector of at most carry_bytes (384 bytes on up to 16
//             ranks) skips the slots: every rank sends it to every other in
//             its flag lines (shm_common.hpp), so the call is one
//             synchronisation and one transfer's time per peer; scratch P x n.
//             A blocking call this small runs directly (engine/direct_call.hpp):
//             the same steps without the engine; so does one of a single
//             chunk below kDirectSlotsBelow (4 KiB), through the slots.
//   Best on few ranks per node; every rank reduces the whole vector, so
//   the work grows with P.
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
  if (p == 1) {
    b.copy(output(), input(), n);
    return;
  }
  if (n == 0) return;
  // Every rank's whole vector to every other (algos/shm_common.hpp).
  if (shm_fits_inline(n, p)) return append_inline_reduction(b, n, [](int) { return input(); });
  const ShmSlots slots = shm_slots(b, 1, n);
  for (size_t off = 0; off < n; off += slots.slot) {
    const size_t c = std::min(slots.slot, n - off);
    const int parity = b.begin_shm_chunk();
    b.copy(slots.at(parity, r), input(off), c);
    append_shm_sync_all(b);
    append_reduce_in_rank_order(b, output(off), c, [&](int q) { return slots.at(parity, q); });
  }
}

// A blocking call that fits the flag lines runs directly (engine/direct_call.hpp):
// append_inline_reduction's steps, in its order, without the engine.
bool run_direct_inline(const DirectCall& c, size_t n) {
  return direct_inline_reduction(c, n, [&](int) { return c.input; });
}

// A blocking call of one chunk: build's steps, in its order, in the slots
// the engine would use.
bool run_direct_slots(const DirectCall& c, size_t n) {
  const DirectSlots slots(c);
  std::memcpy(slots.at(c.rank), c.input, n);
  if (!direct_sync_all(c)) return false;
  direct_reduce_in_rank_order(c, c.output, [&](int q) { return slots.at(q); });
  return true;
}

bool run_direct(const DirectCall& c) {
  const size_t n = c.args.count * c.args.elem_size();
  return c.schedule.shm_chunks == 0 ? run_direct_inline(c, n) : run_direct_slots(c, n);
}

}  // namespace

extern const Algorithm kAllreduceShm{
    "shm", Collective::Allreduce,
    "single node: ranks stage chunks in shared memory and each reduces all of them",
    refuse, build, direct_fits_or_one_slot, run_direct};

}  // namespace tutti::algos
