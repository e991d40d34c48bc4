// Schedules over UCX's tag-matching API (UCP): one worker per communicator,
// endpoints created on first use from worker addresses exchanged with one
// MPI_Allgatherv at creation (O(P) per rank). UCX picks the wire: shared
// memory and CMA single-copy within a node, RDMA or TCP between nodes.
#pragma once

#include <mpi.h>
#include <ucp/api/ucp.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "transport/transport.hpp"

namespace tutti {

class UcxTransport : public Transport {
 public:
  // Collective over `comm`. peer_errors: ask UCX to detect failed peers
  // (UCP_ERR_HANDLING_MODE_PEER; see the cost in transport/ucx.cpp).
  // timeout_s (<= 0: none) bounds the destructor's waits for the peers.
  UcxTransport(MPI_Comm comm, bool peer_errors, double timeout_s);
  // Collective: waits (at most timeout_s) until every rank got here, still
  // progressing this worker, so that a peer that needs a message only this
  // worker can send (a rendezvous's last control message) gets it.
  ~UcxTransport() override;

  std::string_view name() const override { return "ucx"; }
  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  Status send(int peer, Tag tag, const void* buf, size_t bytes, MemoryType mem,
              Completion* c) override;
  Status recv(int peer, Tag tag, void* buf, size_t bytes, MemoryType mem, Completion* c) override;
  int progress() override;
  void user_polls(bool starts) override;
  void cancel(Completion* c) override;
  bool supports(MemoryType mem) const override;
  std::string unmatched_from(int peer) override;

  // Messages of at least this many bytes to a rank on the same machine (and
  // all device-memory messages) are acknowledged by their receiver with a
  // zero-byte message, and the send completes only when the acknowledgement
  // arrives; UCX's rendezvous threshold is set to the same size unless the
  // user set UCX_RNDV_THRESH (then acknowledgements start at the user's
  // threshold). Why: a rendezvous ends with a UCX control message (get: the
  // receiver's ATS; put: the sender's ATP) that may be left queued in the
  // worker when the peer's shared-memory queue is full, after the local
  // request has completed. A rank whose collective has completed returns to
  // the user (who may wait in an MPI call) and stops progressing the worker,
  // so the control message never leaves and the peer waits forever: seen as
  // 1-in-5 hangs of 8 MiB tree allreduces on 5 oversubscribed ranks, and in
  // bruck allgathers. An acknowledgement is an ordinary eager message: its
  // send completes only once it has left, after anything queued before it,
  // and the other side is still inside tutti waiting for it. Between
  // machines (a different boot id: UCX then uses no shared memory) messages
  // are not acknowledged: over TCP an acknowledgement costs a round trip of
  // 20-60 us per message.
  static constexpr size_t kAckBytes = 16 * 1024;
  // Across machines a progress thread takes over once the user's thread has
  // not polled for this long (the user is outside tutti, or computing).
  static constexpr int64_t kUserPollingNs = 1'000'000;
  // How long it sleeps at a time while the user's thread waits in tutti
  // and polls at every turn (user_polls).
  static constexpr int64_t kUserWaitSleepNs = 10'000'000;
  // How long the progress thread sleeps on the worker's events at most.
  static constexpr int kThreadPollMs = 100;
  // UCX's rendezvous threshold in a job across machines (see the constructor).
  static constexpr size_t kInterMachineRndvBytes = 1024 * 1024;
  // The acknowledgement threshold for a UCX_RNDV_THRESH value: a size with
  // an optional unit (b, k/kb, m/mb, g/gb) below kAckBytes, or kAckBytes
  // ("inf", or larger); 1 (every message) where UCX picks ("auto") or the
  // value cannot be read.
  static size_t ack_bytes_for(const char* rndv_thresh);
  struct AckedOp;
  // For AckedOp's UCX callbacks.
  void ack_later(AckedOp* op);
  void settle(AckedOp* op);
  // Whether a sender waits for the acknowledgement of a host message of
  // `bytes` to a rank of this machine (needs_ack, as the sender decides it).
  bool acks(size_t bytes) const { return bytes >= ack_bytes_; }

  // "ucx 1.13.1; memory types: host" for tutti-info and debug logs.
  std::string describe() const;
  // UCX's own version string.
  static std::string version();

 private:
  ucp_ep_h endpoint(int peer);
  int progress_locked();
  // The progress thread (communicators that span machines). UCX finishes
  // parts of its protocol only with both sides' progress (over TCP even an
  // endpoint flush waits for the peer; so does connection set-up): a
  // rank whose part of a collective is done returns to the user, who may
  // wait in an MPI call until a peer is done, and without this thread that
  // peer waits for ever (3 in 5 runs of alternating tutti and MPI calls on
  // the emulated 2 x 2 cluster timed out). It sleeps on the worker's event
  // file descriptor, progresses only while the user's thread does not, and
  // takes the worker in turns with it (mutex_).
  void start_progress_thread();
  void stop_progress_thread();
  void run_progress_thread();
  void nap(int64_t ns);  // sleeps up to ns, less if stopped
  // Holds mutex_ where a progress thread runs; nothing otherwise.
  std::unique_lock<std::mutex> hold() {
    return threaded_ ? std::unique_lock<std::mutex>(mutex_) : std::unique_lock<std::mutex>();
  }
  bool needs_ack(int peer, size_t bytes, MemoryType mem) const;
  // A line of TUTTI_MESSAGE_LOG: a send or receive posted.
  void log_message(const char* what, int peer, Tag tag, size_t bytes, bool acked,
                   const Completion* c) const;
  AckedOp* new_acked_op(int peer, ucp_tag_t ack_tag, Completion* c);
  void post_due_acks();

  MPI_Comm comm_;
  // The destructor's barrier runs on a duplicate of its own: a barrier that
  // timed out stays in flight inside MPI, and its communicator must then
  // never be freed (Open MPI's progress would touch the freed one).
  MPI_Comm teardown_comm_ = MPI_COMM_NULL;
  int rank_ = 0, nranks_ = 1;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<char> addresses_;       // every rank's worker address, concatenated
  std::vector<size_t> address_offsets_;
  std::vector<ucp_ep_h> endpoints_;
  uint64_t memory_types_ = 0;         // UCS_MEMORY_TYPE bits the context supports
  bool peer_errors_ = false;
  double timeout_s_ = 0;
  size_t ack_bytes_ = kAckBytes;
  std::vector<char> same_machine_;  // per rank: the same boot id as this one
  bool failed_peer_ = false;
  std::vector<std::unique_ptr<AckedOp>> acked_;  // acknowledged messages in flight
  // Finished ones kept for the next (at most kSpareAckedOps): every user
  // receive and every large message within a machine is one.
  std::vector<std::unique_ptr<AckedOp>> spare_acked_;
  static constexpr size_t kSpareAckedOps = 64;
  std::vector<AckedOp*> acks_due_;                // receives whose ack is to be sent
  size_t finished_ops_ = 0;                       // finished entries of acked_ to drop
  bool threaded_ = false;                 // a progress thread runs (see above)
  std::mutex mutex_;                      // the worker, between the two threads
  std::thread progress_thread_;
  std::atomic<bool> stop_ = false;
  std::atomic<int64_t> last_user_poll_ns_ = 0;  // steady clock, of the user's last progress()
  std::atomic<int> user_polling_ = 0;     // waits in user_polls(true) .. user_polls(false)
  int worker_fd_ = -1;                    // UCX's event file descriptor
  int wake_fd_ = -1;                      // an eventfd that ends the thread's sleep
};

}  // namespace tutti
