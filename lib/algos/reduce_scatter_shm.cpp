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
  if (p == 1) {
    b.copy(output(), input(), m);
    return;
  }
  const ShmSlots slots = shm_slots(b, static_cast<size_t>(p), m);
  for (size_t off = 0; off < m; off += slots.slot) {
    const size_t c = std::min(slots.slot, m - off);
    const int parity = b.begin_shm_chunk();
    for (int q = 0; q < p; ++q) b.copy(slots.at(parity, r, q), input(q * m + off), c);
    append_shm_sync_all(b);
    append_reduce_in_rank_order(b, output(off), c, [&](int q) { return slots.at(parity, q, r); });
  }
}

}  // namespace

extern const Algorithm kReduceScatterShm{
    "shm", Collective::ReduceScatter,
    "single node: ranks stage their blocks in shared memory, each reduces its own block",
    refuse, build};

}  // namespace tutti::algos
