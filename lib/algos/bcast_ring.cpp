// bcast "ring": a pipelined chain root -> root+1 -> ... -> root-1.
//   Steps:    the root sends one segment a round to its successor; an inner
//             rank receives segment k while it forwards segment k-1; the
//             last rank receives every segment in one round.
//   Segments: params.chunk_bytes (default 256 KiB).
//   Scratch:  none.
//   Rounds:   S + 1 on inner ranks for S segments; the last segment reaches
//             the end after S + P - 2 segment times. Cost: (S + P - 2)
//             (alpha + n/S beta), i.e. about n beta for S >> P.
//   Any rank count, count and root. For very large messages.
#include <algorithm>

#include "algos/binomial.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank();
  const size_t bytes = a.count * b.elem_size();
  if (p == 1 || bytes == 0) return;
  const size_t segment = binomial_segment_bytes(b);
  const size_t segments = (bytes + segment - 1) / segment;
  auto seg_bytes = [&](size_t s) { return std::min(segment, bytes - s * segment); };
  const int position = mod(r - a.root, p);
  const int next = mod(r + 1, p), prev = mod(r - 1, p);
  if (position == p - 1) {
    for (size_t s = 0; s < segments; ++s) b.recv(prev, output(s * segment), seg_bytes(s));
    b.end_round();
    return;
  }
  // Round k: receive segment k (not the root), send segment k-1.
  const size_t first = position == 0 ? 1 : 0;
  for (size_t k = first; k <= segments; ++k) {
    if (position != 0 && k < segments) b.recv(prev, output(k * segment), seg_bytes(k));
    if (k > 0) b.send(next, output((k - 1) * segment), seg_bytes(k - 1));
    b.end_round();
  }
}

}  // namespace

extern const Algorithm kBcastRing{
    "ring", Collective::Bcast, "pipelined chain from the root around the ring, in segments",
    accept_all, build};

}  // namespace tutti::algos
