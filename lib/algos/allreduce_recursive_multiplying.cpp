// allreduce "recursive_multiplying": recursive doubling with radix k (the
// k-nomial / recursive-multiplying allreduce of MPICH and UCC). In each
// round a participant exchanges its whole vector with the k-1 others of its
// group (the participants that differ from it in one base-k digit) and
// reduces the k vectors, so log_k(P) rounds replace recursive doubling's
// log2(P): at large P, where every round costs an inter-node latency, the
// latency term shrinks by log2(k) (4: half the rounds), while each round
// sends k-1 messages at once.
//   Steps:    non-power-of-two P: the even ranks below 2*extra fold their
//             input into their odd partner (as recursive doubling does),
//             and get the result back at the end. The pof2 participants run
//             rounds of radix k = params.radix (default 4; rounded down to
//             a power of two, at most the participants left), the last one
//             smaller where log2(pof2) is not a multiple of log2(k).
//             Round: send the current vector to the group's k-1 others,
//             receive theirs into k-1 landing vectors, then reduce the k in
//             group order into a vector that alternates between the output
//             and a scratch one (the last round writes the output).
//   Results:  every member of a group reduces the same k vectors in the
//             same order: bitwise identical on every rank.
//   Messages: the whole vector, chunked (params.chunk_bytes), k-1 per round.
//   Scratch:  k vectors (one spare, k-1 landings).
//   Rounds:   ceil(log_k(pof2)) (+2 when P is not a power of two).
//   Cost:     ceil(log_k P) (alpha + (k-1) n beta + (k-1) n gamma), the
//             k-1 sends of a round sharing one link (+ the fold as in
//             recursive doubling). Any rank count and count; every op. For
//             small vectors on many ranks.
#include <algorithm>

#include "algos/patterns.hpp"
#include "algos/recursive_halving.hpp"
#include "algos/registry.hpp"
#include "algos/ring.hpp"

namespace tutti::algos {
namespace {

constexpr int kDefaultRadix = 4;

// The radix of each round over `pof2` participants: k while k participants
// are left per group, then what remains (a power of two).
std::vector<int> round_radices(int pof2, int k) {
  std::vector<int> radices;
  for (int stride = 1; stride < pof2;) {
    const int r = std::min(k, pof2 / stride);
    radices.push_back(r);
    stride *= r;
  }
  return radices;
}

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t n = a.count * b.elem_size();
  const size_t chunk = chunk_bytes_of(b);
  const PowerOfTwoFold fold{b.rank(), b.nranks()};
  if (append_allreduce_outside_fold(b, fold, n)) return;
  const int partner = fold.fold_partner();
  const int k = floor_power_of_two(std::max(2, a.params.radix ? a.params.radix : kDefaultRadix));
  const std::vector<int> radices = round_radices(fold.pof2(), k);
  const int rounds = static_cast<int>(radices.size());
  const BufRef spare = b.scratch(n);
  const BufRef landings = b.scratch(static_cast<size_t>(k - 1) * n);
  // The last round writes the output; earlier ones alternate with `spare`.
  auto dst_of = [&](int round) { return (rounds - 1 - round) % 2 == 0 ? output() : spare; };
  BufRef cur = input();
  if (partner >= 0) {
    const BufRef into = dst_of(0) == output() ? spare : output();
    cur = append_fold_in(b, fold, input(), into, spare, n);
  } else if (a.in_place && dst_of(0) == output()) {
    // Round 0 must not write the input it sends.
    b.copy(spare, input(), n);
    cur = spare;
  }
  const int nr = fold.new_rank();
  int stride = 1;
  for (int round = 0; round < rounds; ++round) {
    const int r = radices[static_cast<size_t>(round)];
    const int mine = nr / stride % r;        // this participant's place in its group
    const int base = nr - mine * stride;     // the group's first participant
    auto landing = [&](int i) { return landings + static_cast<size_t>(i < mine ? i : i - 1) * n; };
    for (int i = 0; i < r; ++i)
      if (i != mine) b.send(fold.real_rank(base + i * stride), cur, n, chunk);
    for (int i = 0; i < r; ++i)
      if (i != mine) b.recv(fold.real_rank(base + i * stride), landing(i), n, chunk);
    b.end_round();
    // Every member reduces the group's vectors in group order.
    const BufRef dst = dst_of(round);
    auto vector_of = [&](int i) { return i == mine ? cur : landing(i); };
    b.reduce(dst, vector_of(0), vector_of(1), n);
    for (int i = 2; i < r; ++i) b.reduce(dst, dst, vector_of(i), n);
    cur = dst;
    stride *= r;
  }
  b.finalize(output(), n);
  if (partner >= 0) b.send(partner, output(), n, chunk);
}

}  // namespace

extern const Algorithm kAllreduceRecursiveMultiplying{
    "recursive_multiplying", Collective::Allreduce,
    "log_k(P) rounds exchanging the whole vector with the k-1 others of a group (radix k, "
    "default 4); fewer latencies than recursive doubling on many ranks",
    accept_all, build};

}  // namespace tutti::algos
