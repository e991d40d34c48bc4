// The personalized exchange through the flag lines (flag_exchange.hpp).
#include "algos/flag_exchange.hpp"

namespace tutti::algos {

Refusal refuse_flag_exchange(const CollArgs&, const Topology& topo) {
  if (topo.nnodes != 1) return "needs all ranks on one node";
  if (topo.shared_bytes == 0) return "no shared-memory segment (TUTTI_SHM_BYTES=0 or unavailable)";
  return std::nullopt;
}

void append_flag_exchange(ScheduleBuilder& b, const ExchangeLayout& l, bool counts_differ) {
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
  const size_t stage_limit =
      flag_exchange_stage_limit(b.topology(), b.shared_capacity(), chunk_bytes_of(b));
  FlagPieces f(p, b.topology().peer_reads, stage_limit);
  // Every rank must agree on taking the chunk: alltoall's equal blocks
  // tell it from any block.
  const bool chunk = f.stage_limit > 0 && (counts_differ || f.staged(l.send_bytes[mod(r + 1, p)]));
  if (chunk && p == 2) f.chunked_from = kChunkedBlockFrom;
  ShmSlots slots{};
  int parity = 0;
  if (chunk) {
    parity = b.begin_shm_chunk();
    slots = shm_slots(b, static_cast<size_t>(p), f.stage_limit);
    for (int k = 1; k < p; ++k) {
      const int to = mod(r + k, p);
      if (f.staged(l.send_bytes[to]))
        b.copy(slots.at(parity, r, to), send_base + l.send_off[to], l.send_bytes[to]);
    }
  }
  // Round j carries pieces [first(j), end(j)) of every block: signals
  // first, then waits. The ranks in the lowest round can always go on:
  // their peers have taken every earlier piece, and have sent or will send
  // this round's. With a chunk the first round signals every peer: after
  // it every rank has staged its blocks (and read the slots of this
  // parity's last chunk), so the staged blocks are copied out.
  const size_t rounds = f.rounds(
      p, r, [&](int q) { return l.send_bytes[q]; }, [&](int q) { return l.recv_bytes[q]; }, chunk);
  for (size_t j = 0; j < rounds; ++j) {
    for (int k = 1; k < p; ++k) {
      const int to = mod(r + k, p);
      const size_t n = l.send_bytes[to];
      if (f.empty_signal(j, n, chunk)) b.shm_signal(to);
      for (size_t i = f.first(j); i < f.end(j, n); ++i)
        b.shm_signal(to, send_base + (l.send_off[to] + i * f.carry), f.length(i, n));
    }
    for (int k = 1; k < p; ++k) {
      const int from = mod(r - k, p);
      const size_t n = l.recv_bytes[from];
      if (f.empty_signal(j, n, chunk)) b.shm_wait(from);
      for (size_t i = f.first(j); i < f.end(j, n); ++i)
        b.shm_wait(from, output(l.recv_off[from] + i * f.carry), f.length(i, n));
    }
    b.end_round();
    if (j == 0)
      for (int k = 1; k < p; ++k) {
        const int from = mod(r - k, p);
        if (f.staged(l.recv_bytes[from]))
          b.copy(output(l.recv_off[from]), slots.at(parity, from, r), l.recv_bytes[from]);
      }
  }
  if (chunk && p == 2) {
    // 2 ranks: both know the two blocks that cross, so they agree on
    // staging the large ones in chunks, each a full synchronisation (the
    // slots of shm_common.hpp).
    const int q = 1 - r;
    const size_t out = f.chunked(l.send_bytes[q]) ? l.send_bytes[q] : 0;
    const size_t in = f.chunked(l.recv_bytes[q]) ? l.recv_bytes[q] : 0;
    if (const size_t most = std::max(out, in)) {
      const ShmSlots big = shm_slots_of(b, 1, most, kChunkedSlotBytes);
      for (size_t off = 0; off < most; off += big.slot) {
        const int par = b.begin_shm_chunk();
        if (off < out)
          b.copy(big.at(par, r), send_base + (l.send_off[q] + off), std::min(big.slot, out - off));
        append_shm_sync_all(b);
        if (off < in)
          b.copy(output(l.recv_off[q] + off), big.at(par, q), std::min(big.slot, in - off));
      }
    }
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

}  // namespace tutti::algos
