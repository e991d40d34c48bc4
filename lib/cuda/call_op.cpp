#include "cuda/call_op.hpp"

#include <algorithm>

namespace tutti::cuda {

CallSpec collective_spec(const CollArgs& args, int rank, int nranks, const void* in, void* out,
                         MemoryType in_mem, MemoryType out_mem, MemoryType run_mem,
                         cudaStream_t user_stream) {
  CallSpec s;
  s.in = in;
  s.out = out;
  s.in_mem = in_mem;
  s.out_mem = out_mem;
  s.run_mem = run_mem;
  s.user_stream = user_stream;
  const BufferShape shape = buffer_shape(args, rank, nranks);
  s.in_bytes = in ? shape.input_bytes : 0;
  s.out_bytes = out ? shape.output_bytes : 0;
  s.in_place = args.in_place;
  if (s.in_place) {
    // Stage the containing buffer whole, so the aliasing survives.
    s.layout = in_place_layout(args, rank);
    if (s.layout.input_inside_output)
      s.out_bytes = std::max(s.out_bytes, s.layout.offset + shape.input_bytes);
    else
      s.in_bytes = std::max(s.in_bytes, s.layout.offset + shape.output_bytes);
  }
  return s;
}

CallOp::CallOp(const OpLabel& label, const CallSpec& spec, Starter start, ScratchPool& host_pool,
               ScratchPool& device_pool, StartOrder& order)
    : Operation(label),
      spec_(spec),
      start_(std::move(start)),
      host_pool_(host_pool),
      device_pool_(device_pool),
      order_(order) {
  if (spec_.user_stream) {
    input_ready_.emplace();
    check(input_ready_->record(spec_.user_stream),
          "recording an event on the communicator's stream (is it a stream of the current device?)");
  }
  ticket_ = order_.take();  // last: nothing may throw once we hold a ticket
}

CallOp::~CallOp() {
  if (phase_ == Phase::Waiting) order_.release(ticket_);
  // Temporaries go back to their pools: tutti's work on them must be done.
  if (phase_ == Phase::Tail && tail_) (void)tail_->synchronize();
}

void CallOp::stage_in(const void*& in, void*& out) {
  const MemoryType run = spec_.run_mem;
  ScratchPool& pool = run == MemoryType::Cuda ? device_pool_ : host_pool_;
  // Into the memory the inner operation runs on; waits where the host reads.
  auto copy_in = [&](void* dst, const void* src, size_t bytes) {
    check(copy(dst, src, bytes, run == MemoryType::Host), "staging a buffer for the call");
  };
  if (spec_.in_place) {
    const bool in_out = spec_.layout.input_inside_output;
    void* user = in_out ? spec_.out : const_cast<void*>(spec_.in);
    const MemoryType mem = in_out ? spec_.out_mem : spec_.in_mem;
    const size_t bytes = in_out ? spec_.out_bytes : spec_.in_bytes;
    if (!user || mem == run || bytes == 0) return;
    temp_out_ = pool.acquire(bytes);
    char* base = static_cast<char*>(temp_out_.data());
    copy_in(base, user, bytes);
    if (in_out) {
      out = base;
      in = base + spec_.layout.offset;
      copy_back_ = CopyBack{user, mem, base, bytes};
    } else {
      // Scatter's root: its block already is in place and is not written.
      in = base;
      out = base + spec_.layout.offset;
    }
    return;
  }
  if (in && spec_.in_mem != run && spec_.in_bytes > 0) {
    temp_in_ = pool.acquire(spec_.in_bytes);
    copy_in(temp_in_.data(), in, spec_.in_bytes);
    in = temp_in_.data();
  }
  if (out && spec_.out_mem != run && spec_.out_bytes > 0) {
    // Copied in too: what the call does not write (alltoallv's gaps, bcast's
    // root data) must come back unchanged.
    temp_out_ = pool.acquire(spec_.out_bytes);
    copy_in(temp_out_.data(), out, spec_.out_bytes);
    copy_back_ = CopyBack{out, spec_.out_mem, temp_out_.data(), spec_.out_bytes};
    out = temp_out_.data();
  }
}

bool CallOp::try_start() {
  if (!order_.is_turn(ticket_)) return false;
  if (input_ready_) {
    const cudaError_t q = input_ready_->query();
    if (q == cudaErrorNotReady) return false;
    if (q != cudaSuccess) {
      cudaGetLastError();
      finish_with(status_of(q), describe(q, "the work enqueued on the stream before the call"));
      order_.release(ticket_);
      phase_ = Phase::Done;
      return true;
    }
  }
  device_work_ = spec_.run_mem == MemoryType::Cuda;
  try {
    ErrorScope scope(errors_);
    const void* in = spec_.in;
    void* out = spec_.out;
    stage_in(in, out);
    inner_ = start_(in, out);
  } catch (const Error& e) {
    finish_with(e.status(), e.what());
  }
  order_.release(ticket_);
  phase_ = Phase::Running;
  if (!inner_) begin_tail();  // failed to start: only staging copies to wait for
  return true;
}

void CallOp::begin_tail() {
  if (status() == TUTTI_SUCCESS && copy_back_) {
    const cudaError_t e = copy(copy_back_->dst, copy_back_->src, copy_back_->bytes,
                               copy_back_->dst_mem == MemoryType::Host);
    if (e != cudaSuccess) finish_with(status_of(e), describe(e, "copying the result back"));
    if (copy_back_->dst_mem == MemoryType::Cuda) device_work_ = true;
  }
  if (errors_.count != 0) finish_with(TUTTI_ERR_INTERNAL, errors_.last);
  phase_ = Phase::Done;
  if (!device_work_) return;
  try {
    tail_.emplace();
    check(tail_->record(stream()), "recording the end of the call's device work");
    if (spec_.user_stream) {
      // Later work on the user's stream waits on the device, not the host.
      check(cudaStreamWaitEvent(spec_.user_stream, tail_->get(), 0),
            "making the communicator's stream wait for the call");
      return;
    }
  } catch (const Error& e) {
    finish_with(e.status(), e.what());
    return;
  }
  phase_ = Phase::Tail;
}

// The inner operation runs this call's local steps (kernels, copies) as it
// progresses: errors noted meanwhile are this call's.
bool CallOp::poll_inner() {
  ErrorScope scope(errors_);
  return inner_->poll();
}

bool CallOp::advance() {
  switch (phase_) {
    case Phase::Waiting:
      if (!try_start()) return false;
      if (phase_ == Phase::Done) return true;
      if (phase_ == Phase::Tail) break;
      [[fallthrough]];
    case Phase::Running:
      if (!poll_inner()) return false;
      if (inner_->status() != TUTTI_SUCCESS) finish_with(inner_->status(), inner_->error());
      begin_tail();
      if (phase_ == Phase::Done) return true;
      break;
    case Phase::Tail: break;
    case Phase::Done: return true;
  }
  const cudaError_t q = tail_->query();
  if (q == cudaErrorNotReady) return false;
  if (q != cudaSuccess) {
    cudaGetLastError();
    finish_with(status_of(q), describe(q, "the call's device work"));
  }
  phase_ = Phase::Done;
  return true;
}

void CallOp::cancel(Status why, const std::string& message) {
  finish_with(why, message);
  switch (phase_) {
    case Phase::Waiting:
      order_.release(ticket_);
      phase_ = Phase::Done;
      break;
    case Phase::Running: inner_->cancel(why, message); break;
    case Phase::Tail:  // device work cannot be called back; it ends soon
    case Phase::Done: break;
  }
}

std::vector<int> CallOp::waiting_for() const {
  if (phase_ == Phase::Running && inner_) return inner_->waiting_for();
  return {};
}

}  // namespace tutti::cuda
