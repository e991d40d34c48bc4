#include "algos/recursive_halving.hpp"

#include <algorithm>

#include "algos/ring.hpp"

namespace tutti::algos {

ParticipantBlocks even_participant_blocks(size_t count, int parts, size_t elem_size) {
  return {aligned_blocks(count, parts, elem_size).offsets()};
}

ParticipantBlocks folded_rank_blocks(const PowerOfTwoFold& fold, size_t block_count) {
  const int pof2 = fold.pof2(), extra = fold.extra();
  ParticipantBlocks out;
  out.bounds.reserve(static_cast<size_t>(pof2) + 1);
  // Participant i stands for ranks [2i, 2i+2) below extra, else rank i+extra;
  // i = pof2 gives nranks, the end of the vector.
  for (int i = 0; i <= pof2; ++i) {
    const int first_rank = i < extra ? 2 * i : i + extra;
    out.bounds.push_back(static_cast<size_t>(first_rank) * block_count);
  }
  return out;
}

size_t recursive_halving_landing_bytes(const ParticipantBlocks& blocks, size_t elem_size) {
  const int half = blocks.parts() / 2;
  if (half == 0) return 0;
  // Every later window lies inside one of the first exchange's halves.
  return std::max(blocks.span_size(0, half), blocks.span_size(half, half)) * elem_size;
}

bool append_allreduce_outside_fold(ScheduleBuilder& b, const PowerOfTwoFold& fold, size_t bytes) {
  if (b.nranks() == 1) {
    if (!b.args().in_place) b.copy(output(), input(), bytes);
    return true;
  }
  if (!fold.folded()) return false;
  append_fold_in(b, fold, input(), output(), output(), bytes);
  b.recv(fold.fold_partner(), output(), bytes, chunk_bytes_of(b));
  return true;
}

BufRef append_fold_in(ScheduleBuilder& b, const PowerOfTwoFold& fold, BufRef in, BufRef work,
                      BufRef landing, size_t bytes) {
  const int partner = fold.fold_partner();
  if (partner < 0) return in;
  const size_t chunk = chunk_bytes_of(b);
  if (fold.folded()) {
    b.send(partner, in, bytes, chunk);
    b.end_round();
    return in;
  }
  b.recv_reduce(partner, work, in, landing, bytes, chunk);
  b.end_round();
  return work;
}

// Before the exchange at distance `mask` the window is blocks [lo, lo + 2 mask):
// the lower participant of the pair keeps the lower half, the upper one the
// upper half, so participant i ends with window [i, i + 1).
void append_recursive_halving_reduce_scatter(ScheduleBuilder& b, const PowerOfTwoFold& fold,
                                             const ParticipantBlocks& blocks, BufRef src,
                                             BufRef work, BufRef landing) {
  const int nr = fold.new_rank();
  const size_t es = b.elem_size();
  const size_t chunk = chunk_bytes_of(b);
  int lo = 0;
  BufRef from = src;
  for (int mask = fold.pof2() / 2; mask >= 1; mask >>= 1) {
    const int peer = fold.real_rank(nr ^ mask);
    const bool upper = (nr & mask) != 0;
    const int keep = upper ? lo + mask : lo;
    const int give = upper ? lo : lo + mask;
    b.send(peer, from + blocks.offset(give) * es, blocks.span_size(give, mask) * es, chunk);
    b.recv_reduce(peer, work + blocks.offset(keep) * es, from + blocks.offset(keep) * es, landing,
                  blocks.span_size(keep, mask) * es, chunk);
    b.end_round();
    lo = keep;
    from = work;
  }
}

// At distance `mask` participant i holds the aligned window of `mask` blocks
// containing i and swaps it for its partner's.
void append_recursive_doubling_allgather(ScheduleBuilder& b, const PowerOfTwoFold& fold,
                                         const ParticipantBlocks& blocks, BufRef work) {
  const int nr = fold.new_rank();
  const size_t es = b.elem_size();
  const size_t chunk = chunk_bytes_of(b);
  for (int mask = 1; mask < fold.pof2(); mask <<= 1) {
    const int peer_nr = nr ^ mask;
    const int mine = nr & ~(mask - 1), theirs = peer_nr & ~(mask - 1);
    const int peer = fold.real_rank(peer_nr);
    b.send(peer, work + blocks.offset(mine) * es, blocks.span_size(mine, mask) * es, chunk);
    b.recv(peer, work + blocks.offset(theirs) * es, blocks.span_size(theirs, mask) * es, chunk);
    b.end_round();
  }
}

// At distance `mask` the participants that agree with `root` on the bits
// below mask still hold data (an aligned window of mask blocks); of each pair
// the one agreeing with root on bit mask receives, the other sends and is done.
void append_recursive_doubling_gather(ScheduleBuilder& b, const PowerOfTwoFold& fold,
                                      const ParticipantBlocks& blocks, BufRef work, int root) {
  const int nr = fold.new_rank();
  const size_t es = b.elem_size();
  const size_t chunk = chunk_bytes_of(b);
  const int rel = nr ^ root;
  for (int mask = 1; mask < fold.pof2(); mask <<= 1) {
    const int peer_nr = nr ^ mask;
    const int peer = fold.real_rank(peer_nr);
    if (rel & mask) {
      const int mine = nr & ~(mask - 1);
      b.send(peer, work + blocks.offset(mine) * es, blocks.span_size(mine, mask) * es, chunk);
      b.end_round();
      return;
    }
    const int theirs = peer_nr & ~(mask - 1);
    b.recv(peer, work + blocks.offset(theirs) * es, blocks.span_size(theirs, mask) * es, chunk);
    b.end_round();
  }
}

}  // namespace tutti::algos
