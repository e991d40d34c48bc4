// allreduce "ring": ring reduce-scatter, then ring allgather (Patarasuk &
// Yuan; NCCL's and UCC's bandwidth-optimal allreduce).
//   Steps:    copy input to output; P-1 rounds of reduce-scatter in the
//             output (rank r ends with the reduced block r, averaged for
//             avg); P-1 rounds of allgather.
//   Messages: pipelined in chunks (params.chunk_bytes, default 256 KiB) so a
//             chunk is reduced while the next one is in flight.
//   Scratch:  one block (the landing area of a receive).
//   Rounds:   2(P-1). Cost: 2(P-1) alpha + 2 (P-1)/P n beta + (P-1)/P n gamma.
//   Any rank count and count; every op. Best for large vectors.
#include "algos/registry.hpp"
#include "algos/ring.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t es = b.elem_size();
  const BlockPartition blocks = aligned_blocks(a.count, b.nranks(), es);
  b.copy(output(), input(), a.count * es);
  append_ring_reduce_scatter_inplace(b, blocks, output());
  b.finalize(output(blocks.offset(b.rank()) * es), blocks.size(b.rank()) * es);
  append_ring_allgather(b, blocks, output());
}

}  // namespace

extern const Algorithm kAllreduceRing{
    "ring", Collective::Allreduce,
    "reduce-scatter then allgather around a ring, chunked; bandwidth-optimal", accept_all, build};

}  // namespace tutti::algos
