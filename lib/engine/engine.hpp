// The engine: runs one rank's Schedule over a Transport, round by round,
// without blocking. One ScheduleRun is one collective call in flight.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/schedule.hpp"
#include "node/peer_memory.hpp"
#include "node/shared_segment.hpp"
#include "transport/transport.hpp"

namespace tutti {

struct Buffers {
  const void* input = nullptr;
  void* output = nullptr;
  void* scratch = nullptr;  // at least schedule.scratch_bytes
  MemoryType input_mem = MemoryType::Host;
  MemoryType output_mem = MemoryType::Host;
  MemoryType scratch_mem = MemoryType::Host;
  // The node's shared segment, for schedules that use one (else null).
  SharedPort* shared = nullptr;
};

class ScheduleRun {
 public:
  ScheduleRun(Transport& transport, std::shared_ptr<const Schedule> schedule, const Buffers& bufs,
              uint32_t seq);
  ~ScheduleRun();
  ScheduleRun(const ScheduleRun&) = delete;
  ScheduleRun& operator=(const ScheduleRun&) = delete;

  // Advances as far as possible without waiting; true once finished
  // (successfully or not: see status()).
  bool advance();
  bool finished() const { return finished_; }
  Status status() const { return status_; }
  const std::string& error() const { return error_; }
  // Stops: cancels posted messages; finished() once the transport let go.
  void cancel(Status why, std::string message);
  // If in flight: cancels and waits (at most kCancelGraceSeconds) for the
  // transport to let go. The destructor does it too.
  void let_go();
  // Whether let_go gave up waiting for the transport to let go of a
  // cancelled round (see kCancelGraceSeconds): the memory it may still
  // write then stays allocated.
  bool abandoned() const { return abandoned_; }
  // How long a run destroyed in flight waits for the transport to let go
  // of its messages after cancelling them: UCX cannot cancel a send whose
  // peer never takes it, and no wait in tutti may be endless.
  static constexpr double kCancelGraceSeconds = 2.0;
  // Peers this rank still waits for in the current round (for timeouts).
  std::vector<int> waiting_for() const;
  size_t round() const { return round_; }
  uint32_t seq() const { return seq_; }

 private:
  char* address(BufRef ref) const;
  MemoryType memory(BufRef ref) const;
  // A copy of host memory into the slots, long enough to stream.
  bool streamable_slot_write(const Step& step) const;
  void run_local(const Step& step);
  void read_from_peer(const Step& step);
  // Runs a round's local steps; in a probe call it counts the bytes of its
  // copies into the slots (node/slot_writes.hpp).
  void run_locals(const Round& round);
  // A round's communication: messages over the transport, flags in the
  // node's shared segment polled in step order (where small calls must cost
  // little), or in a mixed round both at once. start_round runs the local
  // steps and posts the messages; the others say whether the round's
  // messages, or its flags, are done.
  void start_round(const Round& round);
  bool round_messages_done(const Round& round);
  bool round_flags_done(const Round& round);
  void post_round();
  bool on_complete(const Step& step, Completion& c);
  void set_error(Status status, std::string message);

  Transport& transport_;
  std::shared_ptr<const Schedule> schedule_;
  Buffers bufs_;
  // Shared offsets are built for a first chunk of parity 0; when the
  // communicator's chunk sequence is at parity 1 the two halves swap.
  bool swap_halves_ = false;
  size_t half_bytes_ = 0;
  size_t slide_ = 0;  // where in its half this call's slots start (SharedPort::take_slide)
  // How this call writes its slots; a probe call is timed whole, from
  // probe_start_, and counts the bytes it writes (node/slot_writes.hpp).
  SlotWrites::CallMode slot_mode_;
  std::chrono::steady_clock::time_point probe_start_;
  size_t probe_written_ = 0;
  uint32_t seq_;
  size_t round_ = 0;
  bool round_posted_ = false;
  bool finished_ = false;
  bool cancelling_ = false;
  Status status_ = TUTTI_SUCCESS;
  std::string error_;
  // Messages: one completion per communication step of the current round;
  // the vector is sized once (the largest round) so completions never move.
  std::vector<Completion> completions_;
  bool abandoned_ = false;
  std::vector<uint8_t> handled_;
  uint32_t outstanding_ = 0;
  // Peer reads: the buffer addresses of the peers as learnt (BufKind::Peers;
  // this rank's own last). A failed read does not stop the schedule, whose
  // closing signals the peers wait for: its error is reported at the end.
  std::vector<PeerAddresses> peers_;
  Status read_status_ = TUTTI_SUCCESS;
  std::string read_error_;
  // In the node: the current round's next signal or wait (they complete in
  // step order).
  uint32_t next_flag_ = 0;
};

}  // namespace tutti
