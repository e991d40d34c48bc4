// Recursive halving / doubling building blocks over the power-of-two
// participants of a PowerOfTwoFold (Rabenseifner's composition): fold the
// extra ranks in, reduce-scatter by recursive vector halving, then either
// allgather by recursive doubling (allreduce) or gather the blocks to one
// participant (reduce). After the reduce-scatter participant i holds the
// fully reduced block i of the participants' partition.
//
// All pieces take the partition as ParticipantBlocks: pof2 contiguous blocks,
// in elements, that may be empty (counts smaller than pof2) or of unequal
// sizes (reduce_scatter, where a participant stands for its folded partner's
// block as well). Every message is pipelined in chunk_bytes_of(b) pieces.
#pragma once

#include <cstddef>
#include <vector>

#include "algos/patterns.hpp"
#include "engine/schedule.hpp"

namespace tutti::algos {

// Participant i owns elements [offset(i), offset(i + 1)) of the vector.
struct ParticipantBlocks {
  std::vector<size_t> bounds;  // parts + 1 non-decreasing element offsets

  int parts() const { return static_cast<int>(bounds.size()) - 1; }
  size_t offset(int i) const { return bounds[static_cast<size_t>(i)]; }
  size_t size(int i) const { return span_size(i, 1); }
  // Elements of blocks [first, first + n).
  size_t span_size(int first, int n) const { return offset(first + n) - offset(first); }
};

// `count` elements of `elem_size` bytes split into `parts` near-equal
// blocks 16 bytes apart (aligned_blocks).
ParticipantBlocks even_participant_blocks(size_t count, int parts, size_t elem_size);

// For a vector of nranks blocks of `block_count` elements (reduce_scatter):
// participant i owns the blocks of the ranks it stands for, i.e. its own and,
// below 2*extra, its folded partner's (rank 2i, which precedes it).
ParticipantBlocks folded_rank_blocks(const PowerOfTwoFold& fold, size_t block_count);

// Scratch a reduce-scatter receive lands in: the larger half of the vector.
size_t recursive_halving_landing_bytes(const ParticipantBlocks& blocks, size_t elem_size);

// Folds the extra ranks in. A folded rank sends `in` (bytes) to its partner;
// the partner reduces it with its own `in` into `work`, the message landing
// in `landing` (which may be `work` itself unless `work` aliases `in`). Ends
// the round. Returns where this participant's vector now is: `work` for a
// partner, `in` for everyone else.
BufRef append_fold_in(ScheduleBuilder& b, const PowerOfTwoFold& fold, BufRef in, BufRef work,
                      BufRef landing, size_t bytes);

// The allreduce ranks outside the main phase: a lone rank copies its input
// to the output; a folded rank hands its input to its partner and receives
// the result into the output. Returns true if this rank's schedule is then
// complete (the allreduces by recursive doubling, halving and multiplying).
bool append_allreduce_outside_fold(ScheduleBuilder& b, const PowerOfTwoFold& fold, size_t bytes);

// Reduce-scatter by recursive vector halving, distance halving (pof2/2 first),
// on a participant of `fold`. The first exchange reads `src` (the whole
// vector); the kept halves are reduced into `work` (same layout). After it
// block new_rank() of `work` is fully reduced (not finalized). `landing`:
// recursive_halving_landing_bytes of scratch. `src` may be `work`, or the
// same memory as `work` (in-place): it is read only where it is written.
void append_recursive_halving_reduce_scatter(ScheduleBuilder& b, const PowerOfTwoFold& fold,
                                             const ParticipantBlocks& blocks, BufRef src,
                                             BufRef work, BufRef landing);

// Allgather by recursive doubling (distance 1 first) on `work`: on entry
// participant i's block i is in place, on exit every block is.
void append_recursive_doubling_allgather(ScheduleBuilder& b, const PowerOfTwoFold& fold,
                                         const ParticipantBlocks& blocks, BufRef work);

// Gathers every participant's block i of `work` to participant `root` (a
// participant number), distance 1 first: the binomial gather that mirrors
// the reduce-scatter. Only `root` ends with the whole vector.
void append_recursive_doubling_gather(ScheduleBuilder& b, const PowerOfTwoFold& fold,
                                      const ParticipantBlocks& blocks, BufRef work, int root);

}  // namespace tutti::algos
