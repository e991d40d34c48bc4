// Personalized-exchange building blocks shared by alltoall and alltoallv:
// a per-peer layout in bytes (uniform blocks for alltoall, the caller's
// counts/displacements for alltoallv), a pairwise exchange (P-1 shifted
// rounds, or a round-robin pairing for in-place calls) and a linear exchange
// (everything posted in one round).
//
// In-place calls (Input == Output, send layout == receive layout, counts
// symmetric between every pair, as MPI_IN_PLACE requires) are handled here:
// builders pass the layout and nothing else.
#pragma once

#include <vector>

#include "engine/schedule.hpp"

namespace tutti::algos {

// Where this rank's data for/from each peer lies, in bytes. send_* index
// Input, recv_* index Output. Own entries (peer == rank) are the local copy.
struct ExchangeLayout {
  std::vector<size_t> send_off, send_bytes, recv_off, recv_bytes;
  size_t max_recv_bytes() const;
  size_t send_extent() const;  // end of the last non-empty send block
};

// alltoall: block p of one rank's buffer is count elements at p * count.
ExchangeLayout alltoall_exchange_layout(const ScheduleBuilder& b);
// alltoallv: args.send_counts/... (elements) times the element size.
ExchangeLayout alltoallv_exchange_layout(const ScheduleBuilder& b);

// Round-robin tournament (circle method) on nranks players: in every round
// each rank is paired with one peer (or none: -1, once per rank for odd
// nranks), and over pairing_rounds(nranks) rounds it meets every other rank
// exactly once. The pairing is symmetric: peer(peer(r)) == r.
int pairing_rounds(int nranks);
int pairing_peer(int rank, int nranks, int round);

// Pairwise exchange. Out of place: round k = 1..P-1 sends to r+k and
// receives from r-k (every rank sends and receives once per round, links
// balanced), 0 scratch. In place: round-robin pairing, so a round sends and
// receives the same block; the message lands in a one-block scratch and is
// copied into place at the start of the next round. P-1 rounds (P for odd P).
void append_pairwise_exchange(ScheduleBuilder& b, const ExchangeLayout& layout);

// Linear exchange: one round posting all P-1 receives and sends. In place,
// the input is first copied to scratch (send_extent() bytes) and sent from
// there.
void append_linear_exchange(ScheduleBuilder& b, const ExchangeLayout& layout);

}  // namespace tutti::algos
