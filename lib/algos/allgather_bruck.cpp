// allgather "bruck" (Bruck, Ho, Kipnis, Upfal & Weathersby 1997): works
// natively for any rank count in ceil(log2 P) rounds.
//   Steps:    scratch slot i holds the block of rank r+i; slot 0 starts as
//             the input. Round k (d = 2^k): send slots [0, m) to rank r-d,
//             receive slots [d, d+m) from rank r+d, m = min(d, P-d). Then
//             two copies rotate the slots into the output.
//   Messages: pipelined in params.chunk_bytes pieces.
//   Scratch:  P blocks (the whole result, in rotated order).
//   Rounds:   ceil(log2 P). Cost: ceil(log2 P) alpha + (P-1) m beta + a
//             local copy of P m bytes, for blocks of m bytes.
//   Any rank count and count. Best for small blocks at non-power-of-two P.
#include <algorithm>

#include "algos/patterns.hpp"
#include "algos/registry.hpp"
#include "algos/ring.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank();
  const size_t block = a.count * b.elem_size();
  const size_t ur = static_cast<size_t>(r), up = static_cast<size_t>(p);
  if (p == 1) {
    if (!a.in_place) b.copy(output(), input(), block);
    return;
  }
  const size_t chunk = chunk_bytes_of(b);
  const BufRef slots = b.scratch(up * block);
  b.copy(slots, input(), block);
  for (int dist = 1; dist < p; dist <<= 1) {
    const size_t m = static_cast<size_t>(std::min(dist, p - dist));
    b.send(mod(r - dist, p), slots, m * block, chunk);
    b.recv(mod(r + dist, p), slots + static_cast<size_t>(dist) * block, m * block, chunk);
    b.end_round();
  }
  // Slot i is rank (r + i) mod P's block.
  b.copy(output(ur * block), slots, (up - ur) * block);
  b.copy(output(), slots + (up - ur) * block, ur * block);
}

}  // namespace

extern const Algorithm kAllgatherBruck{
    "bruck", Collective::Allgather,
    "ceil(log2 P) rounds at distance 2^k in rotated order (Bruck), any P", accept_all, build};

}  // namespace tutti::algos
