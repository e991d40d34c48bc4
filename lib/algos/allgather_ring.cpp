// allgather "ring": every block travels once around the ring.
//   Steps:    copy the input into block r of the output (nothing in place);
//             P-1 rounds: send block (r-s) to rank r+1, receive block
//             (r-s-1) from rank r-1 (append_ring_allgather).
//   Messages: pipelined in params.chunk_bytes pieces (default 256 KiB).
//   Scratch:  none.
//   Rounds:   P-1. Cost: (P-1) alpha + (P-1) m beta for blocks of m bytes.
//   Any rank count and count. Bandwidth-optimal; for large blocks.
#include "algos/registry.hpp"
#include "algos/ring.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks();
  const size_t block = a.count * b.elem_size();
  if (!a.in_place) b.copy(output(static_cast<size_t>(b.rank()) * block), input(), block);
  append_ring_allgather(b, BlockPartition{a.count * static_cast<size_t>(p), p}, output());
}

}  // namespace

extern const Algorithm kAllgatherRing{
    "ring", Collective::Allgather, "P-1 rounds around a ring, chunked; bandwidth-optimal",
    accept_all, build};

}  // namespace tutti::algos
