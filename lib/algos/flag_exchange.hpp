// The personalized exchange through the shared segment's flag lines, shared
// by alltoall "lines" and alltoallv "shm" (single node):
//   - a block of up to kMaxFlagPieces signals (SharedSegment::carry_bytes
//     each: 384 bytes on up to 16 ranks) rides in the flag lines, as many
//     signals to one peer a round as its lines hold unread (4): a round's
//     signals all go out before its waits, so no more may be outstanding
//     to one peer than the lines can hold;
//   - a larger block is read in place by its receiver (cross-memory
//     attach): its owner publishes to that reader the block's address (a
//     signal: only the owner knows its displacements), the reader copies
//     it, signals the owner, and every owner waits for its readers;
//   - without peer reads (TUTTI_CMA=0, a kernel that forbids them) the
//     larger blocks go as messages, in the rounds of alltoallv "pairwise".
// Both ranks of a pair know that pair's byte count, so they agree on the
// way without asking anyone (a rule on the largest block would need every
// rank's counts), and peer reads are the topology's agreed flag. Empty
// blocks move nothing. In place (Input == Output) the input is first
// copied to scratch (up to the end of its last non-empty block) and the
// signals, the reads and the sends take it from there.
//   Traffic:  a small block is copied into the lines and out of them; a
//             large one once, from its owner's buffer into its reader's.
//   Rounds:   the most pieces of any of the rank's blocks / 4, then 2 flag
//             rounds for the large blocks (by messages: up to P-1 rounds).
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

// How the blocks go, the same for the schedule and the direct run.
struct FlagPieces {
  size_t carry, per_round;
  bool reads;  // larger blocks are read in place (else sent as messages)
  FlagPieces(int nranks, bool peer_reads)
      : carry(SharedSegment::carry_bytes(nranks)),
        per_round(static_cast<size_t>(SharedSegment::signal_groups(nranks))),
        reads(peer_reads) {}
  size_t pieces(size_t bytes) const {
    return bytes > 0 && bytes <= kMaxFlagPieces * carry ? (bytes + carry - 1) / carry : 0;
  }
  bool large(size_t bytes) const { return bytes > 0 && pieces(bytes) == 0; }
  bool as_read(size_t bytes) const { return reads && large(bytes); }
  bool as_message(size_t bytes) const { return !reads && large(bytes); }
  // Rounds of pieces rank r needs (0 if it has no block in the lines), from
  // the bytes of its blocks to and from each rank.
  template <typename SendBytes, typename RecvBytes>
  size_t rounds(int nranks, int r, SendBytes send, RecvBytes recv) const {
    size_t most = 0;
    for (int q = 0; q < nranks; ++q)
      if (q != r) most = std::max({most, pieces(send(q)), pieces(recv(q))});
    return (most + per_round - 1) / per_round;
  }
  // Pieces [first, end) of a block of `bytes` in round j; piece i starts at
  // i x carry.
  size_t first(size_t j) const { return j * per_round; }
  size_t end(size_t j, size_t bytes) const { return std::min(pieces(bytes), (j + 1) * per_round); }
  size_t length(size_t i, size_t bytes) const { return std::min(carry, bytes - i * carry); }
};

// Single node with a segment.
Refusal refuse_flag_exchange(const CollArgs&, const Topology& topo);

// The exchange of `l`'s blocks as above.
void append_flag_exchange(ScheduleBuilder& b, const ExchangeLayout& l);

// A blocking call whose blocks all go in the flag lines (its schedule
// neither sends a message nor reads a peer), out of place, runs directly
// (engine/direct_call.hpp): alltoallv of 8 B on 2 ranks through
// libtutti-mpi took 0.46 us by the engine, Open MPI 0.28.
inline bool flag_exchange_direct_applies(const CollArgs& a, const Schedule& schedule, int nranks) {
  return nranks > 1 && !a.in_place && !schedule.uses_transport && !schedule.uses_peer_reads;
}

// append_flag_exchange's steps, in its order, without the engine (and
// without allocating: a layout's vectors cost more than the exchange), for
// a call where flag_exchange_direct_applies. send(q)/recv(q): the bytes of
// the blocks to and from rank q; send_at(q)/recv_at(q): where they are.
template <typename Send, typename Recv, typename SendAt, typename RecvAt>
bool run_flag_exchange_direct(const DirectCall& c, Send send, Recv recv, SendAt send_at,
                              RecvAt recv_at) {
  const int p = c.nranks, r = c.rank;
  if (recv(r) > 0) std::memcpy(recv_at(r), send_at(r), recv(r));
  const FlagPieces f(p, false);  // no block is large
  for (size_t j = 0, rounds = f.rounds(p, r, send, recv); j < rounds; ++j) {
    for (int k = 1; k < p; ++k) {
      const int to = mod(r + k, p);
      for (size_t i = f.first(j); i < f.end(j, send(to)); ++i)
        if (!direct_signal(c, to, send_at(to) + i * f.carry, f.length(i, send(to)))) return false;
    }
    for (int k = 1; k < p; ++k) {
      const int from = mod(r - k, p);
      for (size_t i = f.first(j); i < f.end(j, recv(from)); ++i)
        if (!direct_wait(c, from, recv_at(from) + i * f.carry, f.length(i, recv(from))))
          return false;
    }
  }
  return true;
}

}  // namespace tutti::algos
