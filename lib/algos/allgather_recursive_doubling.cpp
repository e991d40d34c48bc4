// allgather "recursive_doubling": in round k a rank swaps everything it has
// with the rank 2^k away, so the gathered range doubles each round.
//   Steps:    non-powers of two fold in (PowerOfTwoFold): the even ranks
//             below 2*extra send their block to their odd neighbour and sit
//             out. Participant i stands for the real blocks [lo(i),
//             lo(i+1)) (two for a fold partner, one otherwise), so a group
//             of participants 2^k-aligned always holds one contiguous run
//             of real blocks, and every exchange moves a single range of
//             the output. At the end fold partners send the whole output to
//             their folded rank.
//   Messages: pipelined in params.chunk_bytes pieces.
//   Scratch:  none (everything moves in the output).
//   Rounds:   log2 P for powers of two, else floor(log2 P) + 2. Cost:
//             log2 P alpha + (P-1) m beta for blocks of m bytes (+ alpha +
//             (P+1) m beta with the fold).
//   Any rank count and count. Best for small blocks.
#include "algos/patterns.hpp"
#include "algos/registry.hpp"
#include "algos/ring.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank();
  const size_t block = a.count * b.elem_size();
  const size_t chunk = chunk_bytes_of(b);
  if (!a.in_place) b.copy(output(static_cast<size_t>(r) * block), input(), block);
  if (p == 1) return;

  const PowerOfTwoFold fold{r, p};
  const int pof2 = fold.pof2(), extra = fold.extra();
  // First real block that participant i stands for (lo(pof2) = p).
  auto lo = [&](int i) { return static_cast<size_t>(i < extra ? 2 * i : i + extra); };
  auto range_bytes = [&](int first, int n) { return (lo(first + n) - lo(first)) * block; };

  if (fold.folded()) {
    b.send(fold.fold_partner(), input(), block, chunk);
    b.end_round();
    b.recv(fold.fold_partner(), output(), static_cast<size_t>(p) * block, chunk);
    b.end_round();
    return;
  }
  const int partner_below = fold.fold_partner();  // -1 outside the fold
  if (partner_below >= 0) {
    b.recv(partner_below, output(static_cast<size_t>(partner_below) * block), block, chunk);
    b.end_round();
  }
  const int me = fold.new_rank();
  for (int dist = 1; dist < pof2; dist <<= 1) {
    const int mine = me & ~(dist - 1), theirs = mine ^ dist;
    const int peer = fold.real_rank(me ^ dist);
    b.send(peer, output(lo(mine) * block), range_bytes(mine, dist), chunk);
    b.recv(peer, output(lo(theirs) * block), range_bytes(theirs, dist), chunk);
    b.end_round();
  }
  if (partner_below >= 0) {
    b.send(partner_below, output(), static_cast<size_t>(p) * block, chunk);
    b.end_round();
  }
}

}  // namespace

extern const Algorithm kAllgatherRecursiveDoubling{
    "recursive_doubling", Collective::Allgather,
    "log2(P) rounds of doubling exchanges; non-powers of two folded in", accept_all, build};

}  // namespace tutti::algos
