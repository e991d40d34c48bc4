#include "engine.hpp"

#include <cstring>

#include "memory.hpp"

namespace tutti {

ScheduleRun::ScheduleRun(Transport& transport, std::shared_ptr<const Schedule> schedule,
                         const Buffers& bufs, uint32_t seq)
    : transport_(transport),
      schedule_(std::move(schedule)),
      bufs_(bufs),
      seq_(seq),
      completions_(schedule_->max_comm_per_round),
      handled_(schedule_->max_comm_per_round) {
  if (schedule_->uses_shared && !bufs_.shared) {
    set_error(TUTTI_ERR_INTERNAL, "a shared-memory schedule ran without a shared segment");
    finished_ = true;
  } else if (schedule_->shm_chunks > 0) {
    half_bytes_ = bufs_.shared->half_bytes();
    swap_halves_ = bufs_.shared->take_parity(schedule_->shm_chunks);
  }
}

ScheduleRun::~ScheduleRun() {
  // Never leave the transport writing into memory we are about to free.
  if (round_posted_ && outstanding_ > 0 && !finished_) {
    cancel(TUTTI_ERR_INTERNAL, "collective destroyed while in flight");
    while (!advance()) transport_.progress();
  }
}

char* ScheduleRun::address(BufRef ref) const {
  char* base = nullptr;
  switch (ref.kind) {
    case BufKind::Input: base = static_cast<char*>(const_cast<void*>(bufs_.input)); break;
    case BufKind::Output: base = static_cast<char*>(bufs_.output); break;
    case BufKind::Scratch: base = static_cast<char*>(bufs_.scratch); break;
    case BufKind::Shared: {
      if (!bufs_.shared) return nullptr;
      size_t offset = ref.offset;
      if (swap_halves_) offset = offset < half_bytes_ ? offset + half_bytes_ : offset - half_bytes_;
      return bufs_.shared->segment().data() + offset;
    }
  }
  return base ? base + ref.offset : nullptr;
}

MemoryType ScheduleRun::memory(BufRef ref) const {
  switch (ref.kind) {
    case BufKind::Input: return bufs_.input_mem;
    case BufKind::Output: return bufs_.output_mem;
    case BufKind::Scratch: return bufs_.scratch_mem;
    case BufKind::Shared: return MemoryType::Host;
  }
  return MemoryType::Host;
}

void ScheduleRun::set_error(Status status, std::string message) {
  if (status_ != TUTTI_SUCCESS) return;  // keep the first (root) cause
  status_ = status;
  error_ = std::move(message);
}

void ScheduleRun::run_local(const Step& s) {
  const Schedule& sched = *schedule_;
  const size_t esize = datatype_size(sched.dtype);
  switch (s.kind) {
    case StepKind::Copy:
      local_copy(address(s.dst), memory(s.dst), address(s.src), memory(s.src), s.bytes);
      break;
    case StepKind::Reduce:
      local_reduce(address(s.dst), address(s.src), address(s.aux), s.bytes / esize, sched.dtype,
                   sched.op, memory(s.dst));
      break;
    case StepKind::Divide:
      local_divide(address(s.dst), s.bytes / esize, sched.dtype, sched.nranks, memory(s.dst));
      break;
    default: break;
  }
}

bool ScheduleRun::post_round() {
  const Round& round = schedule_->rounds[round_];
  for (uint32_t i = round.begin; i < round.comm_begin; ++i) run_local(schedule_->steps[i]);

  outstanding_ = round.end - round.comm_begin;
  round_posted_ = true;
  // Receives first, so that most messages find a posted receive.
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t i = round.comm_begin; i < round.end; ++i) {
      const Step& s = schedule_->steps[i];
      const bool is_send = s.kind == StepKind::Send || s.kind == StepKind::ShmSignal;
      if (is_send != (pass == 1)) continue;
      const uint32_t slot = i - round.comm_begin;
      Completion& c = completions_[slot];
      c.reset();
      handled_[slot] = 0;
      if (s.kind == StepKind::ShmSignal) {
        bufs_.shared->signal(s.peer, s.bytes ? address(s.src) : nullptr, s.bytes);
        c.done = true;
        continue;
      }
      if (s.kind == StepKind::ShmWait) {
        c.bytes = bufs_.shared->next_wait(s.peer);  // the flag value to wait for
        continue;
      }
      const Tag tag = collective_tag(seq_, s.msg_index);
      Status st;
      if (is_send) {
        st = transport_.send(s.peer, tag, address(s.src), s.bytes, memory(s.src), &c);
      } else {
        BufRef landing = s.kind == StepKind::RecvReduce ? s.aux : s.dst;
        st = transport_.recv(s.peer, tag, address(landing), s.bytes, memory(landing), &c);
      }
      if (st != TUTTI_SUCCESS) {
        // Not posted: count it as finished so the round can drain.
        c.done = true;
        c.status = st;
        c.error = str(is_send ? "posting a send to rank " : "posting a receive from rank ",
                      s.peer, " failed: ", last_error());
      }
    }
  }
  return true;
}

bool ScheduleRun::on_complete(const Step& s, Completion& c) {
  if (c.status != TUTTI_SUCCESS) {
    set_error(c.status, c.error.empty() ? str(s.kind == StepKind::Send ? "send to" : "receive from",
                                              " rank ", s.peer, " failed")
                                        : c.error);
    return false;
  }
  if (s.kind == StepKind::Send || s.kind == StepKind::ShmSignal || s.kind == StepKind::ShmWait)
    return true;
  if (c.bytes != s.bytes) {
    set_error(TUTTI_ERR_MISMATCH, str("expected ", s.bytes, " bytes from rank ", s.peer, ", got ",
                                      c.bytes, " (ranks called with different counts?)"));
    return false;
  }
  if (s.kind == StepKind::RecvReduce && !cancelling_ && status_ == TUTTI_SUCCESS) {
    const Schedule& sched = *schedule_;
    local_reduce(address(s.dst), address(s.src), address(s.aux),
                 s.bytes / datatype_size(sched.dtype), sched.dtype, sched.op, memory(s.dst));
  }
  return true;
}

bool ScheduleRun::advance() {
  if (finished_) return true;
  const Schedule& sched = *schedule_;
  for (;;) {
    if (!round_posted_) {
      if (round_ == sched.rounds.size() || status_ != TUTTI_SUCCESS) {
        finished_ = true;
        return true;
      }
      post_round();
    }
    const Round& round = sched.rounds[round_];
    for (uint32_t i = round.comm_begin; i < round.end && outstanding_ > 0; ++i) {
      const uint32_t slot = i - round.comm_begin;
      Completion& c = completions_[slot];
      if (handled_[slot]) continue;
      const Step& step = sched.steps[i];
      if (step.kind == StepKind::ShmWait && !c.done && bufs_.shared->reached(step.peer, c.bytes)) {
        if (step.bytes && !cancelling_)  // data carried in the flag line
          std::memcpy(address(step.dst), bufs_.shared->payload(step.peer, c.bytes), step.bytes);
        c.done = true;
        c.bytes = 0;
      }
      if (!c.done) continue;
      handled_[slot] = 1;
      --outstanding_;
      if (!on_complete(step, c) && !cancelling_) cancel(status_, error_);
    }
    if (outstanding_ > 0) return false;
    ++round_;
    round_posted_ = false;
    if (status_ != TUTTI_SUCCESS) {
      finished_ = true;
      return true;
    }
  }
}

void ScheduleRun::cancel(Status why, std::string message) {
  set_error(why, std::move(message));
  if (finished_ || cancelling_) return;
  cancelling_ = true;
  if (!round_posted_) return;
  const Round& round = schedule_->rounds[round_];
  for (uint32_t i = round.comm_begin; i < round.end; ++i) {
    const uint32_t slot = i - round.comm_begin;
    if (handled_[slot] || completions_[slot].done) continue;
    if (schedule_->steps[i].kind == StepKind::ShmWait) {
      completions_[slot].done = true;  // nothing to release
      completions_[slot].status = TUTTI_ERR_TRANSPORT;
      completions_[slot].error = "cancelled";
    } else {
      transport_.cancel(&completions_[slot]);
    }
  }
}

std::vector<int> ScheduleRun::waiting_for() const {
  std::vector<int> peers;
  if (finished_ || !round_posted_) return peers;
  const Round& round = schedule_->rounds[round_];
  for (uint32_t i = round.comm_begin; i < round.end; ++i) {
    const uint32_t slot = i - round.comm_begin;
    if (!handled_[slot] && !completions_[slot].done) peers.push_back(schedule_->steps[i].peer);
  }
  return peers;
}

}  // namespace tutti
