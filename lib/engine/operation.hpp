// An operation in flight on a communicator: what a tutti_request_t holds.
// Kinds: a schedule run by the engine, the MPI library's own collective, or a
// user point-to-point message.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.hpp"
#include "engine/scratch.hpp"
#include "transport/transport.hpp"

namespace tutti {

// What an operation is, for messages and logs; formatted only when needed
// (the views point at static names, so building a label costs nothing).
struct OpLabel {
  std::string_view kind;       // "allreduce", ..., "send", "receive"
  std::string_view algorithm;  // collectives
  uint32_t seq = 0;            // collectives: sequence number on the communicator
  int peer = -1, tag = -1;     // point-to-point (a receive's peer may be kAnySource)
  // "allreduce #12 (ring)", "send to rank 3 tag 7", "receive from any rank tag 7"
  std::string to_string() const;
};

class Operation {
 public:
  virtual ~Operation() = default;
  // Advances without blocking; true once finished (see status()).
  bool poll() {
    if (!finished_) finished_ = advance();
    return finished_;
  }
  bool finished() const { return finished_; }
  // Stops the operation with an error; it finishes once it let go of buffers.
  virtual void cancel(Status why, const std::string& message) = 0;
  // Peers this rank still waits for (for timeout messages), if known.
  virtual std::vector<int> waiting_for() const { return {}; }
  // Whether cancelling it leaves the communicator consistent (a user
  // receive: no peer has done anything for it that it would miss).
  virtual bool withdrawable() const { return false; }
  // Whether it needs the transport's progress to finish (a shared-memory
  // schedule does not).
  virtual bool uses_transport() const { return true; }
  // Rounds of its schedule done so far, where it has one (a waiter tells a
  // long wait from progress by it).
  virtual size_t rounds_done() const { return 0; }
  // Whether each advance() polls the MPI library (MPI_Test), whose progress
  // engine yields the core by itself when idle where the launcher asks it
  // to (mpi_yield_when_idle): a waiter then does not yield again.
  virtual bool polls_mpi() const { return false; }

  Status status() const { return status_; }
  const std::string& error() const { return error_; }
  // "allreduce #12 (ring)": for debug and error messages.
  std::string description() const { return label_.to_string(); }
  const OpLabel& label() const { return label_; }
  // The communicator's flight-recorder entry (TUTTI_TRACE), 0 if none.
  uint64_t trace_id = 0;

 protected:
  // One step of progress; true once finished. Called only until it is.
  virtual bool advance() = 0;
  explicit Operation(const OpLabel& label) : label_(label) {}
  void finish_with(Status status, std::string error) {
    if (status_ == TUTTI_SUCCESS) {
      status_ = status;
      error_ = std::move(error);
    }
  }

 private:
  bool finished_ = false;
  Status status_ = TUTTI_SUCCESS;
  std::string error_;
  OpLabel label_;
};

// A schedule run by the engine, with its scratch memory borrowed from the
// communicator's pool for as long as it runs.
class ScheduleOp : public Operation {
 public:
  ScheduleOp(const OpLabel& label, Transport& transport,
             std::shared_ptr<const Schedule> schedule, Buffers bufs, uint32_t seq,
             ScratchLease scratch);
  ~ScheduleOp() override;
  bool advance() override;
  void cancel(Status why, const std::string& message) override;
  std::vector<int> waiting_for() const override { return run_.waiting_for(); }
  bool uses_transport() const override { return uses_transport_; }
  size_t rounds_done() const override { return run_.round(); }

 private:
  bool uses_transport_;
  ScratchLease scratch_;
  ScheduleRun run_;
};

// One user send or receive.
class PointToPointOp : public Operation {
 public:
  PointToPointOp(const OpLabel& label, Transport& transport, int peer);
  // Posts; a non-success status means nothing was posted.
  [[nodiscard]] Status post_send(Tag tag, const void* buf, size_t bytes, MemoryType mem);
  // peer may be kAnySource; `source` (if not null) gets the sender's rank
  // once the receive has succeeded.
  [[nodiscard]] Status post_recv(Tag tag, void* buf, size_t bytes, MemoryType mem,
                                 int* source = nullptr);
  bool advance() override;
  void cancel(Status why, const std::string& message) override;
  std::vector<int> waiting_for() const override;
  bool withdrawable() const override { return is_recv_; }

 private:
  Transport& transport_;
  int peer_;
  size_t expected_bytes_ = 0;
  bool is_recv_ = false;
  bool cancelled_ = false;
  int* source_ = nullptr;
  Completion completion_;
};

}  // namespace tutti
