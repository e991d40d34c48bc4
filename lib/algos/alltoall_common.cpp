#include "algos/alltoall_common.hpp"

#include <algorithm>

#include "algos/patterns.hpp"
#include "base/status.hpp"

namespace tutti::algos {

size_t ExchangeLayout::max_recv_bytes() const {
  size_t most = 0;
  for (size_t bytes : recv_bytes) most = std::max(most, bytes);
  return most;
}

size_t ExchangeLayout::send_extent() const {
  size_t end = 0;
  for (size_t p = 0; p < send_bytes.size(); ++p)
    if (send_bytes[p]) end = std::max(end, send_off[p] + send_bytes[p]);
  return end;
}

ExchangeLayout alltoall_exchange_layout(const ScheduleBuilder& b) {
  const size_t p = static_cast<size_t>(b.nranks());
  const size_t block = b.args().count * b.elem_size();
  ExchangeLayout l;
  l.send_bytes.assign(p, block);
  l.recv_bytes.assign(p, block);
  l.send_off.resize(p);
  for (size_t i = 0; i < p; ++i) l.send_off[i] = i * block;
  l.recv_off = l.send_off;
  return l;
}

ExchangeLayout alltoallv_exchange_layout(const ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t p = static_cast<size_t>(b.nranks());
  const size_t es = b.elem_size();
  if (a.send_counts.size() != p || a.send_displs.size() != p || a.recv_counts.size() != p ||
      a.recv_displs.size() != p)
    fail(TUTTI_ERR_INVALID_ARGUMENT, "alltoallv counts/displacements must have one entry per rank");
  ExchangeLayout l;
  auto scaled = [es](std::span<const size_t> v) {
    std::vector<size_t> out(v.begin(), v.end());
    for (size_t& x : out) x *= es;
    return out;
  };
  l.send_off = scaled(a.send_displs);
  l.send_bytes = scaled(a.send_counts);
  l.recv_off = scaled(a.recv_displs);
  l.recv_bytes = scaled(a.recv_counts);
  return l;
}

int pairing_rounds(int nranks) { return nranks % 2 ? nranks : nranks - 1; }

// Odd n: in round k, r meets (k - r) mod n and sits out when that is itself.
// Even n: ranks 0..n-2 play the odd tournament on n-1 players, and the one
// that would sit out meets rank n-1 instead.
int pairing_peer(int rank, int nranks, int round) {
  if (nranks % 2) {
    const int peer = mod(round - rank, nranks);
    return peer == rank ? -1 : peer;
  }
  const int m = nranks - 1;
  if (rank == m) return static_cast<int>(static_cast<long>(round) * ((m + 1) / 2) % m);
  const int peer = mod(round - rank, m);
  return peer == rank ? m : peer;
}

namespace {

void copy_own_block(ScheduleBuilder& b, const ExchangeLayout& l) {
  const int r = b.rank();
  // In place the own block is already where it belongs.
  if (!b.args().in_place) b.copy(output(l.recv_off[r]), input(l.send_off[r]), l.recv_bytes[r]);
}

}  // namespace

void append_pairwise_exchange(ScheduleBuilder& b, const ExchangeLayout& l) {
  const int p = b.nranks(), r = b.rank();
  copy_own_block(b, l);
  if (!b.args().in_place) {
    for (int k = 1; k < p; ++k) {
      const int to = mod(r + k, p), from = mod(r - k, p);
      b.send(to, input(l.send_off[to]), l.send_bytes[to]);
      b.recv(from, output(l.recv_off[from]), l.recv_bytes[from]);
      b.end_round();
    }
    return;
  }
  // In place: the block sent to a peer is the one its message replaces, so
  // the message lands in scratch; the copy into place opens the next round
  // (local steps run before that round's communication is posted).
  const BufRef landing = b.scratch(l.max_recv_bytes());
  int landed_from = -1;
  for (int k = 0; k < pairing_rounds(p); ++k) {
    const int peer = pairing_peer(r, p, k);
    if (peer < 0) continue;
    if (landed_from >= 0)
      b.copy(output(l.recv_off[landed_from]), landing, l.recv_bytes[landed_from]);
    b.send(peer, output(l.send_off[peer]), l.send_bytes[peer]);
    b.recv(peer, landing, l.recv_bytes[peer]);
    b.end_round();
    landed_from = peer;
  }
  if (landed_from >= 0) b.copy(output(l.recv_off[landed_from]), landing, l.recv_bytes[landed_from]);
}

void append_linear_exchange(ScheduleBuilder& b, const ExchangeLayout& l) {
  const int p = b.nranks(), r = b.rank();
  copy_own_block(b, l);
  BufRef send_base = input();
  if (b.args().in_place && p > 1) {
    // Receives overwrite blocks still to be sent: send from a copy.
    const size_t extent = l.send_extent();
    send_base = b.scratch(extent);
    b.copy(send_base, output(), extent);
  }
  for (int k = 1; k < p; ++k) {
    const int from = mod(r - k, p);
    b.recv(from, output(l.recv_off[from]), l.recv_bytes[from]);
  }
  for (int k = 1; k < p; ++k) {
    const int to = mod(r + k, p);
    b.send(to, send_base + l.send_off[to], l.send_bytes[to]);
  }
  b.end_round();
}

}  // namespace tutti::algos
