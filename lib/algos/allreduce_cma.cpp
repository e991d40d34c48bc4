// allreduce "cma": single node, a reduce-scatter and an allgather in which
// every rank reads its peers' buffers in place.
//   Steps:    every rank publishes its buffer addresses to all (flags);
//             rank r reads slice r of every peer's input (a chunk at a time,
//             into scratch) and reduces slice r of all inputs in rank order
//             into slice r of its output; full synchronisation; each rank
//             copies the other slices from their reducers' outputs; full
//             synchronisation (no rank returns while it is read).
//   Traffic:  per rank (P-1)/P n read and reduced, then (P-1)/P n read;
//             no messages (an exchange of whole vectors on 2 ranks would
//             read n and reduce n per rank).
//   Scratch:  P x chunk; shared: flag lines only.
//   Rounds:   3 flag rounds.
#include "algos/cma_common.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks();
  const size_t n = a.count * b.elem_size();
  if (p == 1 || n == 0) {
    b.copy(output(), input(), n);
    b.finalize(output(), n);
    return;
  }
  append_all_publish(b);
  append_reduce_my_slice(b, output());
  append_shm_sync_all(b);
  for_each_peer_from_next(b, [&](int q) {
    const Slice s = slice_of(a.count, b.elem_size(), p, q);
    b.peer_read(q, output(s.offset), output(s.offset), s.bytes);
  });
  append_shm_sync_all(b);
}

}  // namespace

extern const Algorithm kAllreduceCma{
    "cma", Collective::Allreduce,
    "single node: each rank reduces a slice read straight from its peers' buffers, then copies "
    "the other slices from theirs",
    refuse_cma, build};

}  // namespace tutti::algos
