// reduce_scatter "shm": through the node's shared segment (single-node jobs).
//   Steps:    per chunk of the result block (params.chunk_bytes, capped by
//             the segment): every rank copies the chunk of each of its P
//             input blocks into its P slots; full synchronisation; rank r
//             reduces slot r of every rank, in rank order, into its output;
//             then avg. Chunks alternate parities (shm_common.hpp): no
//             closing synchronisation.
//   Traffic:  per rank, the input read once, the output written once, and
//             1/P of the staged data read from every peer: no rank reduces
//             more than its own block.
//   Scratch:  none; shared: 2 x P x P x chunk.
//   Rounds:   2 per chunk.
//   Small:    blocks of at most carry_bytes (384 bytes on up to 16 ranks)
//             skip the slots: every rank sends each peer its block in their
//             flag lines, then reduces the P blocks it got in rank order:
//             one synchronisation; scratch P x block. A blocking call this
//             small runs directly (engine/direct_call.hpp). 8-512 B per
//             rank on 2 ranks: 0.51-0.73 of Open MPI's time, against
//             1.08-1.54 through the slots and the engine (2026-11-28,
//             docs/perf/reduce-scatter-lines-2026-11-28.txt).
#include <cstring>

#include "algos/shm_common.hpp"
#include "algos/shm_direct.hpp"

namespace tutti::algos {
namespace {

Refusal refuse(const CollArgs& a, const Topology& topo) {
  return refuse_shm(a, topo, static_cast<size_t>(topo.nranks));
}

// Every rank's block r in scratch, by rank (its own copied first, so that
// in place the output may be written while the input is still read), then
// reduced in rank order like the slots.
void build_inline(ScheduleBuilder& b, size_t m) {
  const int p = b.nranks(), r = b.rank();
  const BufRef values = b.scratch(static_cast<size_t>(p) * m);
  auto value = [&](int q) { return values + static_cast<size_t>(q) * m; };
  b.copy(value(r), input(static_cast<size_t>(r) * m), m);
  append_shm_exchange(
      b, [&](int q) { return ShmCarry{input(static_cast<size_t>(q) * m), m}; },
      [&](int q) { return ShmCarry{value(q), m}; });
  append_reduce_in_rank_order(b, output(), m, value);
}

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank();
  const size_t m = a.count * b.elem_size();
  if (p == 1) {
    b.copy(output(), input(), m);
    return;
  }
  if (m == 0) return;
  if (shm_fits_inline(m, p)) return build_inline(b, m);
  const ShmSlots slots = shm_slots(b, static_cast<size_t>(p), m);
  for (size_t off = 0; off < m; off += slots.slot) {
    const size_t c = std::min(slots.slot, m - off);
    const int parity = b.begin_shm_chunk();
    for (int q = 0; q < p; ++q) b.copy(slots.at(parity, r, q), input(q * m + off), c);
    append_shm_sync_all(b);
    append_reduce_in_rank_order(b, output(off), c, [&](int q) { return slots.at(parity, q, r); });
  }
}

// A blocking call whose blocks fit the flag lines runs directly
// (engine/direct_call.hpp): build_inline's steps, in its order, without
// the engine.
bool run_direct(const DirectCall& c) {
  const size_t m = c.args.count * c.args.elem_size();
  const char* in = static_cast<const char*>(c.input);
  char* values = static_cast<char*>(c.scratch);
  auto value = [&](int q) { return values + static_cast<size_t>(q) * m; };
  std::memcpy(value(c.rank), in + static_cast<size_t>(c.rank) * m, m);
  for (int q = 0; q < c.nranks; ++q)
    if (q != c.rank && !direct_signal(c, q, in + static_cast<size_t>(q) * m, m)) return false;
  for (int q = 0; q < c.nranks; ++q)
    if (q != c.rank && !direct_wait(c, q, value(q), m)) return false;
  direct_reduce_in_rank_order(c, c.output, value);
  return true;
}

}  // namespace

extern const Algorithm kReduceScatterShm{
    "shm", Collective::ReduceScatter,
    "single node: ranks stage their blocks in shared memory, each reduces its own block",
    refuse, build, direct_fits, run_direct};

}  // namespace tutti::algos
