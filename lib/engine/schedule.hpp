// A schedule is what one rank does for one collective: sends, receives,
// receive-and-reduce, local copies and reductions, grouped in rounds. It
// refers to memory only as (buffer kind, byte offset), never by address, so
// it can be cached by the call's signature and replayed on any buffers, and
// run unchanged over UCX, MPI or the in-process simulator.
//
// Execution model (the contract between builders and the engine):
//   - Steps run in program order, except that consecutive communication
//     steps (send, recv, recv_reduce) form one round and run concurrently.
//     A round is: its local steps, in order, then all its communication,
//     posted at once; the next round starts when every step has completed.
//   - recv_reduce(peer, dst, operand, landing): the message lands in
//     `landing`, then dst = operand (op) landing, as soon as it arrives.
//     `landing` may be `dst` itself (when dst is not the operand), and
//     `operand` may be `dst` (dst = dst op landing).
//   - Within a round no two steps may write the same byte, and no step may
//     read a byte another step of the round writes (checked by
//     find_round_hazards in the tests).
//   - The k-th message from rank a to rank b in a schedule matches the k-th
//     receive posted by b from a; schedules of all ranks must agree.
//   - In-place calls: Input may alias (part of) Output. Builders read each
//     Input byte before writing the Output byte at the same address, or copy
//     Input to Output first (a copy onto itself is skipped).
//   - Shared memory (single-node communicators with a shared segment, see
//     node/shared_segment.hpp): Shared refers to the node's segment, the same
//     bytes for every rank. shm_signal(peer) tells `peer` that everything
//     this rank wrote before it (in earlier rounds or this round's local
//     steps) is visible; shm_wait(peer) completes once the matching signal
//     came. A signal may carry up to SharedSegment::carry_bytes of data,
//     which the matching wait writes to its destination. Signals and waits
//     are communication steps (they run after the round's local steps, in
//     step order: a signal may first wait for its flag line to be free);
//     the n-th signal from a to b matches b's n-th wait for a. The builder
//     puts a round's signals before its waits. A round has either
//     shared-memory flags or messages (the builder closes the round when
//     the kind changes), unless the builder was asked for a mixed round
//     (begin_mixed_round): then the engine posts its messages, runs its
//     local steps and polls its flags while the messages travel; the round
//     ends when both are done.
//     That is how a node-aware algorithm overlaps the phase between nodes
//     with the one inside each node. A schedule may have both kinds of
//     rounds: a node-aware algorithm synchronises the ranks of a node
//     through their segment and sends messages between nodes. In jobs
//     across nodes each node has its own segment, shared by the
//     communicator's ranks on that node: a schedule signals only ranks of
//     its own node. A communicator runs one shared-memory schedule at a
//     time.
//     Shared offsets below shared_half_bytes(capacity) are the half of
//     parity 0; begin_shm_chunk() says which parity a chunk uses, and the
//     engine swaps the halves when the communicator's sequence of chunks is
//     at the other parity (see SharedPort).
//   - Reads of a peer's buffers (node/peer_memory.hpp, single copy by
//     cross-memory attach): publish_buffers(peer) is a shm_signal carrying
//     this rank's buffer addresses for the call, learn_buffers(peer) the
//     matching shm_wait; after it, peer_read(peer, dst, src) (a local step)
//     copies `src` of the peer's buffers (Input, Output or Scratch) into
//     this rank's `dst`. The peer must not return before its readers are
//     done: the algorithm ends with a signal from every reader to it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/topology.hpp"
#include "engine/coll_args.hpp"

namespace tutti {

// Peers: the buffer addresses of the call's ranks, as published and learnt
// (PeerAddresses, one entry per communicator rank and this rank's own last).
enum class BufKind : uint8_t { Input, Output, Scratch, Shared, Peers };

struct BufRef {
  BufKind kind = BufKind::Scratch;
  size_t offset = 0;  // bytes
  BufRef operator+(size_t bytes) const { return {kind, offset + bytes}; }
  bool operator==(const BufRef&) const = default;
};

inline BufRef input(size_t offset = 0) { return {BufKind::Input, offset}; }
inline BufRef output(size_t offset = 0) { return {BufKind::Output, offset}; }
inline BufRef shared(size_t offset = 0) { return {BufKind::Shared, offset}; }

enum class StepKind : uint8_t {
  Send, Recv, RecvReduce, Copy, Reduce, Divide, ShmSignal, ShmWait,
  PeerRead,  // local: dst <- src of peer's buffers (src.kind: Input, Output, Scratch)
};

struct Step {
  StepKind kind;
  int peer = -1;           // Send, Recv, RecvReduce, ShmSignal, ShmWait, PeerRead
  uint32_t msg_index = 0;  // which message between this pair and direction
  size_t bytes = 0;
  BufRef dst;  // Recv, RecvReduce, Copy, Reduce, Divide, ShmWait: what is written
  BufRef src;  // Send, ShmSignal: what is sent; Copy: source; Reduce, RecvReduce: first operand
  BufRef aux;  // Reduce: second operand; RecvReduce: landing area of the message

  bool is_flag() const { return kind == StepKind::ShmSignal || kind == StepKind::ShmWait; }
  bool is_communication() const {
    return kind == StepKind::Send || kind == StepKind::Recv || kind == StepKind::RecvReduce ||
           kind == StepKind::ShmSignal || kind == StepKind::ShmWait;
  }
};

// steps[begin, comm_begin) are local steps, steps[comm_begin, end) communication.
struct Round {
  uint32_t begin, comm_begin, end;
  bool flags = false;     // it has shared-memory flags (signals, waits)
  bool messages = false;  // it has messages (sends, receives)
};

struct Schedule {
  std::vector<Step> steps;
  std::vector<Round> rounds;
  size_t scratch_bytes = 0;
  size_t shared_bytes = 0;    // extent of the shared segment it uses
  bool uses_shared = false;   // any Shared reference or shm signal/wait
  uint32_t shm_chunks = 0;    // chunks staged through the segment
  // Bytes of one parity's half that the slots span (the same on every
  // rank); the engine slides them through the half from call to call.
  size_t slot_area_bytes = 0;
  // Any send or receive (a round of messages).
  bool uses_transport = false;
  // Any peer_read: the engine keeps a table of the peers' buffer addresses
  // (peer_table_bytes: an entry per communicator rank, and its own).
  bool uses_peer_reads = false;
  size_t peer_table_bytes = 0;
  // What this rank publishes as its Input (ScheduleBuilder::publish_as_input).
  BufRef published_input = input();
  // Blocks published to one peer each (ScheduleBuilder::publish_block):
  // their table entries follow this rank's own.
  std::vector<BufRef> published_blocks;
  uint32_t max_comm_per_round = 0;
  Datatype dtype = Datatype::Uint8;
  Op op = Op::Sum;
  int nranks = 1;  // the divisor of Op::Avg

  size_t message_count() const;
  size_t bytes_sent() const;
};

class ScheduleBuilder {
 public:
  // shared_capacity: bytes of the node's shared segment available to the
  // schedule (0: none; shared-memory algorithms refuse then).
  ScheduleBuilder(const CollArgs& args, int rank, int nranks, size_t shared_capacity = 0);
  // The same on a communicator of `topo`'s shape (its nodes, its segment),
  // which must outlive the builder.
  ScheduleBuilder(const CollArgs& args, int rank, const Topology& topo);
  ScheduleBuilder(const CollArgs& args, int rank, Topology&& temporary) = delete;  // would dangle
  ScheduleBuilder(const ScheduleBuilder&) = delete;
  ScheduleBuilder& operator=(const ScheduleBuilder&) = delete;

  const CollArgs& args() const { return args_; }
  // This rank and the rank count, inside a group scope those of the group.
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  // The communicator's shape and this rank in it, whatever the scope.
  const Topology& topology() const { return *topo_; }
  int comm_rank() const { return comm_rank_; }
  size_t elem_size() const { return args_.elem_size(); }
  size_t shared_capacity() const { return shared_capacity_; }

  // Reserves `bytes` of scratch memory (64-byte aligned) for this schedule.
  BufRef scratch(size_t bytes);

  // Communication; zero-byte sends and receives are dropped (both sides
  // compute the same sizes, so they drop the same messages). chunk_bytes > 0
  // splits a message into pieces of that size, so the receiver can reduce
  // early pieces while later ones are in flight; both sides must use the same.
  void send(int peer, BufRef src, size_t bytes, size_t chunk_bytes = 0);
  void recv(int peer, BufRef dst, size_t bytes, size_t chunk_bytes = 0);
  void recv_reduce(int peer, BufRef dst, BufRef operand, BufRef landing, size_t bytes,
                   size_t chunk_bytes = 0);
  // Zero-byte messages, for pure synchronisation (barrier).
  void signal(int peer);
  void wait_signal(int peer);
  // Synchronisation through the shared segment (see the top of this file),
  // carrying `bytes` (at most SharedSegment::carry_bytes) from src to dst.
  void shm_signal(int peer, BufRef src = {}, size_t bytes = 0);
  void shm_wait(int peer, BufRef dst = {}, size_t bytes = 0);
  // Single-copy reads of a peer's buffers (see the top of this file).
  void publish_buffers(int peer);
  void learn_buffers(int peer);
  void peer_read(int peer, BufRef dst, BufRef peer_src, size_t bytes);
  // publish_buffers with `block` as the Input that `peer` sees: the peer
  // reads it as input(0). For a block at an offset only this rank knows
  // (alltoallv's displacements).
  void publish_block(int peer, BufRef block);
  // Peers that read this rank's Input read `ref` instead (a copy of it in
  // scratch, when the input changes while they read).
  void publish_as_input(BufRef ref) { sched_.published_input = ref; }
  // Starts the next chunk staged through the shared segment; returns the
  // parity (0 or 1) of the slots it uses. Parities alternate.
  int begin_shm_chunk() { return static_cast<int>(sched_.shm_chunks++ % 2); }
  // The slots' layout spans `bytes` of each half (shm_common.hpp: shm_slots).
  void note_slot_area(size_t bytes) {
    sched_.slot_area_bytes = std::max(sched_.slot_area_bytes, bytes);
  }

  // Local steps.
  void copy(BufRef dst, BufRef src, size_t bytes);
  void reduce(BufRef dst, BufRef a, BufRef b, size_t bytes);
  // The last step of Op::Avg on fully reduced data; nothing for other ops,
  // nor where the inputs were divided instead (premultiplies_average: finish
  // then makes dividing a copy of the input, or the in-place input, the
  // first step, and every step that read the input reads that).
  void finalize(BufRef dst, size_t bytes);

  // Closes the current round: later communication waits for this round's.
  void end_round();
  // Ends the round being built and starts one that may hold both messages
  // and shared-memory flags (see the top of this file), until its end_round.
  void begin_mixed_round() {
    end_round();
    mixed_round_ = true;
  }

  // Sub-groups, for algorithms composed of phases on parts of the
  // communicator (the ranks of one node, one rank per node): while the
  // returned scope lives, rank() and nranks() are this rank's position in
  // `members` (communicator ranks, which must include this one) and their
  // number, and every peer named is a position in `members`. The flat
  // building blocks (ring, binomial tree, recursive doubling) then run on
  // the group unchanged. finalize() still divides by the communicator's
  // size. Scopes do not nest.
  class GroupScope {
   public:
    explicit GroupScope(ScheduleBuilder& b) : b_(&b) {}
    GroupScope(GroupScope&& other) noexcept : b_(other.b_) { other.b_ = nullptr; }
    GroupScope(const GroupScope&) = delete;
    GroupScope& operator=(const GroupScope&) = delete;
    GroupScope& operator=(GroupScope&&) = delete;
    ~GroupScope() {
      if (b_) b_->leave_group();
    }

   private:
    ScheduleBuilder* b_;
  };
  [[nodiscard]] GroupScope within(std::vector<int> members);

  Schedule finish();
  // Steps asked for so far, zero-byte ones included: the work of building
  // (the cost model's measure of what a schedule costs to simulate).
  size_t requests() const { return requests_; }

 private:
  void add_comm(Step step, size_t chunk_bytes);
  void add_local(Step step);
  void check_peer(int peer) const;
  void check_elements(size_t bytes, const char* what) const;
  void check_inline(size_t bytes) const;
  // Closes the open round if its communication is of the other kind.
  void start_comm(bool flags);
  // The ranks of this rank's node: those its shared segment serves.
  int ranks_on_my_node() const;
  void check_same_node(int peer) const;  // a flag's peer shares this rank's segment
  void note_shared(const Step& step);
  int to_comm_rank(int peer) const;
  // The peer table's entry of a communicator rank (nranks: this rank's own).
  BufRef peer_entry(int comm_rank);
  void leave_group();
  void premultiply_input();  // see finalize

  const CollArgs& args_;
  Topology own_topo_;           // the first constructor's single node
  const Topology* topo_;        // the caller's (it outlives the builder), or own_topo_
  int comm_rank_;
  int rank_, nranks_;           // in the current group (the communicator outside one)
  std::vector<int> members_;    // the current group; empty: the communicator
  size_t shared_capacity_;
  Schedule sched_;
  std::vector<Step> local_, comm_;  // the open round
  bool comm_flags_ = false;         // comm_ holds shared-memory flags
  bool mixed_round_ = false;        // ... and may hold messages too
  size_t requests_ = 0;
};

// Structural checks on one rank's schedule: the hazards listed above and
// references outside the buffers. Returns a description of the first
// problem, or nothing. For in-place calls pass where the input lies, so that
// Input and Output references to the same memory are compared as such.
std::optional<std::string> find_round_hazards(const Schedule& sched, size_t input_bytes,
                                              size_t output_bytes,
                                              std::optional<InPlaceLayout> in_place = {});

std::string to_string(const Step& step);

}  // namespace tutti
