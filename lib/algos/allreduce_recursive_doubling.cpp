// allreduce "recursive_doubling": in round k every participant swaps its
// whole vector with the participant at distance 2^k and reduces (MPICH's
// short-message allreduce).
//   Steps:    non-power-of-two P: the even ranks below 2*extra send their
//             input to their odd partner, which reduces it in; log2(pof2)
//             rounds of whole-vector exchange among the pof2 participants,
//             alternating between the output and a scratch vector so a round
//             never reads what it writes; finalize (avg); the partners send
//             the result back to the folded ranks.
//   Results:  both ends of a pair compute (lower half's value) op (upper
//             half's), so the result is bitwise identical on every rank.
//   Messages: the whole vector, chunked (params.chunk_bytes).
//   Scratch:  one vector (participants).
//   Rounds:   log2(pof2) (+1 local on upper ends), +2 when P is not a power
//             of two.
//   Cost:     log2(P) (alpha + n beta + n gamma) (+2 alpha + 2 n beta + n gamma
//             to fold). Any rank count and count; every op. Best for small
//             vectors, where latency dominates.
#include "algos/patterns.hpp"
#include "algos/recursive_halving.hpp"
#include "algos/registry.hpp"
#include "algos/ring.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t n = a.count * b.elem_size();
  const size_t chunk = chunk_bytes_of(b);
  const PowerOfTwoFold fold{b.rank(), b.nranks()};
  if (append_allreduce_outside_fold(b, fold, n)) return;
  const int partner = fold.fold_partner();
  const int rounds = ceil_log2(fold.pof2());
  const BufRef spare = b.scratch(n);
  // The last round writes the output; earlier ones alternate with `spare`.
  auto dst_of = [&](int k) { return (rounds - 1 - k) % 2 == 0 ? output() : spare; };
  BufRef cur = input();
  if (partner >= 0) {
    // Reduce the folded vector into the buffer round 0 does not write;
    // `spare` is free for landing until then, and never aliases the input.
    const BufRef into = dst_of(0) == output() ? spare : output();
    cur = append_fold_in(b, fold, input(), into, spare, n);
  } else if (a.in_place && dst_of(0) == output()) {
    // Round 0 must not write the input it sends.
    b.copy(spare, input(), n);
    cur = spare;
  }
  const int nr = fold.new_rank();
  for (int k = 0; k < rounds; ++k) {
    const int peer = fold.real_rank(nr ^ (1 << k));
    const BufRef dst = dst_of(k);
    b.send(peer, cur, n, chunk);
    // The message lands in `dst`. Both ends compute lower op upper, so that
    // ops that are not bitwise commutative (min/max on -0/+0 or NaN) still
    // agree; the upper end reduces once the message is complete.
    if ((nr & (1 << k)) == 0) {
      b.recv_reduce(peer, dst, cur, dst, n, chunk);
    } else {
      b.recv(peer, dst, n, chunk);
      b.reduce(dst, dst, cur, n);
    }
    b.end_round();
    cur = dst;
  }
  b.finalize(output(), n);
  if (partner >= 0) b.send(partner, output(), n, chunk);
}

}  // namespace

extern const Algorithm kAllreduceRecursiveDoubling{
    "recursive_doubling", Collective::Allreduce,
    "log2(P) rounds exchanging the whole vector at distance 2^k; latency-optimal for small vectors",
    accept_all, build};

}  // namespace tutti::algos
