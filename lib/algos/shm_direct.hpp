// The steps that the direct runs of the shm algorithms share (see
// engine/direct_call.hpp). Each mirrors one builder step of shm_common.hpp or
// engine/schedule.hpp, and must keep doing exactly what that step does: a rank
// whose call goes through the engine meets the ranks that run directly.
#pragma once

#include <cstring>

#include "algos/shm_common.hpp"
#include "engine/direct_call.hpp"
#include "host/reduce.hpp"

namespace tutti::algos {

// As a ShmSignal step: waits until the line to `peer` is free (its last
// signal taken), then signals it, carrying `bytes` from `src`.
inline bool direct_signal(const DirectCall& c, int peer, const void* src, size_t bytes) {
  while (!c.port.can_signal(peer))
    if (!c.wait.idle(peer)) return false;
  ++c.wait.waits_ended;
  c.port.signal(peer, src, bytes);
  return true;
}

// As a ShmWait step: waits for `peer`'s signal and takes what it carries.
inline bool direct_wait(const DirectCall& c, int peer, void* dst, size_t bytes) {
  while (!c.port.arrived(peer, bytes))
    if (!c.wait.idle(peer)) return false;
  ++c.wait.waits_ended;
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

// As append_inline_reduction: `from(q)` is where the bytes this rank sends
// rank q lie; the shares land in the call's scratch.
template <typename From>
bool direct_inline_reduction(const DirectCall& c, size_t bytes, From from) {
  char* values = static_cast<char*>(c.scratch);
  auto value = [&](int q) { return values + static_cast<size_t>(q) * bytes; };
  std::memcpy(value(c.rank), from(c.rank), bytes);
  for (int q = 0; q < c.nranks; ++q)
    if (q != c.rank && !direct_signal(c, q, from(q), bytes)) return false;
  for (int q = 0; q < c.nranks; ++q)
    if (q != c.rank && !direct_wait(c, q, value(q), bytes)) return false;
  direct_reduce_in_rank_order(c, c.output, value);
  return true;
}

// The calls small enough for the flag lines, on more than one rank.
inline bool direct_fits(const CollArgs& a, const Schedule&, int nranks) {
  return nranks > 1 && a.count > 0 && shm_fits_inline(a.count * a.elem_size(), nranks);
}

// Blocking calls of one chunk through the slots below this size run
// directly too. Why: at 1 KiB on 2 ranks the engine's path took 0.33-0.39
// us where a bare exchange of the same bytes through shared memory (copy
// in, flag, wait, copy out; tutti-bench --bounds, xchg) took 0.16-0.18
// (docs/PERFORMANCE.md, "Small messages through the slots, directly"). The
// limit is where the engine may start streaming its slot writes (and below
// SlotWrites::kMinTimedBytes, where probes time them): direct runs do
// neither, so below it they write the slots exactly as the engine does.
inline constexpr size_t kDirectSlotsBelow = SlotWrites::kMinStreamingBytes;
static_assert(kDirectSlotsBelow <= SlotWrites::kMinTimedBytes);

// The calls that fit the flag lines, or one chunk of the slots below
// kDirectSlotsBelow.
inline bool direct_fits_or_one_slot(const CollArgs& a, const Schedule& schedule, int nranks) {
  if (direct_fits(a, schedule, nranks)) return true;
  return nranks > 1 && schedule.shm_chunks == 1 && a.count * a.elem_size() < kDirectSlotsBelow;
}

// The slots of a blocking call of one chunk, where the engine would put
// them for this call: SharedPort::begin_slot_call takes the same parity,
// probe turn and place (so it must be called exactly once per such call).
// Each rank's slot is slot_area_bytes / P, in rank order, as
// ShmSlots::at(0, q) of the schedule.
class DirectSlots {
 public:
  explicit DirectSlots(const DirectCall& c)
      : slot_(c.schedule.slot_area_bytes / static_cast<size_t>(c.nranks)) {
    const SharedPort::SlotCall call =
        c.port.begin_slot_call(c.schedule.slot_area_bytes, c.schedule.shm_chunks);
    base_ = c.port.segment().data() + (call.swap_halves ? c.port.half_bytes() : 0) + call.slide;
  }
  char* at(int rank) const { return base_ + static_cast<size_t>(rank) * slot_; }

 private:
  size_t slot_;
  char* base_ = nullptr;
};

// As append_shm_sync_all: signal every peer, then wait for every peer.
inline bool direct_sync_all(const DirectCall& c) {
  for (int q = 0; q < c.nranks; ++q)
    if (q != c.rank && !direct_signal(c, q, nullptr, 0)) return false;
  for (int q = 0; q < c.nranks; ++q)
    if (q != c.rank && !direct_wait(c, q, nullptr, 0)) return false;
  return true;
}

}  // namespace tutti::algos
