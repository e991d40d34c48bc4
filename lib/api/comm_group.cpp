// Comm::start_group: the calls of a group (tutti_group_start/end) start
// together, and small allreduces of one datatype and op run as one
// allreduce over a packed buffer. A gradient bucket of many small tensors
// then pays one collective's latency instead of one per tensor (Horovod's
// tensor fusion; NCCL instead launches a group's calls in one kernel).
#include <cstring>
#include <map>
#include <new>
#include <utility>

#include "api/comm.hpp"

namespace tutti {
namespace {

// A grouped call that could not start: finished, with the reason.
class SettledOp final : public Operation {
 public:
  SettledOp(const OpLabel& label, Status status, std::string error) : Operation(label) {
    finish_with(status, std::move(error));
    poll();
  }
  void cancel(Status, const std::string&) override {}
  bool uses_transport() const override { return false; }

 protected:
  bool advance() override { return true; }
};

// Allreduces fused into one: their inputs were packed into `packed_` before
// `inner_` (an in-place allreduce over it) started; once it finished, each
// result is copied out to its caller's buffer.
class FusedAllreduceOp final : public Operation {
 public:
  struct Part {
    void* out;
    size_t offset, bytes;
  };
  FusedAllreduceOp(const OpLabel& label, std::vector<Part> parts, ScratchLease packed,
                   std::shared_ptr<Operation> inner)
      : Operation(label), parts_(std::move(parts)), packed_(std::move(packed)),
        inner_(std::move(inner)) {}
  void cancel(Status why, const std::string& message) override { inner_->cancel(why, message); }
  std::vector<int> waiting_for() const override { return inner_->waiting_for(); }
  bool uses_transport() const override { return inner_->uses_transport(); }

 protected:
  bool advance() override {
    // finished(), not poll(): the inner call may still be queued for the
    // shared segment, and only the communicator may start it.
    if (!inner_->finished()) return false;
    if (inner_->status() != TUTTI_SUCCESS) {
      finish_with(inner_->status(), str(inner_->description(), ": ", inner_->error()));
      return true;
    }
    const char* packed = static_cast<const char*>(packed_.data());
    for (const Part& p : parts_) std::memcpy(p.out, packed + p.offset, p.bytes);
    return true;
  }

 private:
  std::vector<Part> parts_;
  ScratchLease packed_;
  std::shared_ptr<Operation> inner_;
};

// A fused allreduce packs at most this much: beyond it the copies cost more
// than the latency they save (Horovod's default fusion buffer).
constexpr size_t kMaxFusedBytes = size_t{64} << 20;

}  // namespace

std::vector<std::vector<size_t>> Comm::fusion_batches(const std::vector<GroupedCall>& calls) const {
  std::vector<std::vector<size_t>> batches;
  // Under TUTTI_CHECK every call is agreed on by itself, so that a
  // mismatched group names the call that differs.
  if (signature_check_ || config_.group_fuse_bytes == 0) return batches;
  std::map<std::pair<Datatype, Op>, size_t> open;  // -> index into batches
  std::vector<size_t> bytes;                         // per batch
  for (size_t i = 0; i < calls.size(); ++i) {
    const GroupedCall& c = calls[i];
    if (c.kind != GroupedCall::Kind::Collective || c.args.coll != Collective::Allreduce ||
        c.args.memory != MemoryType::Host)
      continue;
    const size_t b = c.args.count * c.args.elem_size();
    if (b > config_.group_fuse_bytes) continue;
    const auto key = std::make_pair(c.args.dtype, c.args.op);
    auto it = open.find(key);
    if (it == open.end() || bytes[it->second] + b > kMaxFusedBytes) {
      open[key] = batches.size();
      batches.emplace_back();
      bytes.push_back(0);
      it = open.find(key);
    }
    batches[it->second].push_back(i);
    bytes[it->second] += b;
  }
  std::erase_if(batches, [](const std::vector<size_t>& b) { return b.size() < 2; });
  return batches;
}

std::shared_ptr<Operation> Comm::start_grouped(GroupedCall& call) {
  switch (call.kind) {
    case GroupedCall::Kind::Send:
    case GroupedCall::Kind::Receive:
      return start_point_to_point(call.kind == GroupedCall::Kind::Send, call.buf, call.bytes,
                                  call.peer, call.tag, call.mem, call.source);
    case GroupedCall::Kind::EmptyCollective: {
      note_empty_call();
      std::shared_ptr<Operation> op = start_empty_collective(call.args);
      if (!op) op = std::make_shared<SettledOp>(OpLabel{collective_name(call.args.coll), "none"},
                                                TUTTI_SUCCESS, "");
      return op;
    }
    case GroupedCall::Kind::Collective:
      break;
  }
  call.own_counts();
  return start_collective(call.args, call.in, call.out, call.in_mem, call.out_mem);
}

std::shared_ptr<Operation> Comm::start_fused(const std::vector<GroupedCall>& calls,
                                             const std::vector<size_t>& batch) {
  const CollArgs& first = calls[batch.front()].args;
  const size_t elem = first.elem_size();
  size_t count = 0;
  for (size_t i : batch) count += calls[i].args.count;
  ScratchLease packed = scratch_.acquire(count * elem);
  std::vector<FusedAllreduceOp::Part> parts;
  char* p = static_cast<char*>(packed.data());
  size_t offset = 0;
  for (size_t i : batch) {
    const size_t bytes = calls[i].args.count * elem;
    std::memcpy(p + offset, calls[i].in, bytes);
    parts.push_back({calls[i].out, offset, bytes});
    offset += bytes;
  }
  CollArgs args{.coll = Collective::Allreduce, .count = count, .dtype = first.dtype,
                .op = first.op, .in_place = true, .memory = MemoryType::Host};
  std::shared_ptr<Operation> inner =
      start_collective(args, p, p, MemoryType::Host, MemoryType::Host);
  const OpLabel label{"grouped allreduce", inner->label().algorithm, inner->label().seq};
  auto op = std::make_shared<FusedAllreduceOp>(label, std::move(parts), std::move(packed),
                                               std::move(inner));
  stats_.fused_calls += batch.size();
  on_started(*op, count * elem);
  if (op->poll()) on_finished(*op);
  else active_.push_back(op);
  return op;
}

std::vector<std::shared_ptr<Operation>> Comm::start_group(std::vector<GroupedCall>& calls) {
  std::vector<std::shared_ptr<Operation>> ops(calls.size());
  // Each call's batch, if it runs fused; a batch starts at its first call.
  std::vector<const std::vector<size_t>*> batch_of(calls.size(), nullptr);
  const std::vector<std::vector<size_t>> batches = fusion_batches(calls);
  for (const auto& b : batches)
    for (size_t i : b) batch_of[i] = &b;
  stats_.grouped_calls += calls.size();
  for (size_t i = 0; i < calls.size(); ++i) {
    if (ops[i]) continue;  // started with its batch
    const std::vector<size_t>* batch = batch_of[i];
    try {
      if (batch) {
        std::shared_ptr<Operation> op = start_fused(calls, *batch);
        for (size_t j : *batch) ops[j] = op;
      } else {
        ops[i] = start_grouped(calls[i]);
      }
    } catch (const std::exception& e) {
      const Error* error = dynamic_cast<const Error*>(&e);
      const Status status = error                                         ? error->status()
                            : dynamic_cast<const std::bad_alloc*>(&e) ? TUTTI_ERR_OUT_OF_MEMORY
                                                                        : TUTTI_ERR_INTERNAL;
      const auto failed = std::make_shared<SettledOp>(OpLabel{"grouped call"}, status, e.what());
      if (batch)
        for (size_t j : *batch) ops[j] = failed;
      else
        ops[i] = failed;
    }
  }
  return ops;
}

}  // namespace tutti
