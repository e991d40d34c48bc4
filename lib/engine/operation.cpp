#include "engine/operation.hpp"

namespace tutti {

std::string OpLabel::to_string() const {
  if (kind == "send") return str("send to rank ", peer, " tag ", tag);
  if (kind == "receive")
    return peer == kAnySource ? str("receive from any rank tag ", tag)
                              : str("receive from rank ", peer, " tag ", tag);
  if (algorithm.empty()) return std::string(kind);  // never numbered (a call that could not start)
  return str(kind, " #", seq, " (", algorithm, ")");
}

ScheduleOp::ScheduleOp(const OpLabel& label, Transport& transport,
                       std::shared_ptr<const Schedule> schedule, Buffers bufs, uint32_t seq,
                       ScratchLease scratch)
    : Operation(label),
      uses_transport_(schedule->uses_transport),
      scratch_(std::move(scratch)),
      run_(transport, std::move(schedule),
           [&] {
             bufs.scratch = scratch_.data();
             return bufs;
           }(),
           seq) {}

ScheduleOp::~ScheduleOp() {
  run_.let_go();
  // The transport may still write into the scratch memory of a round it
  // never let go of: the pool must not hand it out again.
  if (run_.abandoned()) scratch_.keep_until_pool_ends();
}

bool ScheduleOp::advance() {
  if (!run_.advance()) return false;
  if (run_.status() != TUTTI_SUCCESS) finish_with(run_.status(), run_.error());
  return true;
}

void ScheduleOp::cancel(Status why, const std::string& message) { run_.cancel(why, message); }

PointToPointOp::PointToPointOp(const OpLabel& label, Transport& transport, int peer)
    : Operation(label), transport_(transport), peer_(peer) {}

Status PointToPointOp::post_send(Tag tag, const void* buf, size_t bytes, MemoryType mem) {
  return transport_.send(peer_, tag, buf, bytes, mem, &completion_);
}

Status PointToPointOp::post_recv(Tag tag, void* buf, size_t bytes, MemoryType mem,
                                 int* source) {
  is_recv_ = true;
  expected_bytes_ = bytes;
  source_ = source;
  return transport_.recv(peer_, tag, buf, bytes, mem, &completion_);
}

bool PointToPointOp::advance() {
  if (!completion_.done) return false;
  // The rank the message came from (a receive from any source learns it here).
  const int from = completion_.source >= 0 ? completion_.source : peer_;
  auto who = [&] {
    if (!is_recv_) return str("send to rank ", peer_);
    return from == kAnySource ? std::string("receive from any rank") : str("receive from rank ", from);
  };
  if (completion_.status != TUTTI_SUCCESS) {
    // The caller's message starts with the operation's label; a receive
    // from any source adds the sender it learnt.
    const bool add_sender = is_recv_ && peer_ == kAnySource && from >= 0;
    finish_with(completion_.status,
                completion_.error.empty()
                    ? str(who(), " failed")
                    : (add_sender ? str("the message came from rank ", from, ": ") : std::string()) +
                          completion_.error);
  } else if (is_recv_ && completion_.bytes != expected_bytes_) {
    finish_with(TUTTI_ERR_MISMATCH, str(who(), " expected ", expected_bytes_,
                                        " bytes, the message had ", completion_.bytes));
  } else if (source_) {
    *source_ = from;
  }
  return true;
}

void PointToPointOp::cancel(Status why, const std::string& message) {
  finish_with(why, message);
  if (!completion_.done && !cancelled_) {
    cancelled_ = true;
    transport_.cancel(&completion_);
  }
}

std::vector<int> PointToPointOp::waiting_for() const {
  if (completion_.done || peer_ == kAnySource) return {};
  return {peer_};
}

}  // namespace tutti
