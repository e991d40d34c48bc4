// allreduce "recursive_halving" (Rabenseifner): reduce-scatter by recursive
// vector halving, then allgather by recursive doubling.
//   Steps:    non-power-of-two P: the even ranks below 2*extra send their
//             input to their odd partner, which reduces it into the output;
//             log2(pof2) rounds of reduce-scatter halving the vector (the
//             vector is split into pof2 near-equal blocks, possibly empty),
//             after which participant i owns the reduced block i; finalize
//             (avg) it; log2(pof2) rounds of allgather doubling it back; the
//             partners send the result to the folded ranks.
//   Results:  every block is reduced once, then copied: bitwise identical.
//   Messages: chunked (params.chunk_bytes).
//   Scratch:  half the vector (landing of the reduce-scatter); the whole
//             vector on an in-place fold partner.
//   Rounds:   2 log2(pof2), +2 when P is not a power of two.
//   Cost:     2 log2(P) alpha + 2 (P-1)/P n beta + (P-1)/P n gamma (+ the
//             fold: 2 alpha + 2 n beta + n gamma). Any rank count and count;
//             every op. For medium and large vectors.
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
  const PowerOfTwoFold fold{b.rank(), b.nranks()};
  if (append_allreduce_outside_fold(b, fold, n)) return;
  const int partner = fold.fold_partner();
  const ParticipantBlocks blocks = even_participant_blocks(a.count, fold.pof2(), b.elem_size());
  // In place, the folded vector cannot land in the output (it is the input).
  const bool fold_lands_in_scratch = partner >= 0 && a.in_place;
  const BufRef landing = b.scratch(
      std::max(recursive_halving_landing_bytes(blocks, es), fold_lands_in_scratch ? n : 0));
  const BufRef src =
      append_fold_in(b, fold, input(), output(), fold_lands_in_scratch ? landing : output(), n);
  append_recursive_halving_reduce_scatter(b, fold, blocks, src, output(), landing);
  const int nr = fold.new_rank();
  b.finalize(output(blocks.offset(nr) * es), blocks.size(nr) * es);
  append_recursive_doubling_allgather(b, fold, blocks, output());
  if (partner >= 0) b.send(partner, output(), n, chunk_bytes_of(b));
}

}  // namespace

extern const Algorithm kAllreduceRecursiveHalving{
    "recursive_halving", Collective::Allreduce,
    "Rabenseifner: recursive-halving reduce-scatter, recursive-doubling allgather", accept_all,
    build};

}  // namespace tutti::algos
