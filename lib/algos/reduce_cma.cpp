// reduce "cma": single node, a reduce-scatter in which every rank reads its
// peers' buffers in place, then the root reads the reduced slices.
//   Steps:    every rank publishes its buffer addresses to all (flags);
//             rank r reads slice r of every peer's input (a chunk at a time,
//             into scratch) and reduces slice r of all inputs in rank order
//             (the root into its output, the others into scratch); every
//             non-root signals the root, which copies their slices from
//             their scratch and signals them all (none returns while read).
//   Traffic:  per rank (P-1)/P n read and reduced, in parallel; the root
//             then reads (P-1)/P n. No messages.
//   Scratch:  P x chunk, and a slice at the non-roots; shared: flag lines.
//   Rounds:   3 flag rounds.
//   2 ranks:  the root reads the other's input a chunk at a time and
//             reduces it with its own (n read and reduced at the root, 2
//             flag rounds), as Open MPI's reduce over a single-copy transfer.
#include "algos/cma_common.hpp"

namespace tutti::algos {
namespace {

// Two ranks: slices would only add a round and a copy. The root reads the
// other's input a chunk at a time (cache-warm) and reduces it with its own,
// as Open MPI's reduce over a single-copy transfer does.
void build_two(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int r = b.rank(), other = 1 - r;
  const size_t n = a.count * b.elem_size();
  append_root_reads_all(b, a.root, [&] {
    const size_t es = b.elem_size();
    const size_t chunk = std::max(es, chunk_bytes_of(b) / es * es);
    const BufRef landing = b.scratch(std::min(chunk, n));
    for (size_t off = 0; off < n; off += chunk) {
      const size_t c = std::min(chunk, n - off);
      b.peer_read(other, landing, input(off), c);
      append_reduce_in_rank_order(b, output(off), c, [&](int q) { return q == r ? input(off) : landing; });
    }
  });
}

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank(), root = a.root;
  const size_t n = a.count * b.elem_size();
  if (p == 1 || n == 0) {
    b.copy(output(), input(), n);
    b.finalize(output(), n);
    return;
  }
  if (p == 2) {
    build_two(b);
    return;
  }
  // A non-root reduces its slice into scratch, at the slice's offset in an
  // area of the vector's size that is its first scratch (offset 0), so the
  // root knows where to read it.
  const BufRef result = r == root ? output() : b.scratch(n);
  if (result.kind == BufKind::Scratch && result.offset != 0)
    fail(TUTTI_ERR_INTERNAL, "reduce cma: the result area must be the first scratch");
  append_all_publish(b);
  append_reduce_my_slice(b, result);
  if (r != root) {
    b.shm_signal(root);
    b.end_round();
    b.shm_wait(root);
    return;
  }
  for_each_peer_from_next(b, [&](int q) { b.shm_wait(q); });
  b.end_round();
  for_each_peer_from_next(b, [&](int q) {
    const Slice s = slice_of(a.count, b.elem_size(), p, q);
    b.peer_read(q, output(s.offset), BufRef{BufKind::Scratch, s.offset}, s.bytes);
  });
  for_each_peer_from_next(b, [&](int q) { b.shm_signal(q); });
}

}  // namespace

extern const Algorithm kReduceCma{
    "cma", Collective::Reduce,
    "single node: each rank reduces a slice read straight from its peers' buffers; the root "
    "copies the reduced slices from theirs",
    refuse_cma, build};

}  // namespace tutti::algos
