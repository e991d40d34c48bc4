// The personalized exchange through the shared segment, shared by alltoall
// "lines" and alltoallv "shm" (single node). Each block goes one of these
// ways, by its size:
//   - up to one round of signals (4, as many to one peer as its lines hold
//     unread: a round's signals all go out before its waits; each carries
//     SharedSegment::carry_bytes, 384 bytes on up to 16 ranks), without
//     slots (a small segment) up to kMaxFlagPieces signals, it rides in the
//     flag lines;
//   - up to the stage limit (flag_exchange_stage_limit: 128 KiB, 4 KiB on 2
//     ranks whose peer reads are fast) its owner copies it into a slot of
//     the segment before the first flag round, and its reader copies it out
//     after that round. The call is then one chunk of the slots
//     (shm_common.hpp): the first round signals every peer (an empty signal
//     where a pair has no piece in the lines), a full synchronisation;
//   - on 2 ranks, a block of kChunkedBlockFrom (512 KiB) or more goes
//     through the slots too, in chunks after the first (both ranks know
//     both blocks, so they agree on the number of chunks);
//   - a larger block is read in place by its receiver (cross-memory
//     attach): its owner publishes to that reader the block's address (a
//     signal: only the owner knows its displacements), the reader copies
//     it, signals the owner, and every owner waits for its readers;
//   - without peer reads (TUTTI_CMA=0, a kernel that forbids them) the
//     larger blocks go as messages, in the rounds of alltoallv "pairwise".
// Both ranks of a pair know that pair's byte count, so they agree on the
// way without asking anyone (a rule on the largest block would need every
// rank's counts), and peer reads, their speed and the segment's size are
// agreed. Whether a call takes a chunk must be agreed too: alltoallv's
// calls always take one (no rank knows the others' counts), alltoall's
// where its equal blocks are staged. Empty blocks move nothing. In place
// (Input == Output) the input is first copied to scratch (up to the end of
// its last non-empty block) and the signals, slots, reads and sends take
// it from there.
//   Traffic:  a block in the lines or a slot (or chunks of slots) is
//             copied in and out; a large one once, from its owner's buffer
//             into its reader's.
//   Rounds:   the most pieces of any of the rank's blocks / 4 (at least 1
//             with a chunk), then on 2 ranks one synchronisation per 1 MiB
//             of the larger chunked block, then 2 flag rounds for the large
//             blocks (by messages: up to P-1 rounds).
//   Why the slots: a read's system call costs several microseconds
//             whatever its size; 4-64 KiB blocks through a read took
//             1.1-1.2x Open MPI's alltoallv time (2 and 4 ranks, 8-128 KiB
//             per rank, 2026-11-29), where alltoall's slots take 0.3-0.7x.
#pragma once

#include <algorithm>
#include <cstring>

#include "algos/alltoall_common.hpp"
#include "algos/patterns.hpp"
#include "algos/shm_common.hpp"
#include "algos/shm_direct.hpp"

namespace tutti::algos {

// Most flag-line signals one block takes (more: read in place, or a
// message). 8 signals (3 KiB blocks) are about where a message through UCX
// is as fast.
inline constexpr size_t kMaxFlagPieces = 8;

// Largest block staged through a slot: 128 KiB (alltoall's rules stage up
// to 256 KiB per rank, "shm"); where peer reads are fast on 2 ranks 4 KiB
// (alltoall's rules read 8 KiB blocks there, "cma").
inline constexpr size_t kMaxStagedBlock = 128 * 1024;
inline constexpr size_t kMaxStagedBlockFastReads = 4 * 1024;

// On 2 ranks blocks from 512 KiB go through the slots in chunks of 1 MiB
// (each a full synchronisation, as alltoall "shm"): blocks of 512 KiB-1 MiB
// 0.64-0.71 of Open MPI's time against the reads' 0.98-1.13, 2-8 MiB
// 0.75-0.93 against 0.73-1.02; blocks of 128-256 KiB lost back to back
// (1.27-1.41 against 0.98-1.16), and chunks of 128-256 KiB lost or were
// level (5 alternating jobs, 2026-11-30: docs/perf/alltoallv-chunks-2026-11-30.txt).
inline constexpr size_t kChunkedBlockFrom = 512 * 1024;
inline constexpr size_t kChunkedSlotBytes = 1024 * 1024;

// The stage limit of a call (0: no block is staged), the same on every
// rank: at most a slot of P slots per rank in half the segment.
inline size_t flag_exchange_stage_limit(const Topology& topo, size_t capacity, size_t chunk_bytes) {
  const size_t most =
      topo.nranks == 2 && topo.fast_reads ? kMaxStagedBlockFastReads : kMaxStagedBlock;
  const size_t slot = std::min(
      most, shm_slot_bytes(capacity, topo.nranks, chunk_bytes, static_cast<size_t>(topo.nranks)));
  const size_t one_round = static_cast<size_t>(SharedSegment::signal_groups(topo.nranks)) *
                           SharedSegment::carry_bytes(topo.nranks);
  return slot > one_round ? slot : 0;
}

// How the blocks go, the same for the schedule and the direct run.
struct FlagPieces {
  size_t carry, per_round;
  bool reads;  // larger blocks are read in place (else sent as messages)
  size_t stage_limit;  // blocks above the lines' and up to this go in a slot
  // From this size blocks go through the slots in chunks (2 ranks with
  // slots: kChunkedBlockFrom).
  size_t chunked_from = SIZE_MAX;
  FlagPieces(int nranks, bool peer_reads, size_t stage_limit_bytes)
      : carry(SharedSegment::carry_bytes(nranks)),
        per_round(static_cast<size_t>(SharedSegment::signal_groups(nranks))),
        reads(peer_reads),
        stage_limit(stage_limit_bytes) {}
  // With slots a block rides in the lines only if it fits one round: a
  // second round of flags costs more than a staged block's two copies.
  size_t most_pieces() const { return stage_limit > 0 ? per_round : kMaxFlagPieces; }
  size_t pieces(size_t bytes) const {
    return bytes > 0 && bytes <= most_pieces() * carry ? (bytes + carry - 1) / carry : 0;
  }
  bool staged(size_t bytes) const { return bytes > most_pieces() * carry && bytes <= stage_limit; }
  bool chunked(size_t bytes) const { return bytes >= chunked_from; }
  // Read in place or sent as a message.
  bool large(size_t bytes) const {
    return bytes > 0 && pieces(bytes) == 0 && !staged(bytes) && !chunked(bytes);
  }
  bool as_read(size_t bytes) const { return reads && large(bytes); }
  bool as_message(size_t bytes) const { return !reads && large(bytes); }
  // Rounds of pieces rank r needs (0 if it has no block in the lines; at
  // least 1 in a call with a chunk, whose first round synchronises), from
  // the bytes of its blocks to and from each rank.
  template <typename SendBytes, typename RecvBytes>
  size_t rounds(int nranks, int r, SendBytes send, RecvBytes recv, bool chunk) const {
    size_t most = chunk ? 1 : 0;
    for (int q = 0; q < nranks; ++q)
      if (q != r) most = std::max({most, pieces(send(q)), pieces(recv(q))});
    return (most + per_round - 1) / per_round;
  }
  // Whether round j of a pair of `bytes` carries an empty signal: the first
  // round of a call with a chunk, where the pair has no piece in it.
  bool empty_signal(size_t j, size_t bytes, bool chunk) const {
    return chunk && j == 0 && pieces(bytes) == 0;
  }
  // Pieces [first, end) of a block of `bytes` in round j; piece i starts at
  // i x carry.
  size_t first(size_t j) const { return j * per_round; }
  size_t end(size_t j, size_t bytes) const { return std::min(pieces(bytes), (j + 1) * per_round); }
  size_t length(size_t i, size_t bytes) const { return std::min(carry, bytes - i * carry); }
};

// Single node with a segment.
Refusal refuse_flag_exchange(const CollArgs&, const Topology& topo);

// The exchange of `l`'s blocks as above; `counts_differ`: the ranks' block
// sizes may differ (alltoallv), so the call always takes a chunk.
void append_flag_exchange(ScheduleBuilder& b, const ExchangeLayout& l, bool counts_differ);

// A blocking call whose blocks all go in the flag lines or slots (its
// schedule neither sends a message nor reads a peer), out of place, runs
// directly
// (engine/direct_call.hpp): alltoallv of 8 B on 2 ranks through
// libtutti-mpi took 0.46 us by the engine, Open MPI 0.28.
inline bool flag_exchange_direct_applies(const CollArgs& a, const Schedule& schedule, int nranks) {
  return nranks > 1 && !a.in_place && !schedule.uses_transport && !schedule.uses_peer_reads &&
         schedule.shm_chunks <= 1;
}

// append_flag_exchange's steps, in its order, without the engine (and
// without allocating: a layout's vectors cost more than the exchange), for
// a call where flag_exchange_direct_applies. send(q)/recv(q): the bytes of
// the blocks to and from rank q; send_at(q)/recv_at(q): where they are.
template <typename Send, typename Recv, typename SendAt, typename RecvAt>
bool run_flag_exchange_direct(const DirectCall& c, Send send, Recv recv, SendAt send_at,
                              RecvAt recv_at) {
  const int p = c.nranks, r = c.rank;
  const size_t pp = static_cast<size_t>(p);
  if (recv(r) > 0) std::memcpy(recv_at(r), send_at(r), recv(r));
  // A chunk's slots: P per rank of stage_limit bytes each (ShmSlots::at).
  // Without a chunk nothing is staged, and the pieces match the
  // schedule's: its blocks fit one round, or the segment has no slots.
  const bool chunk = c.schedule.shm_chunks == 1;
  const size_t stage_limit = chunk ? c.schedule.slot_area_bytes / (pp * pp) : 0;
  const FlagPieces f(p, false, stage_limit);  // no block is large
  char* slots = nullptr;
  if (chunk) slots = DirectSlots(c).at(0);
  auto slot = [&](int owner, int reader) {
    return slots + (static_cast<size_t>(owner) * pp + static_cast<size_t>(reader)) * stage_limit;
  };
  for (int k = 1; k < p; ++k) {
    const int to = mod(r + k, p);
    if (f.staged(send(to))) std::memcpy(slot(r, to), send_at(to), send(to));
  }
  for (size_t j = 0, rounds = f.rounds(p, r, send, recv, chunk); j < rounds; ++j) {
    for (int k = 1; k < p; ++k) {
      const int to = mod(r + k, p);
      if (f.empty_signal(j, send(to), chunk) && !direct_signal(c, to, nullptr, 0)) return false;
      for (size_t i = f.first(j); i < f.end(j, send(to)); ++i)
        if (!direct_signal(c, to, send_at(to) + i * f.carry, f.length(i, send(to)))) return false;
    }
    for (int k = 1; k < p; ++k) {
      const int from = mod(r - k, p);
      if (f.empty_signal(j, recv(from), chunk) && !direct_wait(c, from, nullptr, 0)) return false;
      for (size_t i = f.first(j); i < f.end(j, recv(from)); ++i)
        if (!direct_wait(c, from, recv_at(from) + i * f.carry, f.length(i, recv(from))))
          return false;
    }
    if (j == 0)
      for (int k = 1; k < p; ++k) {
        const int from = mod(r - k, p);
        if (f.staged(recv(from))) std::memcpy(recv_at(from), slot(from, r), recv(from));
      }
  }
  return true;
}

}  // namespace tutti::algos
