// A blocking call that an algorithm runs start to end on the caller's
// thread, without a schedule or the engine (Algorithm::run_direct). Only
// for small calls, where building blocks cost more than moving the data:
// an 8-byte allreduce on two ranks is one cache-line exchange, about
// 0.07 us, and the engine's per-call work took longer than that.
//
// A direct run must signal and wait on the shared flags exactly as the
// algorithm's schedule does for the same call, and compute the same
// result: a rank whose call goes through the engine instead (a
// non-blocking call, or one queued behind another) then still meets its
// peers' direct runs.
#pragma once

#include <cstddef>

#include "engine/coll_args.hpp"
#include "engine/schedule.hpp"
#include "node/shared_segment.hpp"

namespace tutti {

// What a direct run does while a flag it needs is not there yet.
class FlagWait {
 public:
  // Called between checks of a flag from (or for) `peer`. False: stop
  // waiting (timed out, or the communicator was aborted); the run then
  // returns false and the waiter holds the status and message.
  virtual bool idle(int peer) = 0;
  // Flag waits that have ended: a waiter tells a long wait from progress.
  uint64_t waits_ended = 0;

 protected:
  ~FlagWait() = default;
};

struct DirectCall {
  const CollArgs& args;  // as the user called (args.params not set)
  const AlgoParams& params;  // the tuning's
  const Schedule& schedule;  // what the engine would run instead (its slot layout)
  const void* input;     // in place: the output
  void* output;
  int rank, nranks;
  SharedPort& port;
  void* scratch;  // at least kDirectScratchPerRank x nranks bytes
  FlagWait& wait;
};

inline constexpr size_t kDirectScratchPerRank =
    SharedSegment::kWideCarryLines * SharedSegment::kLinePayload;

}  // namespace tutti
