// reduce_scatter "ring": the ring reduce-scatter of ring.hpp over the P
// result blocks (rank r's result is block r of the input).
//   Steps:    P-1 rounds: send the partial block r-s-1 to the right, receive
//             and reduce block r-s-2 from the left; the last round reduces
//             block r into the output (through scratch when in place, where
//             the output is the input's first block); finalize (avg).
//   Messages: chunked (params.chunk_bytes).
//   Scratch:  three blocks (landing and two partial sums).
//   Rounds:   P-1. Cost: (P-1) alpha + (P-1) m beta + (P-1) m gamma for
//             result blocks of m bytes.
//   Any rank count and count; every op. Bandwidth-optimal.
#include "algos/registry.hpp"
#include "algos/ring.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks();
  const BlockPartition blocks{a.count * static_cast<size_t>(p), p};
  if (p == 1) {
    if (!a.in_place) b.copy(output(), input(), a.count * b.elem_size());
    return;
  }
  append_ring_reduce_scatter(b, blocks, input(), output(), a.in_place);
}

}  // namespace

extern const Algorithm kReduceScatterRing{
    "ring", Collective::ReduceScatter, "P-1 rounds around a ring, chunked; bandwidth-optimal",
    accept_all, build};

}  // namespace tutti::algos
