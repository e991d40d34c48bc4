#include "cuda/staging_transport.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "cuda/runtime.hpp"

namespace tutti::cuda {

namespace {
// Allocated ahead at creation (StagingTransport::StagingTransport).
constexpr size_t kPinnedSmallBytes = 4096;
constexpr int kPinnedSmallAhead = 8;
constexpr size_t kPinnedChunkBytes = 256 * 1024;  // the schedules' default chunk
constexpr int kPinnedChunksAhead = 4;
}  // namespace

StagingMode staging_mode_from_env() {
  const char* env = std::getenv("TUTTI_CUDA_STAGING");
  const std::string_view v = env ? env : "";
  if (v.empty() || v == "auto") return StagingMode::Auto;
  if (v == "1" || v == "on" || v == "yes" || v == "true") return StagingMode::Always;
  if (v == "0" || v == "off" || v == "no" || v == "false") return StagingMode::Never;
  fail(TUTTI_ERR_INVALID_ARGUMENT, "TUTTI_CUDA_STAGING='", v, "': expected auto, 1 or 0");
}

// ---- pinned buffers ---------------------------------------------------------

namespace {

// TUTTI_CUDA_PINNED_KEEP_MB: the most idle pinned memory a communicator
// keeps for reuse, in MiB (pinned_pool.hpp says what it keeps below that).
size_t pinned_keep_cap_from_env() {
  const char* env = std::getenv("TUTTI_CUDA_PINNED_KEEP_MB");
  const std::optional<size_t> cap = PinnedPool::cap_bytes_from_text(env);
  if (!cap)
    fail(TUTTI_ERR_INVALID_ARGUMENT, "TUTTI_CUDA_PINNED_KEEP_MB='", env,
         "': expected a number of MiB from 0 to ", PinnedPool::kMaxCapMiB);
  return *cap;
}

}  // namespace

// ---- staged messages --------------------------------------------------------

struct StagingTransport::Staged {
  enum class State { CopyOut, Sending, Receiving, CopyIn, Done };
  State state = State::CopyOut;
  bool is_send = true;
  int peer = -1;
  Tag tag = 0;
  const void* host_src = nullptr;  // a host send queued behind a staged one: sent from here
  void* device = nullptr;          // the user's device buffer (receives)
  size_t bytes = 0;
  int device_id = 0;
  cudaStream_t stream = nullptr;
  Completion* user = nullptr;  // null once answered
  Completion inner;            // the inner transport's
  PinnedPool::Lease pinned;
  std::optional<Event> event;  // the copy in flight
  uint64_t event_seq = 0;      // when it was recorded (StagingTransport::events_recorded_)
  bool cancel_requested = false;
};

// Events on one stream complete in the order they were recorded: once one
// is found not ready, those recorded after it on its stream are not either,
// and one progress pass does not query them (a query costs a driver call;
// a large staged message has one event per chunk in flight).
struct StagingTransport::EventScan {
  std::vector<std::pair<cudaStream_t, uint64_t>> first_not_ready;  // per stream
  bool known_not_ready(const Staged& s) const {
    for (const auto& [stream, seq] : first_not_ready)
      if (stream == s.stream && seq < s.event_seq) return true;
    return false;
  }
  // Queries s's event, unless an earlier one on its stream is not ready.
  cudaError_t query(const Staged& s) {
    if (known_not_ready(s)) return cudaErrorNotReady;
    const cudaError_t q = s.event->query();
    if (q != cudaErrorNotReady) return q;
    for (auto& [stream, seq] : first_not_ready)
      if (stream == s.stream) {
        seq = std::min(seq, s.event_seq);
        return q;
      }
    first_not_ready.emplace_back(s.stream, s.event_seq);
    return q;
  }
};

namespace {

constexpr const char* kCancelled = "cancelled";

// Waits for the work on tutti's stream: a transport that reads or writes
// device memory itself does so outside that stream.
Status drain_stream() {
  try {
    const cudaError_t e = cudaStreamSynchronize(stream());
    if (e != cudaSuccess) return set_last_error(status_of(e), describe(e, "draining tutti's stream"));
    return TUTTI_SUCCESS;
  } catch (const Error& e) {
    return set_last_error(e.status(), e.what());
  }
}

// Enqueues a staging copy of `bytes` in `direction` and records `done`
// after it, on `side` (the direction's stream, or tutti's where the copy
// streams are off); the copy starts after the work enqueued on tutti's
// stream so far (cuda/runtime.hpp, copy_stream). The caller records `side`
// for the event scan. Throws Error where a stream or event cannot be had.
cudaError_t enqueue_copy(void* dst, const void* src, size_t bytes, CopyDirection direction,
                         cudaStream_t& side, Event& done) {
  const cudaMemcpyKind kind =
      direction == CopyDirection::Out ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
  const cudaStream_t tutti = stream();
  side = copy_streams_enabled() ? copy_stream(direction) : tutti;
  if (side != tutti) {
    Event before;  // back to the pool at once: the wait has taken its state
    cudaError_t e = before.record(tutti);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(side, before.get(), 0);
    if (e != cudaSuccess) return e;  // nothing enqueued on `side` yet
  }
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, kind, side);
  if (e == cudaSuccess) e = done.record(side);
  return e;
}

}  // namespace

StagingTransport::StagingTransport(std::unique_ptr<Transport> inner, StagingMode mode)
    : inner_(std::move(inner)),
      pinned_(PinnedPool::Allocator{pinned_alloc, pinned_free}, PinnedPool::kDefaultFloorBytes,
              pinned_keep_cap_from_env()) {
  const bool direct_possible = inner_->supports(MemoryType::Cuda);
  if (mode == StagingMode::Never && !direct_possible)
    fail(TUTTI_ERR_UNSUPPORTED, "TUTTI_CUDA_STAGING=0, but the ", inner_->name(),
         " transport cannot move CUDA memory itself (UCX without CUDA support?)");
  staging_ = mode == StagingMode::Always || !direct_possible;
  // The first calls' buffers, allocated now rather than on their critical
  // path: small messages and a few pipeline chunks in flight (a failure
  // here only means those calls allocate for themselves).
  if (staging_ && available()) {
    (void)pinned_.reserve(kPinnedSmallBytes, kPinnedSmallAhead);
    (void)pinned_.reserve(kPinnedChunkBytes, kPinnedChunksAhead);
  }
}

StagingTransport::~StagingTransport() {
  // Nothing may still write into pinned or user memory once we are gone.
  for (auto& s : staged_) {
    if (s->state == Staged::State::Sending || s->state == Staged::State::Receiving)
      if (!s->inner.done) inner_->cancel(&s->inner);
  }
  for (int spins = 0; spins < 1000000; ++spins) {
    bool busy = false;
    for (auto& s : staged_)
      busy = busy || ((s->state == Staged::State::Sending || s->state == Staged::State::Receiving) &&
                      !s->inner.done);
    if (!busy) break;
    inner_->progress();
  }
  for (auto& s : staged_)
    if (s->event) (void)s->event->synchronize();
  staged_.clear();
}

std::string StagingTransport::describe_mode() const {
  return staging_ ? "device buffers staged through pinned host memory"
                  : "device buffers passed to the transport directly";
}

void StagingTransport::answer(Staged& s, Status status, std::string error, size_t bytes) {
  if (!s.user) return;
  Completion* c = s.user;
  s.user = nullptr;
  c->status = status;
  c->error = std::move(error);
  c->bytes = bytes;
  c->source = s.is_send ? -1 : s.inner.source;
  c->handle = nullptr;
  c->done = true;
}

Status StagingTransport::send(int peer, Tag tag, const void* buf, size_t bytes, MemoryType mem,
                              Completion* c) {
  if (mem == MemoryType::Cuda && bytes == 0) mem = MemoryType::Host;  // nothing to read
  if (mem == MemoryType::Host || !staging_) {
    if (mem == MemoryType::Cuda) {
      const Status st = drain_stream();
      return st != TUTTI_SUCCESS ? st : inner_->send(peer, tag, buf, bytes, mem, c);
    }
    const bool queued_behind = std::any_of(staged_.begin(), staged_.end(), [&](const auto& s) {
      return s->is_send && s->state == Staged::State::CopyOut && s->peer == peer && s->tag == tag;
    });
    if (!queued_behind) return inner_->send(peer, tag, buf, bytes, mem, c);
    auto s = std::make_unique<Staged>();
    s->peer = peer;
    s->tag = tag;
    s->host_src = buf;
    s->bytes = bytes;
    s->user = c;
    c->handle = s.get();
    staged_.push_back(std::move(s));
    return TUTTI_SUCCESS;
  }
  auto s = std::make_unique<Staged>();
  s->peer = peer;
  s->tag = tag;
  s->bytes = bytes;
  s->pinned = pinned_.acquire(bytes);
  if (!s->pinned)
    return set_last_error(TUTTI_ERR_OUT_OF_MEMORY,
                          str("cannot allocate ", bytes, " bytes of pinned memory to stage a send"));
  cudaError_t e = cudaSuccess;
  try {
    s->device_id = current_device();
    s->event.emplace();
    e = enqueue_copy(s->pinned.data(), buf, bytes, CopyDirection::Out, s->stream, *s->event);
  } catch (const Error& err) {
    return set_last_error(err.status(), err.what());
  }
  s->event_seq = ++events_recorded_;
  // The copy may be running: the pinned buffer is not ours to give back yet.
  if (e != cudaSuccess && s->stream) (void)cudaStreamSynchronize(s->stream);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return set_last_error(status_of(e), describe(e, "copying a message to pinned memory"));
  }
  s->user = c;
  c->handle = s.get();
  staged_.push_back(std::move(s));
  return TUTTI_SUCCESS;
}

Status StagingTransport::recv(int peer, Tag tag, void* buf, size_t bytes, MemoryType mem,
                              Completion* c) {
  if (mem == MemoryType::Cuda && bytes == 0) mem = MemoryType::Host;  // nothing to write
  if (mem == MemoryType::Host || !staging_) {
    if (mem == MemoryType::Cuda) {
      // Work already enqueued may still read the buffer the transport writes.
      const Status st = drain_stream();
      if (st != TUTTI_SUCCESS) return st;
    }
    return inner_->recv(peer, tag, buf, bytes, mem, c);
  }
  auto s = std::make_unique<Staged>();
  s->is_send = false;
  s->state = Staged::State::Receiving;
  s->peer = peer;
  s->tag = tag;
  s->device = buf;
  s->bytes = bytes;
  try {
    s->device_id = current_device();
    (void)copy_streams_enabled();  // a bad TUTTI_CUDA_COPY_STREAMS fails the receive, not progress
  } catch (const Error& e) {
    return set_last_error(e.status(), e.what());
  }
  s->pinned = pinned_.acquire(bytes);
  if (!s->pinned)
    return set_last_error(TUTTI_ERR_OUT_OF_MEMORY,
                          str("cannot allocate ", bytes, " bytes of pinned memory to stage a receive"));
  const Status st = inner_->recv(peer, tag, s->pinned.data(), bytes, MemoryType::Host, &s->inner);
  if (st != TUTTI_SUCCESS) return st;
  s->user = c;
  c->handle = s.get();
  staged_.push_back(std::move(s));
  return TUTTI_SUCCESS;
}

int StagingTransport::advance(Staged& s, std::vector<std::pair<int, Tag>>& blocked,
                              EventScan& events) {
  using State = Staged::State;
  const std::pair<int, Tag> key{s.peer, s.tag};
  switch (s.state) {
    case State::CopyOut: {
      if (s.event) {
        const cudaError_t q = events.query(s);
        if (q == cudaErrorNotReady) {
          blocked.push_back(key);
          return 0;
        }
        if (q != cudaSuccess) {
          cudaGetLastError();
          answer(s, status_of(q), describe(q, "copying a message to pinned memory"), 0);
          s.state = State::Done;
          return 1;
        }
      }
      if (std::find(blocked.begin(), blocked.end(), key) != blocked.end()) return 0;
      if (s.cancel_requested || !s.user) {
        answer(s, TUTTI_ERR_TRANSPORT, kCancelled, 0);
        s.state = State::Done;
        return 1;
      }
      const void* from = s.pinned ? static_cast<const void*>(s.pinned.data()) : s.host_src;
      const Status st = inner_->send(s.peer, s.tag, from, s.bytes, MemoryType::Host, &s.inner);
      if (st != TUTTI_SUCCESS) {
        answer(s, st, str("posting a send to rank ", s.peer, " failed: ", last_error()), 0);
        s.state = State::Done;
        return 1;
      }
      s.state = State::Sending;
      [[fallthrough]];
    }
    case State::Sending:
      if (!s.inner.done) return 0;
      answer(s, s.inner.status, s.inner.error, 0);
      s.state = State::Done;
      return 1;
    case State::Receiving: {
      if (!s.inner.done) return 0;
      if (!s.user || s.inner.status != TUTTI_SUCCESS || s.inner.bytes == 0) {
        answer(s, s.inner.status, s.inner.error, s.inner.bytes);
        s.state = State::Done;
        return 1;
      }
      const size_t n = std::min(s.inner.bytes, s.bytes);
      cudaError_t e = cudaSuccess;
      {
        DeviceGuard guard(s.device_id);
        try {
          if (!s.event) s.event.emplace();
          e = enqueue_copy(s.device, s.pinned.data(), n, CopyDirection::In, s.stream, *s.event);
        } catch (const Error& err) {
          answer(s, err.status(), err.what(), 0);
          s.state = State::Done;
          return 1;
        }
        s.event_seq = ++events_recorded_;
      }
      if (e != cudaSuccess) {
        cudaGetLastError();
        answer(s, status_of(e), describe(e, "copying a received message to the device"), 0);
        s.state = State::Done;
        return 1;
      }
      s.state = State::CopyIn;
      [[fallthrough]];
    }
    case State::CopyIn: {
      const cudaError_t q = events.query(s);
      if (q == cudaErrorNotReady) return 0;
      if (q != cudaSuccess) {
        cudaGetLastError();
        answer(s, status_of(q), describe(q, "copying a received message to the device"), 0);
      } else if (s.cancel_requested) {
        answer(s, TUTTI_ERR_TRANSPORT, kCancelled, 0);
      } else {
        answer(s, TUTTI_SUCCESS, {}, s.inner.bytes);
      }
      s.state = State::Done;
      return 1;
    }
    case State::Done: return 0;
  }
  return 0;
}

int StagingTransport::progress() {
  int events = inner_->progress();
  if (staged_.empty()) return events;
  std::vector<std::pair<int, Tag>> blocked;  // (peer, tag) of sends still waiting, in order
  EventScan scan;
  for (auto& s : staged_) events += advance(*s, blocked, scan);
  std::erase_if(staged_, [](const auto& s) { return s->state == Staged::State::Done; });
  return events;
}

void StagingTransport::cancel(Completion* c) {
  auto it = std::find_if(staged_.begin(), staged_.end(),
                         [c](const auto& s) { return s->user == c; });
  if (it == staged_.end()) {
    inner_->cancel(c);  // not staged: the inner transport owns it
    return;
  }
  Staged& s = **it;
  using State = Staged::State;
  switch (s.state) {
    case State::CopyOut:
      // A running copy still reads the user's buffer: answered once it is
      // done (progress); a queued host send has touched nothing yet.
      s.cancel_requested = true;
      if (!s.event) {
        answer(s, TUTTI_ERR_TRANSPORT, kCancelled, 0);
        s.state = State::Done;
      }
      break;
    case State::Sending:
      inner_->cancel(&s.inner);
      // From pinned memory: the user's buffer is free now. A queued host send
      // reads the user's buffer until the inner transport lets go.
      if (s.pinned) answer(s, TUTTI_ERR_TRANSPORT, kCancelled, 0);
      break;
    case State::Receiving:
      // The message lands in pinned memory, which this record keeps until
      // the inner transport lets go; the user's buffer is never written.
      inner_->cancel(&s.inner);
      answer(s, TUTTI_ERR_TRANSPORT, kCancelled, 0);
      break;
    case State::CopyIn: s.cancel_requested = true; break;  // answered when the copy is done
    case State::Done: break;
  }
}

}  // namespace tutti::cuda
