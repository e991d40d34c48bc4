// reduce_scatter "recursive_halving": recursive vector halving over the P
// result blocks (rank r's result is block r of the input).
//   Steps:    non-power-of-two P: the even ranks below 2*extra send their
//             whole input to their odd partner, which reduces it in; the
//             pof2 participants halve the vector log2(pof2) times, the
//             partition giving each participant the blocks of the ranks it
//             stands for (its own, and its folded partner's), then finalize
//             (avg) them; each participant copies its block to its output
//             and sends the folded partner its block.
//   Messages: chunked (params.chunk_bytes).
//   Scratch:  the whole vector (work area; the input is never written) plus
//             half of it (landing), on participants.
//   Rounds:   log2(pof2), +2 when P is not a power of two.
//   Cost:     log2(P) alpha + (P-1)/P N beta + (P-1)/P N gamma for an N-byte
//             input (+ the fold: 2 alpha + N beta + N gamma). Any rank count
//             and count; every op. For small and medium vectors at scale.
#include "algos/patterns.hpp"
#include "algos/recursive_halving.hpp"
#include "algos/registry.hpp"
#include "algos/ring.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t es = b.elem_size();
  const int p = b.nranks(), r = b.rank();
  const size_t block = a.count * es;
  const size_t total = block * static_cast<size_t>(p);
  if (p == 1) {
    if (!a.in_place) b.copy(output(), input(), block);
    return;
  }
  const PowerOfTwoFold fold{r, p};
  const int partner = fold.fold_partner();
  if (fold.folded()) {
    append_fold_in(b, fold, input(), output(), output(), total);
    b.recv(partner, output(), block, chunk_bytes_of(b));
    return;
  }
  const ParticipantBlocks blocks = folded_rank_blocks(fold, a.count);
  // The input is read-only (or, in place, the output's first block), so the
  // halving works in scratch.
  const BufRef work = b.scratch(total);
  const BufRef landing = b.scratch(recursive_halving_landing_bytes(blocks, es));
  const BufRef src = append_fold_in(b, fold, input(), work, work, total);
  append_recursive_halving_reduce_scatter(b, fold, blocks, src, work, landing);
  const int nr = fold.new_rank();
  b.finalize(work + blocks.offset(nr) * es, blocks.size(nr) * es);
  b.copy(output(), work + static_cast<size_t>(r) * block, block);
  if (partner >= 0)
    b.send(partner, work + static_cast<size_t>(partner) * block, block, chunk_bytes_of(b));
}

}  // namespace

extern const Algorithm kReduceScatterRecursiveHalving{
    "recursive_halving", Collective::ReduceScatter,
    "recursive vector halving over the result blocks, folding non-power-of-two ranks",
    accept_all, build};

}  // namespace tutti::algos
