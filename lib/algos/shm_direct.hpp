// The steps that the direct runs of the shm algorithms share (see
// direct_call.hpp). Each mirrors one builder step of shm_common.hpp or
// schedule.hpp, and must keep doing exactly what that step does: a rank
// whose call goes through the engine meets the ranks that run directly.
#pragma once

#include <cstring>

#include "algos/shm_common.hpp"
#include "direct_call.hpp"
#include "host_reduce.hpp"

namespace tutti::algos {

// As a ShmSignal step: waits until the line to `peer` is free (its last
// signal taken), then signals it, carrying `bytes` from `src`.
inline bool direct_signal(const DirectCall& c, int peer, const void* src, size_t bytes) {
  while (!c.port.can_signal(peer))
    if (!c.wait.idle(peer)) return false;
  c.port.signal(peer, src, bytes);
  return true;
}

// As a ShmWait step: waits for `peer`'s signal and takes what it carries.
inline bool direct_wait(const DirectCall& c, int peer, void* dst, size_t bytes) {
  while (!c.port.arrived(peer, bytes))
    if (!c.wait.idle(peer)) return false;
  c.port.take(peer, dst, bytes);
  return true;
}

// As append_reduce_in_rank_order: dst = value(0) op ... op value(P-1) in
// rank order, then avg; the same calls, so the same bits.
template <typename Value>
void direct_reduce_in_rank_order(const DirectCall& c, void* dst, Value value) {
  const size_t count = c.args.count;
  const Datatype dt = c.args.dtype;
  host_reduce(dst, value(0), value(1), count, dt, c.args.op);
  for (int q = 2; q < c.nranks; ++q) host_reduce(dst, dst, value(q), count, dt, c.args.op);
  if (c.args.op == Op::Avg) host_divide(dst, count, dt, c.nranks);
}

// The calls small enough for the flag lines, on more than one rank.
inline bool direct_fits(const CollArgs& a, const Schedule&, int nranks) {
  return nranks > 1 && a.count > 0 && shm_fits_inline(a.count * a.elem_size(), nranks);
}

}  // namespace tutti::algos
