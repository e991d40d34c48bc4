#include "engine/engine.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "host/copy.hpp"
#include "host/memory.hpp"

namespace tutti {
namespace {
uint64_t address_of(const void* p) { return reinterpret_cast<uintptr_t>(p); }
}  // namespace

ScheduleRun::ScheduleRun(Transport& transport, std::shared_ptr<const Schedule> schedule,
                         const Buffers& bufs, uint32_t seq)
    : transport_(transport),
      schedule_(std::move(schedule)),
      bufs_(bufs),
      seq_(seq) {
  if (schedule_->uses_transport) {
    completions_.resize(schedule_->max_comm_per_round);
    handled_.resize(schedule_->max_comm_per_round);
  }
  if (schedule_->uses_shared && !bufs_.shared) {
    set_error(TUTTI_ERR_INTERNAL, "a shared-memory schedule ran without a shared segment");
    finished_ = true;
  } else if (schedule_->shm_chunks > 0) {
    half_bytes_ = bufs_.shared->half_bytes();
    const SharedPort::SlotCall call =
        bufs_.shared->begin_slot_call(schedule_->slot_area_bytes, schedule_->shm_chunks);
    swap_halves_ = call.swap_halves;
    slot_mode_ = call.mode;
    if (slot_mode_.timed) probe_start_ = std::chrono::steady_clock::now();
    slide_ = call.slide;
  }
  if (schedule_->uses_peer_reads) {
    peers_.resize(schedule_->peer_table_bytes / sizeof(PeerAddresses));
    // Entries: the peers', this rank's own, then its published blocks.
    const std::vector<BufRef>& blocks = schedule_->published_blocks;
    if (peers_.size() > blocks.size()) {
      const size_t own = peers_.size() - 1 - blocks.size();
      peers_[own] = {static_cast<uint64_t>(getpid()), address_of(address(schedule_->published_input)),
                     address_of(bufs_.output), address_of(bufs_.scratch)};
      for (size_t i = 0; i < blocks.size(); ++i) {
        peers_[own + 1 + i] = peers_[own];
        peers_[own + 1 + i].input = address_of(address(blocks[i]));
      }
    }
  }
}

ScheduleRun::~ScheduleRun() { let_go(); }

void ScheduleRun::let_go() {
  // Never leave the transport writing into memory we are about to free.
  if (!abandoned_ && round_posted_ && outstanding_ > 0 && !finished_) {
    cancel(TUTTI_ERR_INTERNAL, "collective destroyed while in flight");
    const auto give_up = std::chrono::steady_clock::now() +
                         std::chrono::duration<double>(kCancelGraceSeconds);
    while (!advance()) {
      transport_.progress();
      if (std::chrono::steady_clock::now() > give_up) {
        // The transport still holds pointers to the completions: they stay
        // allocated (a moved vector keeps its storage) for as long as the
        // process lives. The owner keeps its scratch memory too.
        abandoned_ = true;
        (void)new std::vector<Completion>(std::move(completions_));
        break;
      }
    }
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
      return bufs_.shared->segment().data() + offset + slide_;
    }
    case BufKind::Peers:
      // The table is this run's own memory: signals read it, waits fill it.
      return reinterpret_cast<char*>(const_cast<PeerAddresses*>(peers_.data())) + ref.offset;
  }
  return base ? base + ref.offset : nullptr;
}

MemoryType ScheduleRun::memory(BufRef ref) const {
  switch (ref.kind) {
    case BufKind::Input: return bufs_.input_mem;
    case BufKind::Output: return bufs_.output_mem;
    case BufKind::Scratch: return bufs_.scratch_mem;
    case BufKind::Shared: return MemoryType::Host;
    case BufKind::Peers: return MemoryType::Host;
  }
  return MemoryType::Host;
}

void ScheduleRun::set_error(Status status, std::string message) {
  if (status_ != TUTTI_SUCCESS) return;  // keep the first (root) cause
  status_ = status;
  error_ = std::move(message);
}

bool ScheduleRun::streamable_slot_write(const Step& s) const {
  return s.kind == StepKind::Copy && s.dst.kind == BufKind::Shared &&
         s.bytes >= SlotWrites::kMinStreamingBytes && memory(s.src) == MemoryType::Host;
}

void ScheduleRun::run_local(const Step& s) {
  const Schedule& sched = *schedule_;
  switch (s.kind) {
    case StepKind::Copy:
      if (slot_mode_.streaming && streamable_slot_write(s))
        host_copy_streaming(address(s.dst), address(s.src), s.bytes);
      else
        local_copy(address(s.dst), memory(s.dst), address(s.src), memory(s.src), s.bytes);
      break;
    case StepKind::Reduce:
      local_reduce(address(s.dst), address(s.src), address(s.aux),
                   s.bytes / datatype_size(sched.dtype), sched.dtype, sched.op, memory(s.dst));
      break;
    case StepKind::Divide:
      local_divide(address(s.dst), s.bytes / datatype_size(sched.dtype), sched.dtype, sched.nranks,
                   memory(s.dst));
      break;
    case StepKind::PeerRead: read_from_peer(s); break;
    default: break;
  }
}

void ScheduleRun::read_from_peer(const Step& s) {
  const PeerAddresses& at = peers_[static_cast<size_t>(s.peer)];
  const uint64_t base = s.src.kind == BufKind::Input    ? at.input
                        : s.src.kind == BufKind::Output ? at.output
                                                        : at.scratch;
  std::string why;
  if (at.pid == 0 || base == 0) {
    why = str("rank ", s.peer, " published no address for its buffer");
  } else if (read_peer_memory(at.pid, address(s.dst), base + s.src.offset, s.bytes, why)) {
    return;
  }
  if (read_status_ == TUTTI_SUCCESS) {
    read_status_ = TUTTI_ERR_INTERNAL;
    read_error_ = str("rank ", s.peer, ": ", why);
  }
}

void ScheduleRun::run_locals(const Round& round) {
  for (uint32_t i = round.begin; i < round.comm_begin; ++i) {
    const Step& s = schedule_->steps[i];
    run_local(s);
    // A probe call counts the slot writes it could stream: too few, and
    // its time says nothing about them (SlotWrites::note_probe_call).
    if (slot_mode_.timed && streamable_slot_write(s)) probe_written_ += s.bytes;
  }
}

void ScheduleRun::post_round() {
  const Round& round = schedule_->rounds[round_];
  // A mixed round posts its messages first, so that they travel while its
  // local steps run (no step of a round touches what another one writes);
  // its flags, which say the local steps are done, come after them.
  if (!round.flags) run_locals(round);
  outstanding_ = 0;
  for (uint32_t i = round.comm_begin; i < round.end; ++i)
    if (!schedule_->steps[i].is_flag()) ++outstanding_;
  round_posted_ = true;
  // Receives first, so that most messages find a posted receive.
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t i = round.comm_begin; i < round.end; ++i) {
      const Step& s = schedule_->steps[i];
      if (s.is_flag()) continue;  // a mixed round's flags: polled by round_flags_done
      const bool is_send = s.kind == StepKind::Send;
      if (is_send != (pass == 1)) continue;
      const uint32_t slot = i - round.comm_begin;
      Completion& c = completions_[slot];
      c.reset();
      handled_[slot] = 0;
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
  if (round.flags) run_locals(round);
}

bool ScheduleRun::on_complete(const Step& s, Completion& c) {
  if (c.status != TUTTI_SUCCESS) {
    set_error(c.status, c.error.empty() ? str(s.kind == StepKind::Send ? "send to" : "receive from",
                                              " rank ", s.peer, " failed")
                                        : c.error);
    return false;
  }
  if (s.kind == StepKind::Send) return true;
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
        if (read_status_ != TUTTI_SUCCESS) set_error(read_status_, read_error_);
        if (slot_mode_.timed && status_ == TUTTI_SUCCESS) {
          // The whole call, this rank's writes, waits and reads alike: how
          // the slots were written decides what reading them costs. (A
          // failed call's time says nothing.)
          const std::chrono::duration<double> took = std::chrono::steady_clock::now() - probe_start_;
          bufs_.shared->slot_writes().note_probe_call(slot_mode_, took.count(), probe_written_);
        }
        finished_ = true;
        return true;
      }
      start_round(sched.rounds[round_]);
    }
    const Round& round = sched.rounds[round_];
    // Both polled every time: in a mixed round the flags go on while the
    // messages travel. Flags hold nothing to let go of once cancelled.
    const bool messages_done = !round.messages || round_messages_done(round);
    const bool flags_done = !round.flags || cancelling_ || round_flags_done(round);
    if (!messages_done || !flags_done) return false;
    ++round_;
    round_posted_ = false;
  }
}

void ScheduleRun::start_round(const Round& round) {
  next_flag_ = round.comm_begin;
  if (round.messages) {
    post_round();
  } else {
    run_locals(round);
    outstanding_ = 0;
    round_posted_ = true;
  }
}

bool ScheduleRun::round_messages_done(const Round& round) {
  for (uint32_t i = round.comm_begin; i < round.end && outstanding_ > 0; ++i) {
    const uint32_t slot = i - round.comm_begin;
    Completion& c = completions_[slot];
    if (schedule_->steps[i].is_flag() || handled_[slot] || !c.done) continue;
    handled_[slot] = 1;
    --outstanding_;
    if (!on_complete(schedule_->steps[i], c) && !cancelling_) cancel(status_, error_);
  }
  return outstanding_ == 0;
}

// The round's signals, then its waits, in step order: a signal waits for
// its line to be free, a wait for the peer's signal. In order costs nothing
// in latency (all must complete) and needs no per-step state. Steps name
// communicator ranks; the segment knows the ranks of this node by their
// index among them.
bool ScheduleRun::round_flags_done(const Round& round) {
  SharedPort* port = bufs_.shared;
  for (; next_flag_ < round.end; ++next_flag_) {
    const Step& s = schedule_->steps[next_flag_];
    if (!s.is_flag()) continue;  // a mixed round's message
    const int peer = port->index_of(s.peer);
    if (s.kind == StepKind::ShmSignal) {
      if (!port->can_signal(peer)) return false;
      port->signal(peer, s.bytes ? address(s.src) : nullptr, s.bytes);
    } else {
      if (!port->arrived(peer, s.bytes)) return false;
      port->take(peer, s.bytes ? address(s.dst) : nullptr, s.bytes);  // data in the flag lines
    }
  }
  return true;
}

void ScheduleRun::cancel(Status why, std::string message) {
  set_error(why, std::move(message));
  if (finished_ || cancelling_) return;
  cancelling_ = true;
  const bool in_flags = round_posted_ && !schedule_->rounds[round_].messages;
  if (!schedule_->uses_transport || in_flags) {
    finished_ = true;  // flags hold nothing to release
    return;
  }
  if (!round_posted_) return;  // advance() finishes on the error
  const Round& round = schedule_->rounds[round_];
  for (uint32_t i = round.comm_begin; i < round.end; ++i) {
    const uint32_t slot = i - round.comm_begin;
    if (!schedule_->steps[i].is_flag() && !handled_[slot] && !completions_[slot].done)
      transport_.cancel(&completions_[slot]);
  }
}

std::vector<int> ScheduleRun::waiting_for() const {
  std::vector<int> peers;
  if (finished_ || !round_posted_) return peers;
  const Round& round = schedule_->rounds[round_];
  // A signal waits for the peer to free its line, a wait for its signal.
  for (uint32_t i = next_flag_; i < round.end; ++i)
    if (schedule_->steps[i].is_flag()) peers.push_back(schedule_->steps[i].peer);
  if (!round.messages) return peers;
  for (uint32_t i = round.comm_begin; i < round.end; ++i) {
    const uint32_t slot = i - round.comm_begin;
    if (!schedule_->steps[i].is_flag() && !handled_[slot] && !completions_[slot].done &&
        std::find(peers.begin(), peers.end(), schedule_->steps[i].peer) == peers.end())
      peers.push_back(schedule_->steps[i].peer);
  }
  return peers;
}

}  // namespace tutti
