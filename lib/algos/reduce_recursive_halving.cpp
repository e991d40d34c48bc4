// reduce "recursive_halving" (Rabenseifner's reduce): reduce-scatter by
// recursive vector halving, then a binomial gather of the reduced blocks to
// the root.
//   Steps:    non-power-of-two P: the even ranks below 2*extra send their
//             input to their odd partner, which reduces it in; log2(pof2)
//             rounds of reduce-scatter (pof2 near-equal blocks, possibly
//             empty), after which participant i owns the reduced block i and
//             finalizes it (avg); log2(pof2) rounds of gather, distance 1
//             first, towards the root's participant (the root, or its odd
//             partner when the root is folded, which then sends it the result).
//   Messages: chunked (params.chunk_bytes).
//   Scratch:  half the vector (landing); non-root participants also hold the
//             vector (their work area); the whole vector on an in-place root
//             that is a fold partner.
//   Rounds:   2 log2(pof2), +1 or +2 when P is not a power of two.
//   Cost:     2 log2(P) alpha + 2 (P-1)/P n beta + (P-1)/P n gamma (+ the
//             fold). Any rank count, count and root; every op. For large
//             vectors.
#include <algorithm>

#include "algos/patterns.hpp"
#include "algos/recursive_halving.hpp"
#include "algos/registry.hpp"
#include "algos/ring.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t es = b.elem_size();
  const size_t n = a.count * es;
  const int p = b.nranks(), r = b.rank();
  const bool is_root = r == a.root;
  if (p == 1) {
    if (!a.in_place) b.copy(output(), input(), n);
    return;
  }
  const PowerOfTwoFold fold{r, p};
  const int partner = fold.fold_partner();
  // A folded root is served by its partner, which gathers in its place.
  const PowerOfTwoFold root_fold{a.root, p};
  const int gather_root =
      root_fold.folded() ? PowerOfTwoFold{a.root + 1, p}.new_rank() : root_fold.new_rank();
  if (fold.folded()) {
    append_fold_in(b, fold, input(), output(), output(), n);
    if (is_root) b.recv(partner, output(), n, chunk_bytes_of(b));
    return;
  }
  const ParticipantBlocks blocks = even_participant_blocks(a.count, fold.pof2(), b.elem_size());
  const BufRef work = is_root ? output() : b.scratch(n);
  // In place, the root's folded vector cannot land in its output (the input).
  const bool fold_lands_in_scratch = partner >= 0 && is_root && a.in_place;
  const BufRef landing = b.scratch(
      std::max(recursive_halving_landing_bytes(blocks, es), fold_lands_in_scratch ? n : 0));
  const BufRef src =
      append_fold_in(b, fold, input(), work, fold_lands_in_scratch ? landing : work, n);
  append_recursive_halving_reduce_scatter(b, fold, blocks, src, work, landing);
  const int nr = fold.new_rank();
  b.finalize(work + blocks.offset(nr) * es, blocks.size(nr) * es);
  append_recursive_doubling_gather(b, fold, blocks, work, gather_root);
  if (nr == gather_root && !is_root) b.send(a.root, work, n, chunk_bytes_of(b));
}

}  // namespace

extern const Algorithm kReduceRecursiveHalving{
    "recursive_halving", Collective::Reduce,
    "Rabenseifner: recursive-halving reduce-scatter, then binomial gather to the root",
    accept_all, build};

}  // namespace tutti::algos
