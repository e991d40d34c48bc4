// A tutti communicator: the MPI communicator it came from, the transport its
// schedules run over, the dispatcher and its configuration, the schedule
// cache, scratch memory, and the operations in flight.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "api/grouped_call.hpp"
#include "api/progress_elsewhere.hpp"
#include "api/state_choice.hpp"
#include "base/agreed_size.hpp"
#include "engine/operation.hpp"
#include "engine/scratch.hpp"
#include "node/node_memory.hpp"
#include "safety/abort_channel.hpp"
#include "safety/checked_op.hpp"
#include "safety/flight_recorder.hpp"
#include "safety/signature_check.hpp"
#include "transport/transport.hpp"
#include "tuning/config.hpp"
#include "tuning/dispatch.hpp"
#include "tutti_config.h"
#if TUTTI_HAVE_CUDA
#include "cuda/start_order.hpp"
namespace tutti::cuda {
class StagingTransport;
}
#endif

struct CUstream_st;  // cudaStream_t, without the CUDA headers

namespace tutti {

struct CommStats {
  uint64_t collectives = 0;
  uint64_t mpi_fallbacks = 0;
  uint64_t refused_fallbacks = 0;
  uint64_t schedule_cache_hits = 0;
  uint64_t schedule_builds = 0;
  uint64_t grouped_calls = 0;  // started by tutti_group_end
  uint64_t fused_calls = 0;    // grouped allreduces that ran fused with others
};

class Comm {
 public:
  // Collective over `mpi_comm`. Throws Error.
  explicit Comm(MPI_Comm mpi_comm);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const Topology& topology() const { return dispatcher_.topology(); }
  const Config& config() const { return config_; }
  const Dispatcher& dispatcher() const { return dispatcher_; }
  Transport& transport() { return *transport_; }
  const CommStats& stats() const { return stats_; }
  // Points at the registry's name (a string literal, so null-terminated);
  // "none" after a call with nothing to move (count 0), which runs nothing.
  std::string_view last_algorithm() const { return last_algorithm_; }
  // How many signals a rank may run ahead of a reader in this node's
  // segment (SharedSegment::signal_groups; 0 without a segment).
  int signal_groups() const {
    return node_memory_ ? static_cast<int>(node_memory_->segment().groups()) : 0;
  }
  void note_empty_call() { last_algorithm_ = "none"; }

  // Starts a collective (arguments already validated and in-place
  // normalised by the API layer; args.memory is Cuda if either buffer is
  // device memory). Throws Error if it cannot start. Under TUTTI_CHECK the
  // agreement on the call is part of the operation: this never blocks.
  std::shared_ptr<Operation> start_collective(const CollArgs& args, const void* in, void* out,
                                              MemoryType in_mem, MemoryType out_mem);
  // A non-blocking call with nothing to move (count 0): under TUTTI_CHECK
  // its agreement, else nothing (null: finished at once).
  std::shared_ptr<Operation> start_empty_collective(const CollArgs& args);
  // Runs a collective to the end (a blocking call): the arguments as for
  // start_collective. Returns its status; throws Error if it cannot start.
  Status run_blocking(const CollArgs& args, const void* in, void* out, MemoryType in_mem,
                      MemoryType out_mem);
  // Starts a user send or receive. A receive's peer may be kAnySource;
  // `source` (if not null) gets the sender's rank once it succeeded.
  std::shared_ptr<Operation> start_point_to_point(bool is_send, void* buf, size_t bytes,
                                                  int peer, int tag, MemoryType mem,
                                                  int* source = nullptr);
  // Starts the calls of a group (tutti_group_end) in their order: one
  // operation per call, shared by the allreduces fused into one
  // (api/comm_group.cpp). A call that cannot start gets an operation that
  // finished with the error; the others start all the same.
  std::vector<std::shared_ptr<Operation>> start_group(std::vector<GroupedCall>& calls);
  // The CUDA stream later calls are ordered against (null: none), as
  // tutti_comm_set_stream documents. Throws Error where CUDA is unavailable
  // or the stream is not valid.
  void set_stream(CUstream_st* stream);
  CUstream_st* stream() const { return stream_; }
  // Waits for `op`, progressing everything in flight; `timeout_s` <= 0
  // waits forever. On timeout the operation is cancelled.
  Status wait(Operation& op, double timeout_s);
  // One round of progress on everything in flight; returns the number of
  // transport events (0: nothing happened).
  int progress();
  // Whether progress() calls into the MPI library now: the transport is
  // MPI's, or something in flight polls MPI (the `mpi` algorithm, a
  // TUTTI_CHECK agreement). A wait that does must not sleep (Patience).
  bool progress_polls_mpi() const;
  // Whether operations are in flight here (started, queued, or agreeing).
  bool has_in_flight() const {
    return !active_.empty() || !shm_waiting_.empty() || !checked_waiting_.empty();
  }
  // Which thread is inside a call on this communicator (progress_elsewhere).
  progress_elsewhere::Claim& claim() { return claim_; }

  void force_algorithm(Collective coll, std::string name);
  // Which algorithm would run `args`, and why (for tutti-info --explain).
  Decision explain(const CollArgs& args) const;

  // Set once a call timed out or the transport failed: every later call
  // fails fast instead of waiting on a peer that may be gone.
  bool failed() const { return failed_; }
  // TUTTI_CHECK, blocking calls: agrees with the other ranks on this call
  // (see safety/signature_check.hpp) before it starts, zero-count calls
  // included, after the agreements of earlier non-blocking calls. Throws
  // Error; a timeout marks the communicator failed.
  void check_agreement(const CollArgs& args) {
    if (signature_check_) agree_with_peers(args);  // inline: off unless TUTTI_CHECK=1
  }
  // False where this process sees no CUDA device: every buffer is host
  // memory then, and the API skips the per-buffer memory-type lookups.
  bool device_buffers_possible() const { return device_buffers_possible_; }
  const std::string& failure() const { return failure_; }
  // tutti_comm_abort: fails every operation in flight and every later one
  // here, and tells the other ranks, whose communicators do the same when
  // they next wait idle.
  void abort();
  // tutti_comm_abort from a thread other than the one inside a call on this
  // communicator (a watchdog): that call's idle wait aborts, here and on
  // the other ranks, and returns; then the asking thread gets its turn.
  void ask_abort() { abort_asked_.store(true, std::memory_order_release); }
  // Whether this communicator has been aborted by another thread's ask or
  // by another rank; if so, aborts here too. For idle waits and polls.
  bool poll_aborts();

  size_t operations_in_flight() const { return active_.size() + shm_waiting_.size(); }

 private:
  // Everything the decision and the schedule depend on, except alltoallv's
  // counts (alltoallv plans are not cached).
  struct CallKey {
    Collective coll;
    size_t count;
    Datatype dtype;
    Op op;
    int root;
    bool in_place;
    MemoryType memory;
    int variant = 0;  // 1: the rule's alternative (api/state_choice.hpp)
    bool operator==(const CallKey&) const = default;
  };
  struct CallKeyHash {
    size_t operator()(const CallKey& k) const;
  };
  // What a call signature runs: decided and built once, replayed after.
  struct Plan {
    const algos::Algorithm* algorithm = nullptr;
    AlgoParams params;
    bool fell_back = false;
    std::shared_ptr<const Schedule> schedule;  // null for "mpi"
    bool direct = false;  // a blocking call may run algorithm->run_direct
    bool has_alternative = false;  // Decision::alternative (variant 0's plan)
  };

  // The cached plan for `args`; `blocking`: run_blocking's call, which may
  // exchange alltoallv's counts inside the node.
  const Plan& plan_for(const CollArgs& args, bool blocking, int variant = 0);
  // What every collective call does first: refuses on a failed
  // communicator, finds the plan (unless the caller `found` it already),
  // counts, and labels the call.
  const Plan& begin_call(const CollArgs& args, OpLabel& label, bool blocking = false,
                         int variant = 0, const Plan* found = nullptr);
  // run_blocking once the plan's variant is chosen (`found`: its plan,
  // where the caller looked it up already).
  Status run_plan(const CollArgs& args, int variant, const void* in, void* out, MemoryType in_mem,
                  MemoryType out_mem, const Plan* found = nullptr);
  // TUTTI_FOLLOW_STATE: the variant of `key`'s call that every rank takes,
  // rank 0's proposal (a 1-byte bcast; api/state_choice.hpp), into `agreed`.
  Status agree_on_variant(uint64_t key, int& agreed);
  // The smallest and largest alltoallv size of every rank since the last
  // agreement, packed (base/agreed_size.hpp), reduced in place.
  Status agree_on_alltoallv_size(AgreedSize::Packed& both);
  // A collective of tutti's own on this communicator (in place, on host
  // memory `data`), left out of the user's statistics and last algorithm.
  Status run_internal(const CollArgs& args, void* data);
  // alltoallv: the send counts of every rank of this rank's node, in the
  // node's rank order (P each), into node_counts_. Messages between the
  // node's ranks, tagged with the coming call's sequence number and an
  // index no schedule reaches; waits as a call does (TUTTI_TIMEOUT).
  // Throws Error.
  std::span<const size_t> exchange_node_counts(const CollArgs& args);
  // Starts `plan` as an operation in flight (through CUDA ordering, the
  // shared-segment queue or at once).
  std::shared_ptr<Operation> launch(const CollArgs& args, const Plan& plan, const OpLabel& label,
                                    const void* in, void* out, MemoryType in_mem,
                                    MemoryType out_mem);
  // start_group's parts: one call by itself, and a batch of allreduces
  // (indices into `calls`) fused into one over a packed buffer.
  std::shared_ptr<Operation> start_grouped(GroupedCall& call);
  std::shared_ptr<Operation> start_fused(const std::vector<GroupedCall>& calls,
                                         const std::vector<size_t>& batch);
  // Which grouped allreduces run fused: batches of two or more, each of
  // one datatype and op, in call order.
  std::vector<std::vector<size_t>> fusion_batches(const std::vector<GroupedCall>& calls) const;
  // Buffers for a schedule on host memory, with the shared segment if any.
  Buffers host_buffers(const void* in, void* out);
  // Starts `plan` on buffers all in `mem` memory.
  std::shared_ptr<Operation> start_plan(const CollArgs& args, const Plan& plan,
                                        const OpLabel& label, const void* in, void* out,
                                        MemoryType mem);
  // A blocking call of a schedule that needs no transport (flags and local
  // steps: the shared-memory algorithms, or one rank) runs to its end right
  // here, with no operation object and no progress() round per poll: a
  // flag found set is acted on at once. `bytes`: for the flight recorder.
  Status run_in_node(const Plan& plan, const OpLabel& label, const void* in, void* out,
                     size_t bytes);
  // A blocking call whose plan is `direct` runs the algorithm's run_direct
  // (engine/direct_call.hpp), on this stack, waiting through a DirectWait.
  Status run_direct(const CollArgs& args, const Plan& plan, const OpLabel& label, const void* in,
                    void* out);
  // The flight recorder's end of a call run on this stack (run_in_node,
  // run_direct): its status, and the trace file written on a timeout.
  void record_end(uint64_t trace, Status status, const std::string& error);
  class Patience;  // how a blocked call waits between polls
  class DirectWait;
  // "<what> timed out after <s> s on rank <r>; still waiting for rank(s) ..."
  std::string timeout_message(const std::string& what, std::vector<int> waiting,
                              double timeout_s) const;
  // Whether a new call must go through cuda::CallOp (a stream is set, or
  // calls before it wait for theirs).
  bool ordered_by_cuda() const;
  // Whether the node's ranks wait for cores, which sizes the segment's
  // signal groups (SharedSegment::signal_groups): some node has more ranks
  // than CPUs, or the launcher asked ranks to yield when idle (mpirun --mca
  // mpi_yield_when_idle 1, as users run more ranks than cores). A node's
  // CPU mask cannot show ranks of other jobs or containers on its cores:
  // on 4 x 2 emulated nodes (8 ranks on 2 cores, each node's mask showing
  // 2 CPUs for its 2 ranks) small bcasts and reduces back to back took 5.3
  // and 7.7x Open MPI's time with 4 groups, 1.06 and 1.39 with 16
  // (docs/perf/signal-groups-yield-2026-11-30.txt).
  bool ranks_wait_for_cores() const { return topology().shared_cores || config_.launcher_yields; }
  void log_decision(const CollArgs& args, const Decision& d);
  std::string forced_origin(Collective coll) const;

  MPI_Comm mpi_comm_ = MPI_COMM_NULL;  // private duplicate: bootstrap and "mpi" collectives
  // Set when an "mpi" collective timed out in flight: mpi_comm_ is then
  // never freed (see start_mpi_collective).
  std::shared_ptr<bool> mpi_comm_in_use_ = std::make_shared<bool>(false);
  int rank_ = 0, size_ = 1;
  Config config_;
  std::unique_ptr<Transport> transport_;
  Dispatcher dispatcher_;
  std::array<std::string, kNumCollectives> forced_;
  std::array<bool, kNumCollectives> forced_by_api_{};
  std::unordered_map<CallKey, Plan, CallKeyHash> plans_;
  CallKey last_key_{};
  const Plan* last_plan_ = nullptr;  // plans_'s entry for last_key_
  // alltoallv's last plan and the counts and displacements it was built for.
  struct AlltoallvPlan {
    Plan plan;
    CallKey key{};
    // Send counts, send displacements, receive counts, receive
    // displacements, one after the other, and how many of each.
    std::vector<size_t> layout;
    std::array<size_t, 4> sizes{};
    // Whether it was built for a call that could exchange the node's
    // counts, and those counts where its algorithm needs them.
    bool node_counts_exchangeable = false;
    uint64_t agreed_bytes = 0;
    std::vector<size_t> node_counts;
    bool same_layout(const CollArgs& a) const {
      size_t at = 0, i = 0;
      for (const auto part : {a.send_counts, a.send_displs, a.recv_counts, a.recv_displs}) {
        if (part.size() != sizes[i++] || !std::equal(part.begin(), part.end(), layout.begin() + at))
          return false;
        at += part.size();
      }
      return true;
    }
    void keep_layout(const CollArgs& a) {
      layout.clear();
      size_t i = 0;
      for (const auto part : {a.send_counts, a.send_displs, a.recv_counts, a.recv_displs}) {
        layout.insert(layout.end(), part.begin(), part.end());
        sizes[i++] = part.size();
      }
    }
  };
  AlltoallvPlan last_alltoallv_;
  std::vector<size_t> node_counts_;  // exchange_node_counts's
  ScratchPool scratch_;
#if TUTTI_HAVE_CUDA
  ScratchPool device_scratch_;  // for schedules on device buffers
  cuda::StartOrder start_order_;
  const cuda::StagingTransport* staging_ = nullptr;  // transport_, where device buffers are possible
#endif
  CUstream_st* stream_ = nullptr;
  std::vector<std::shared_ptr<Operation>> active_;
  // Single-node communicators: the shared segment of the shm algorithms,
  // which one operation at a time may use. The others wait their turn in
  // call order (the same on every rank, so the queue cannot deadlock).
  std::unique_ptr<NodeMemory> node_memory_;  // this node's shared segment
  void allocate_node_memory();
  bool settle_fast_reads(MPI_Comm node_comm);
  // TUTTI_FOLLOW_STATE, on where every rank asked for it (agreed at
  // creation): blocking calls of rules with an alternative probe both.
  Config::FollowState follow_state_ = Config::FollowState::off;
  StateChoice state_choice_;
  // Blocking alltoallv on host buffers across nodes: the size its rules
  // are matched on (agree_on_alltoallv_size).
  AgreedSize alltoallv_size_;
  std::vector<char> direct_scratch_;  // DirectCall::scratch, sized with the plans
  std::shared_ptr<Operation> shm_holder_;
  // The blocking call running on the caller's stack (run_blocking), polled
  // by progress() like the operations in active_.
  Operation* direct_ = nullptr;
  std::deque<std::shared_ptr<Operation>> shm_waiting_;
  uint32_t next_seq_ = 0;
  uint64_t progress_calls_ = 0;
  CommStats stats_;
  bool device_buffers_possible_ = false;  // a CUDA device is usable (fixed per process)
  std::string_view last_algorithm_ = "";
  // Decisions logged once each (TUTTI_DEBUG=decisions): collective, log2 size
  // bucket, and for alltoallv across nodes the agreed size's bucket (else -1).
  std::set<std::tuple<int, int, int>> logged_decisions_;
  bool failed_ = false;
  progress_elsewhere::Claim claim_;
  std::unique_ptr<SignatureCheck> signature_check_;  // TUTTI_CHECK=1 only
  // Non-blocking calls under TUTTI_CHECK whose call has not started, in
  // call order: the front's agreement is in flight (one at a time).
  std::deque<std::shared_ptr<CheckedOp>> checked_waiting_;
  std::unique_ptr<AbortChannel> abort_channel_;
  bool aborted_ = false;  // here or by another rank's notice
  std::atomic<bool> abort_asked_{false};  // by another thread: ask_abort()
  std::unique_ptr<FlightRecorder> recorder_;  // TUTTI_TRACE only
  // From now on every call fails fast with `why` (a timeout, an abort, a
  // transport failure). The first cause stays: a later call that failed
  // because of it would wrap it in one more "failed earlier: " each time.
  void mark_failed(const std::string& why) {
    if (failed_) return;
    failed_ = true;
    failure_ = why;
  }
  // check_agreement's exchange with the other ranks (TUTTI_CHECK=1).
  void agree_with_peers(const CollArgs& args);
  // TUTTI_CHECK, non-blocking calls: queues `op`; progress() posts its
  // agreement in turn and starts it.
  std::shared_ptr<Operation> start_checked(std::shared_ptr<CheckedOp> op);
  // Advances the agreements of queued checked calls, in call order, and
  // starts each call whose agreement finished.
  void start_checked_calls();
  // Ends `why` for every operation in flight; marks the communicator failed.
  void fail_everything(Status why, const std::string& message);
  // Bookkeeping when an operation has started or finished.
  void on_started(Operation& op, size_t bytes);
  void on_finished(Operation& op);
  std::string failure_;
};

// Groups ranks by node (MPI_COMM_TYPE_SHARED). Collective over comm.
Topology discover_topology(MPI_Comm comm);

}  // namespace tutti
