// alltoallv "shm": single node; small blocks ride in the segment's flag
// lines, larger ones are read in place by their receivers (cross-memory
// attach), or go as messages where ranks cannot read each other.
//   Steps:    copy the own block; to each peer its block in the flag lines
//             where it takes at most kMaxPieces signals
//             (SharedSegment::carry_bytes each: 384 bytes on up to 16
//             ranks), as many a round as the lines hold unread (4); then
//             the larger blocks: each owner publishes to its reader the
//             address of that reader's block (a signal: only the owner
//             knows its displacements), each reader copies its blocks
//             from their owners, signals each owner and waits for its own
//             readers' signals. Without peer reads (TUTTI_CMA=0) the
//             larger blocks go in the rounds of alltoallv "pairwise".
//             Both ranks of a pair know that pair's byte count, so they
//             agree on the way without asking anyone (a rule on the
//             largest block would need every rank's counts). Empty blocks
//             move nothing.
//             A blocking call out of place whose blocks all go in the lines
//             runs directly (engine/direct_call.hpp): 0.52-0.64 of Open
//             MPI's time at 8-512 B on 2 ranks against 0.65-0.76 by the
//             engine (3 alternating jobs each, 2026-11-28).
//             In place (Input == Output): the input is first copied to
//             scratch (up to the end of its last non-empty block) and the
//             signals, the reads and the sends take it from there.
//   Traffic:  a small block is copied into the lines and out of them; a
//             large one once, from its owner's buffer into its reader's
//             (by messages: as alltoallv "pairwise" sends it).
//   Scratch:  0; in place the input's extent.
//   Rounds:   the most pieces of any of the rank's blocks / 4, then 2 flag
//             rounds for the large blocks. Cost: about a flag round per 4
//             pieces, then 2 flag rounds + the larger of bytes read and
//             bytes read from this rank at copy speed (by messages: (P-1)
//             alpha + max(sent, received) beta).
//   Why:      alltoallv of 8-512 B on 2 ranks took 0.73-1.0 us by
//             messages against Open MPI's 0.52-0.62, in the flag lines
//             0.25-0.43 (2026-11-28): a message through UCX costs several
//             flag rounds. 8 signals (3 KiB blocks) are about where a
//             message is as fast. Read in place, 8-64 KiB per rank (4-32
//             KiB blocks) on 2 ranks took 0.92-0.97 of Open MPI's time
//             against 1.13-2.8 by messages; on 4 ranks 16-256 KiB 0.87-1.12
//             against 1.18-3.6; from 1 MiB both about level with Open MPI
//             (alternating jobs, 2026-11-28: docs/perf/alltoallv-reads-2026-11-28.txt).
//   Refuses:  ranks on more than one node, no shared segment.
#include "algos/alltoall_common.hpp"
#include "algos/patterns.hpp"
#include "algos/shm_common.hpp"
#include "algos/shm_direct.hpp"

#include <algorithm>
#include <cstring>

namespace tutti::algos {
namespace {

// Most flag-line signals one block takes (more: read in place, or a message).
constexpr size_t kMaxPieces = 8;

// How the blocks go, the same for build and run_direct: a block of up to
// kMaxPieces x carry bytes in that many signals, up to per_round of them a
// round; a larger one read in place, or as a message without peer reads
// (the topology's agreed flag, the same on every rank). per_round is as
// many signals to one peer as its flag lines hold unread (whether or not
// ranks share cores): a round's signals all go out before its waits, so no
// more may be outstanding to one peer than the lines can hold.
struct FlagPieces {
  size_t carry, per_round;
  bool reads;  // larger blocks are read in place (else sent as messages)
  FlagPieces(int nranks, bool peer_reads)
      : carry(SharedSegment::carry_bytes(nranks)),
        per_round(static_cast<size_t>(SharedSegment::signal_groups(nranks))),
        reads(peer_reads) {}
  size_t pieces(size_t bytes) const {
    return bytes > 0 && bytes <= kMaxPieces * carry ? (bytes + carry - 1) / carry : 0;
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
  const FlagPieces f(p, b.topology().peer_reads);
  // Round j carries pieces [first(j), end(j)) of every block: signals
  // first, then waits. The ranks in the lowest round can always go on:
  // their peers have taken every earlier piece, and have sent or will send
  // this round's.
  const size_t rounds = f.rounds(
      p, r, [&](int q) { return l.send_bytes[q]; }, [&](int q) { return l.recv_bytes[q]; });
  for (size_t j = 0; j < rounds; ++j) {
    for (int k = 1; k < p; ++k) {
      const int to = mod(r + k, p);
      const size_t n = l.send_bytes[to];
      for (size_t i = f.first(j); i < f.end(j, n); ++i)
        b.shm_signal(to, send_base + (l.send_off[to] + i * f.carry), f.length(i, n));
    }
    for (int k = 1; k < p; ++k) {
      const int from = mod(r - k, p);
      const size_t n = l.recv_bytes[from];
      for (size_t i = f.first(j); i < f.end(j, n); ++i)
        b.shm_wait(from, output(l.recv_off[from] + i * f.carry), f.length(i, n));
    }
    b.end_round();
  }
  if (f.reads) {
    // The large blocks are read in place: each goes to its reader as an
    // address, the reader copies it, then tells its owner it is done.
    for (int k = 1; k < p; ++k) {
      const int to = mod(r + k, p);
      if (f.as_read(l.send_bytes[to])) b.publish_block(to, send_base + l.send_off[to]);
    }
    for (int k = 1; k < p; ++k) {
      const int from = mod(r - k, p);
      if (f.as_read(l.recv_bytes[from])) b.learn_buffers(from);
    }
    b.end_round();
    // Readers start at different owners (r-1, r-2, ...).
    for (int k = 1; k < p; ++k) {
      const int from = mod(r - k, p);
      if (f.as_read(l.recv_bytes[from]))
        b.peer_read(from, output(l.recv_off[from]), input(), l.recv_bytes[from]);
    }
    for (int k = 1; k < p; ++k) {
      const int from = mod(r - k, p);
      if (f.as_read(l.recv_bytes[from])) b.shm_signal(from);
    }
    for (int k = 1; k < p; ++k) {
      const int to = mod(r + k, p);
      if (f.as_read(l.send_bytes[to])) b.shm_wait(to);
    }
    b.end_round();
    return;
  }
  // The large blocks as alltoallv "pairwise" sends them: round k sends to
  // r+k and receives from r-k (linear's all-at-once exchange was 1.5x
  // slower at 8 KiB blocks on 4 ranks sharing 2 cores).
  for (int k = 1; k < p; ++k) {
    const int to = mod(r + k, p), from = mod(r - k, p);
    if (f.as_message(l.send_bytes[to])) b.send(to, send_base + l.send_off[to], l.send_bytes[to]);
    if (f.as_message(l.recv_bytes[from]))
      b.recv(from, output(l.recv_off[from]), l.recv_bytes[from]);
    b.end_round();
  }
}

// A blocking call whose blocks all go in the flag lines (its schedule sends
// no message), out of place, runs directly (engine/direct_call.hpp): 8 B on
// 2 ranks through libtutti-mpi took 0.46 us by the engine, Open MPI 0.28.
bool direct_applies(const CollArgs& a, const Schedule& schedule, int nranks) {
  return nranks > 1 && !a.in_place && !schedule.uses_transport && !schedule.uses_peer_reads;
}

// build's steps, in its order, without the engine (and without allocating:
// a layout's vectors cost more than the exchange).
bool run_direct(const DirectCall& c) {
  const CollArgs& a = c.args;
  const size_t es = a.elem_size();
  const int p = c.nranks, r = c.rank;
  const char* in = static_cast<const char*>(c.input);
  char* out = static_cast<char*>(c.output);
  const auto send = [&](int q) { return a.send_counts[static_cast<size_t>(q)] * es; };
  const auto recv = [&](int q) { return a.recv_counts[static_cast<size_t>(q)] * es; };
  const auto send_at = [&](int q) { return in + a.send_displs[static_cast<size_t>(q)] * es; };
  const auto recv_at = [&](int q) { return out + a.recv_displs[static_cast<size_t>(q)] * es; };
  if (recv(r) > 0) std::memcpy(recv_at(r), send_at(r), recv(r));
  const FlagPieces f(p, false);  // direct_applies: no block is large
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

}  // namespace

extern const Algorithm kAlltoallvShm{
    "shm", Collective::Alltoallv,
    "single node: blocks up to 3 KiB ride in the flag lines, larger ones go pairwise",
    refuse, build, direct_applies, run_direct};

}  // namespace tutti::algos
