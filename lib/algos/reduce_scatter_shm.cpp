// reduce_scatter "shm": through the node's shared segment (single-node jobs).
//   Steps:    per chunk of the result block (params.chunk_bytes, capped by
//             the segment): every rank copies the chunk of each of its
//             input blocks but its own into its slots; full
//             synchronisation; rank r reduces slot r of every other rank and
//             its own block where it lies, in rank order, into its output;
//             then avg. Chunks alternate parities (shm_common.hpp): no
//             closing synchronisation. In place the output is block 0 of
//             the input: rank 0's own operand is then exactly the output,
//             which host_reduce allows as the first operand.
//   Traffic:  per rank, the input read once, (P-1)/P of it staged, the
//             output written once, and 1/P of the staged data read from
//             every peer: no rank reduces more than its own block.
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
#include "algos/shm_common.hpp"
#include "algos/shm_direct.hpp"

namespace tutti::algos {
namespace {

Refusal refuse(const CollArgs& a, const Topology& topo) {
  return refuse_shm(a, topo, static_cast<size_t>(topo.nranks));
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
  // Every peer q its block q (algos/shm_common.hpp).
  if (shm_fits_inline(m, p)) {
    return append_inline_reduction(b, m, [m](int q) { return input(static_cast<size_t>(q) * m); });
  }
  const ShmSlots slots = shm_slots(b, static_cast<size_t>(p), m);
  for (size_t off = 0; off < m; off += slots.slot) {
    const size_t c = std::min(slots.slot, m - off);
    const int parity = b.begin_shm_chunk();
    for (int q = 0; q < p; ++q)
      if (q != r) b.copy(slots.at(parity, r, q), input(q * m + off), c);
    append_shm_sync_all(b);
    append_reduce_in_rank_order(b, output(off), c, [&](int q) {
      return q == r ? input(r * m + off) : slots.at(parity, q, r);
    });
  }
}

// A blocking call whose blocks fit the flag lines runs directly
// (engine/direct_call.hpp): build_inline's steps, in its order, without
// the engine.
bool run_direct(const DirectCall& c) {
  const size_t m = c.args.count * c.args.elem_size();
  const char* in = static_cast<const char*>(c.input);
  return direct_inline_reduction(c, m, [&](int q) { return in + static_cast<size_t>(q) * m; });
}

}  // namespace

extern const Algorithm kReduceScatterShm{
    "shm", Collective::ReduceScatter,
    "single node: ranks stage their blocks in shared memory, each reduces its own block",
    refuse, build, direct_fits, run_direct};

}  // namespace tutti::algos
