// What an algorithm knows about one collective call: everything except the
// buffer addresses, so that the schedule it builds can be cached by this
// signature and replayed on any buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/types.hpp"

namespace tutti {

// Algorithm parameters a tuning rule may set; 0 means "the algorithm's default".
struct AlgoParams {
  size_t chunk_bytes = 0;  // pipelining granularity for large messages
  int radix = 0;           // tree fan-out (k-nomial)
  bool operator==(const AlgoParams&) const = default;
};

struct CollArgs {
  Collective coll = Collective::Barrier;
  // Elements. allreduce/reduce/bcast: the whole vector. allgather, gather,
  // scatter, alltoall: one rank's block. reduce_scatter: one rank's result
  // block (like MPI_Reduce_scatter_block). alltoallv: unused (see below).
  size_t count = 0;
  Datatype dtype = Datatype::Uint8;
  Op op = Op::Sum;
  int root = 0;
  // MPI in-place semantics, already normalised by the API layer: the input
  // buffer is (part of) the output buffer. Builders must stay correct when
  // Input aliases Output this way (see engine/schedule.hpp).
  bool in_place = false;
  MemoryType memory = MemoryType::Host;
  AlgoParams params;
  // alltoallv only, in elements; valid while the schedule is being built.
  std::span<const size_t> send_counts, send_displs, recv_counts, recv_displs;
  // alltoallv across nodes, for algorithms that hand blocks on inside a node
  // (Algorithm::needs_node_counts): the send counts of every rank of this
  // rank's node, in the node's rank order, P each; set before the schedule
  // is built. `node_counts_exchangeable` tells the dispatcher that the
  // caller can have them (Comm: blocking calls on host buffers, which
  // exchange them inside the node; the simulator).
  std::span<const size_t> node_send_counts;
  bool node_counts_exchangeable = false;
  // alltoallv: the size its rules are matched on, the same on every rank
  // (base/agreed_size.hpp: blocking calls on host buffers across nodes); 0
  // elsewhere.
  uint64_t agreed_bytes = 0;

  size_t elem_size() const { return datatype_size(dtype); }
};

// A CollArgs kept past the API call that made it, for a call that starts
// later (after TUTTI_CHECK's agreement, or in CUDA stream order):
// alltoallv's count and displacement arrays are the caller's, who may reuse
// them once the call has returned, so it holds copies (a copy of a HeldArgs
// points at its own).
class HeldArgs {
 public:
  explicit HeldArgs(const CollArgs& args);
  HeldArgs(const HeldArgs& other) : HeldArgs(other.args_) {}
  HeldArgs& operator=(const HeldArgs&) = delete;
  const CollArgs& get() const { return args_; }

 private:
  CollArgs args_;
  std::vector<size_t> arrays_;  // the spans' contents, one after another
};

// Op::Avg on 16-bit floats divides every input by the rank count before
// the sum, as NCCL does: their sum overflows long before their average
// (float16 ends at 65504: four ranks' 20000 do). Other types sum first and
// divide the result, which rounds once. Only reductions on more than one
// rank divide at all.
inline bool premultiplies_average(const CollArgs& a, int nranks) {
  return a.op == Op::Avg && (a.dtype == Datatype::Float16 || a.dtype == Datatype::Bfloat16) &&
         is_reduction(a.coll) && nranks > 1;
}

// The "message size" tuning rules and tutti-bench use (the nccl-tests size):
// the bytes of the largest user buffer of one rank.
size_t message_bytes(const CollArgs& args, int nranks);

// The inverse: the count that gives a message of `bytes` (rounded down).
size_t count_for_message_bytes(Collective coll, uint64_t bytes, Datatype dt, int nranks);

std::string describe(const CollArgs& args);  // "allreduce count=.. dtype=.."

// The buffers one rank passes for a call, in bytes; 0 where MPI says the
// buffer is not significant (e.g. recvbuf of reduce on a non-root rank).
// bcast has only an output buffer (the root's data is in it).
struct BufferShape {
  size_t input_bytes = 0;
  size_t output_bytes = 0;
  bool has_input = false;
  bool has_output = false;
};
BufferShape buffer_shape(const CollArgs& args, int rank, int nranks);

// For in-place calls: where the input lives relative to the output. For
// scatter the root's output lives inside its input instead (input_inside_output
// false). Both in bytes.
struct InPlaceLayout {
  bool input_inside_output = true;
  size_t offset = 0;
};
InPlaceLayout in_place_layout(const CollArgs& args, int rank);

}  // namespace tutti
