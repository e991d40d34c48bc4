// alltoallv "shm": single node; small blocks ride in the segment's flag
// lines, larger ones go as messages.
//   Steps:    copy the own block; to each peer its block in the flag lines
//             where it takes at most kMaxPieces signals
//             (SharedSegment::carry_bytes each: 384 bytes on up to 16
//             ranks), as many a round as the lines hold unread (4); then
//             the larger blocks in the rounds of alltoallv "pairwise".
//             Both ranks of a pair know that pair's byte count, so they
//             agree on the way without asking anyone (a rule on the
//             largest block would need every rank's counts). Empty blocks
//             move nothing.
//             In place (Input == Output): the input is first copied to
//             scratch (up to the end of its last non-empty block) and both
//             the signals and the sends read from there.
//   Traffic:  a small block is copied into the lines and out of them; a
//             large one as alltoallv "pairwise" sends it.
//   Scratch:  0; in place the input's extent.
//   Rounds:   the most pieces of any of the rank's blocks / 4, then up to
//             P-1 for the large blocks. Cost: about a flag round per 4
//             pieces, then (P-1) alpha + max(sent, received) beta of the
//             large blocks.
//   Why:      alltoallv of 8-512 B on 2 ranks took 0.73-1.0 us by
//             messages against Open MPI's 0.52-0.62, in the flag lines
//             0.25-0.43 (2026-11-28): a message through UCX costs several
//             flag rounds. 8 signals (3 KiB blocks) are about where a
//             message is as fast.
//   Refuses:  ranks on more than one node, no shared segment.
#include "algos/alltoall_common.hpp"
#include "algos/patterns.hpp"
#include "algos/shm_common.hpp"

#include <algorithm>

namespace tutti::algos {
namespace {

// Most flag-line signals one block takes (more: a message).
constexpr size_t kMaxPieces = 8;

Refusal refuse(const CollArgs&, const Topology& topo) {
  if (topo.nnodes != 1) return "needs all ranks on one node";
  if (topo.shared_bytes == 0) return "no shared-memory segment (TUTTI_SHM_BYTES=0 or unavailable)";
  return std::nullopt;
}

void build(ScheduleBuilder& b) {
  const ExchangeLayout l = alltoallv_exchange_layout(b);
  const int p = b.nranks(), r = b.rank();
  if (!b.args().in_place) b.copy(output(l.recv_off[r]), input(l.send_off[r]), l.recv_bytes[r]);
  if (p == 1) return;
  BufRef send_base = input();
  if (b.args().in_place) {
    // Receives overwrite blocks still to be sent: send from a copy.
    const size_t extent = l.send_extent();
    send_base = b.scratch(extent);
    b.copy(send_base, output(), extent);
  }
  // A block of up to kMaxPieces x carry bytes goes in that many signals,
  // up to `per_round` of them a round; a larger one as a message.
  const size_t carry = SharedSegment::carry_bytes(p);
  const auto pieces = [carry](size_t bytes) {
    return bytes > 0 && bytes <= kMaxPieces * carry ? (bytes + carry - 1) / carry : 0;
  };
  // As many signals to one peer as its flag lines hold unread (whether or
  // not ranks share cores): a round's signals all go out before its waits,
  // so no more may be outstanding to one peer than the lines can hold.
  const size_t per_round = static_cast<size_t>(SharedSegment::signal_groups(p));
  size_t rounds = 0;
  for (int q = 0; q < p; ++q)
    if (q != r) {
      const size_t most = std::max(pieces(l.send_bytes[q]), pieces(l.recv_bytes[q]));
      rounds = std::max(rounds, (most + per_round - 1) / per_round);
    }
  // Round j carries pieces [j, j+1) x per_round of every block: signals
  // first, then waits. The ranks in the lowest round can always go on:
  // their peers have taken every earlier piece, and have sent or will send
  // this round's.
  for (size_t j = 0; j < rounds; ++j) {
    for (int k = 1; k < p; ++k) {
      const int to = mod(r + k, p);
      const size_t n = l.send_bytes[to];
      for (size_t i = j * per_round; i < std::min(pieces(n), (j + 1) * per_round); ++i)
        b.shm_signal(to, send_base + (l.send_off[to] + i * carry), std::min(carry, n - i * carry));
    }
    for (int k = 1; k < p; ++k) {
      const int from = mod(r - k, p);
      const size_t n = l.recv_bytes[from];
      for (size_t i = j * per_round; i < std::min(pieces(n), (j + 1) * per_round); ++i)
        b.shm_wait(from, output(l.recv_off[from] + i * carry), std::min(carry, n - i * carry));
    }
    b.end_round();
  }
  // The large blocks as alltoallv "pairwise" sends them: round k sends to
  // r+k and receives from r-k (linear's all-at-once exchange was 1.5x
  // slower at 8 KiB blocks on 4 ranks sharing 2 cores).
  for (int k = 1; k < p; ++k) {
    const int to = mod(r + k, p), from = mod(r - k, p);
    if (l.send_bytes[to] && !pieces(l.send_bytes[to]))
      b.send(to, send_base + l.send_off[to], l.send_bytes[to]);
    if (l.recv_bytes[from] && !pieces(l.recv_bytes[from]))
      b.recv(from, output(l.recv_off[from]), l.recv_bytes[from]);
    b.end_round();
  }
}

}  // namespace

extern const Algorithm kAlltoallvShm{
    "shm", Collective::Alltoallv,
    "single node: blocks up to 3 KiB ride in the flag lines, larger ones go pairwise",
    refuse, build};

}  // namespace tutti::algos
