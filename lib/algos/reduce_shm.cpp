// reduce "shm": through the node's shared segment (single-node jobs).
//   Steps:    per chunk (params.chunk_bytes, capped by the segment): every
//             rank but the root copies its chunk into its slot; full
//             synchronisation; the root reduces the P chunks (its own
//             from its input) in rank order into its output; then avg.
//             Chunks alternate parities (shm_common.hpp): no closing
//             synchronisation.
//   Traffic:  one copy in per rank but the root (in place on a root
//             above 1: the root too); the root reads (P-1) x n from the
//             shared cache and its own n, and writes n. No messages.
//   Scratch:  none; shared: 2 x P x chunk.
//   Rounds:   2 per chunk.
//   Small:    a vector of at most carry_bytes (384 bytes on up to 16
//             ranks) goes to the root in the flag lines (shm_common.hpp),
//             one way: the others signal and return, the root waits for
//             them all; scratch P x n at the root. A blocking call this
//             small runs directly (engine/direct_call.hpp): the same steps
//             without the engine; so does one of a single chunk below
//             kDirectSlotsBelow (4 KiB), through the slots.
#include <cstring>

#include "algos/shm_common.hpp"
#include "algos/shm_direct.hpp"

namespace tutti::algos {
namespace {

Refusal refuse(const CollArgs& a, const Topology& topo) { return refuse_shm(a, topo, 1); }

// Whether the root copies its own vector into its slot like the others.
// It need not: it reduces from its input where it lies, which saves a copy
// of the vector on the rank that does all the reducing (2 ranks, 64 KiB
// back to back: the root's work per call drops from a copy and a reduction
// to the reduction). In place, the output overwrites the input as the
// reduction goes; that is safe where the input is the first or second
// operand of the first pass (host_reduce: dst may be exactly a or b), i.e.
// on roots 0 and 1; a later root still stages its vector first.
bool root_stages_own(const CollArgs& a, int rank) {
  return rank == a.root && a.in_place && a.root > 1;
}

// The vectors travel to the root only, and nobody answers (the flag lines'
// acknowledgements keep a sender at most signal_groups calls ahead).
void build_inline(ScheduleBuilder& b, size_t n) {
  const int p = b.nranks(), r = b.rank(), root = b.args().root;
  if (r != root) {
    b.shm_signal(root, input(), n);
    return;
  }
  const BufRef values = b.scratch(static_cast<size_t>(p) * n);
  auto value = [&](int q) { return values + static_cast<size_t>(q) * n; };
  b.copy(value(r), input(), n);
  for (int q = 0; q < p; ++q)
    if (q != r) b.shm_wait(q, value(q), n);
  b.end_round();
  append_reduce_in_rank_order(b, output(), n, value);
}

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank();
  const size_t n = a.count * b.elem_size();
  if (p == 1) {
    b.copy(output(), input(), n);
    return;
  }
  if (n == 0) return;
  if (shm_fits_inline(n, p)) return build_inline(b, n);
  const ShmSlots slots = shm_slots(b, 1, n);
  const bool root_stages = root_stages_own(a, r);
  for (size_t off = 0; off < n; off += slots.slot) {
    const size_t c = std::min(slots.slot, n - off);
    const int parity = b.begin_shm_chunk();
    if (r != a.root || root_stages) b.copy(slots.at(parity, r), input(off), c);
    append_shm_sync_all(b);
    if (r == a.root)
      append_reduce_in_rank_order(b, output(off), c, [&](int q) {
        return q == r && !root_stages ? input(off) : slots.at(parity, q);
      });
  }
}

// build_inline's steps, in its order, without the engine.
bool run_direct_inline(const DirectCall& c, size_t n) {
  const int root = c.args.root;
  if (c.rank != root) return direct_signal(c, root, c.input, n);
  char* values = static_cast<char*>(c.scratch);
  auto value = [&](int q) { return values + static_cast<size_t>(q) * n; };
  std::memcpy(value(c.rank), c.input, n);
  for (int q = 0; q < c.nranks; ++q)
    if (q != c.rank && !direct_wait(c, q, value(q), n)) return false;
  direct_reduce_in_rank_order(c, c.output, value);
  return true;
}

// A blocking call of one chunk: build's steps, in its order, in the slots
// the engine would use.
bool run_direct_slots(const DirectCall& c, size_t n) {
  const DirectSlots slots(c);
  const bool root = c.rank == c.args.root, root_stages = root_stages_own(c.args, c.rank);
  if (!root || root_stages) std::memcpy(slots.at(c.rank), c.input, n);
  if (!direct_sync_all(c)) return false;
  if (root)
    direct_reduce_in_rank_order(c, c.output, [&](int q) {
      return q == c.rank && !root_stages ? c.input : slots.at(q);
    });
  return true;
}

bool run_direct(const DirectCall& c) {
  const size_t n = c.args.count * c.args.elem_size();
  return c.schedule.shm_chunks == 0 ? run_direct_inline(c, n) : run_direct_slots(c, n);
}

}  // namespace

extern const Algorithm kReduceShm{
    "shm", Collective::Reduce, "single node: ranks stage chunks in shared memory, the root reduces them",
    refuse, build, direct_fits_or_one_slot, run_direct};

}  // namespace tutti::algos
