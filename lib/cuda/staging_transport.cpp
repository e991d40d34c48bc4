#include "cuda/staging_transport.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
  // CUDA IPC (ipc_protocol.hpp). A send: the offer goes instead of the data,
  // `event` marks the data ready on tutti's stream. A receive: it may get an
  // offer (`watch`), and got one (`ipc`); `host_dst` is the user's host
  // buffer of a receive watched without staging.
  bool ipc = false;
  bool watch = false;
  void* host_dst = nullptr;
  Offer offer;
  int64_t ack_status = 0;  // the acknowledgement's payload: a Status
  Completion ack;          // its receive (a send) or send (a receive)
  bool inner_posted = false, ack_posted = false;
  int peer = -1;
  Tag tag = 0;
  const void* host_src = nullptr;  // a host send queued behind a staged one: sent from here
  void* device = nullptr;          // the user's device buffer (receives; an offer's send)
  size_t bytes = 0;
  int device_id = 0;
  cudaStream_t stream = nullptr;
  Completion* user = nullptr;  // null once answered
  Completion inner;            // the inner transport's
  PinnedPool::Lease pinned;
  std::optional<Event> event;  // the copy in flight
  uint64_t event_seq = 0;      // when it was recorded (StagingTransport::events_recorded_)
  bool cancel_requested = false;

  // Whether the inner transport still owns one of this record's buffers.
  bool inner_busy() const { return (inner_posted && !inner.done) || (ack_posted && !ack.done); }
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
                         cudaStream_t& side, Event& done,
                         std::optional<cudaMemcpyKind> kind_given = std::nullopt) {
  const cudaMemcpyKind kind = kind_given ? *kind_given
                              : direction == CopyDirection::Out ? cudaMemcpyDeviceToHost
                                                                : cudaMemcpyHostToDevice;
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

// ---- CUDA IPC (ipc_protocol.hpp) ---------------------------------------------

// Senders' allocations kept open at once (IpcMappings), and this rank's
// exported handles kept (IpcExports).
constexpr size_t kOpenHandles = 64;

IpcMappings::Opened open_ipc_handle(int peer, const IpcMappings::Handle& bytes, std::string& why) {
  cudaIpcMemHandle_t handle;
  static_assert(sizeof handle == sizeof bytes);
  std::memcpy(&handle, bytes.data(), sizeof handle);
  void* base = nullptr;
  const cudaError_t e = cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess);
  if (e == cudaSuccess) return {base, false};
  cudaGetLastError();
  why = describe(e, str("opening rank ", peer, "'s CUDA IPC handle"));
  return {nullptr, e == cudaErrorAlreadyMapped};
}

// Closed only once no copy from it can still run: the copies from offers
// go, in order, to the copy-in stream (tutti's where the copy streams are
// off). Eviction is rare (more than kOpenHandles senders' allocations).
bool export_ipc_handle(uintptr_t start, IpcExports::Handle& out) {
  cudaIpcMemHandle_t handle;
  static_assert(sizeof handle == sizeof out);
  if (cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(start)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  std::memcpy(out.data(), &handle, sizeof handle);
  return true;
}

void close_ipc_handle(void* base) {
  try {
    if (cudaStreamSynchronize(copy_stream(CopyDirection::In)) != cudaSuccess) cudaGetLastError();
    if (cudaStreamSynchronize(stream()) != cudaSuccess) cudaGetLastError();
  } catch (const Error&) {  // no stream to wait for: nothing was copied on it
  }
  if (cudaIpcCloseMemHandle(base) != cudaSuccess) cudaGetLastError();  // nothing left to do
}

}  // namespace

StagingTransport::StagingTransport(std::unique_ptr<Transport> inner, StagingMode mode,
                                   IpcSetup ipc)
    : inner_(std::move(inner)),
      pinned_(PinnedPool::Allocator{pinned_alloc, pinned_free}, PinnedPool::kDefaultFloorBytes,
              pinned_keep_cap_from_env()),
      ipc_(std::move(ipc)) {
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
  // Where UCX moves device memory itself, it uses CUDA IPC inside a node
  // already (cuda_ipc).
  ipc_.enabled = ipc_.enabled && staging_ &&
                 ipc_.same_node.size() == static_cast<size_t>(inner_->nranks());
  if (ipc_.enabled) {
    mappings_ = std::make_unique<IpcMappings>(open_ipc_handle, close_ipc_handle, kOpenHandles);
    exports_ = std::make_unique<IpcExports>(export_ipc_handle, kOpenHandles);
    refused_by_.assign(ipc_.same_node.size(), 0);
  }
}

StagingTransport::~StagingTransport() {
  // Nothing may still write into pinned or user memory once we are gone.
  for (auto& s : staged_) {
    if (s->inner_posted && !s->inner.done) inner_->cancel(&s->inner);
    if (s->ack_posted && !s->ack.done) inner_->cancel(&s->ack);
  }
  for (int spins = 0; spins < 1000000; ++spins) {
    bool busy = false;
    for (auto& s : staged_) busy = busy || s->inner_busy();
    if (!busy) break;
    inner_->progress();
  }
  for (auto& s : staged_)
    if (s->event) (void)s->event->synchronize();
  staged_.clear();
  mappings_.reset();  // no copy reads the senders' buffers any more
}

std::string StagingTransport::describe_mode() const {
  if (!staging_) return "device buffers passed to the transport directly";
  return ipc_.enabled ? "device buffers staged through pinned host memory, and through CUDA IPC "
                        "inside a node from 64 KiB"
                      : "device buffers staged through pinned host memory";
}

bool StagingTransport::ipc_applies(int peer, Tag tag, size_t bytes) const {
  return ipc_.enabled && bytes >= kIpcMinBytes && bytes < kIpcMaxBytes && ipc_tag_allowed(tag) &&
         peer >= 0 && peer < nranks() && peer != rank() &&
         ipc_.same_node[static_cast<size_t>(peer)];
}

std::unique_ptr<StagingTransport::Staged> StagingTransport::offer(int peer, Tag tag,
                                                                  const void* buf, size_t bytes,
                                                                  Status& st) {
  st = TUTTI_SUCCESS;
  const Allocation allocation = allocation_of(buf);
  IpcExports::Handle handle;
  if (allocation.start == 0 || !exports_->handle_of(allocation.start, allocation.id, handle)) {
    ++ipc_counts_.not_exported;  // (a cudaMallocAsync pool, managed memory): staged
    return nullptr;
  }
  const uintptr_t start = allocation.start;
  auto s = std::make_unique<Staged>();
  s->ipc = true;
  s->peer = peer;
  s->tag = tag;
  s->bytes = bytes;
  s->offer.magic = kOfferMagic;
  s->offer.bytes = bytes;
  s->offer.offset = reinterpret_cast<uintptr_t>(buf) - start;
  s->device = const_cast<void*>(buf);  // read again only if the offer is refused
  s->offer.handle = handle;
  cudaError_t e = cudaSuccess;
  try {
    s->device_id = current_device();
    s->offer.device = s->device_id;
    // The data is ready once the work enqueued on tutti's stream so far
    // (the kernels that may write it) has run.
    s->stream = stream();
    s->event.emplace();
    e = s->event->record(s->stream);
  } catch (const Error& err) {
    st = set_last_error(err.status(), err.what());
    return nullptr;
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    st = set_last_error(status_of(e), describe(e, "marking a message's data ready"));
    return nullptr;
  }
  s->event_seq = ++events_recorded_;
  return s;
}

// The acknowledgement's receive first (it may come soon after), then the offer.
int StagingTransport::post_offer(Staged& s) {
  Status st = inner_->recv(s.peer, ipc_ack_tag(s.tag), &s.ack_status, sizeof s.ack_status,
                           MemoryType::Host, &s.ack);
  if (st == TUTTI_SUCCESS) {
    s.ack_posted = true;
    st = inner_->send(s.peer, s.tag, &s.offer, sizeof s.offer, MemoryType::Host, &s.inner);
    if (st == TUTTI_SUCCESS) {
      s.inner_posted = true;
      s.state = Staged::State::Sending;
      return 0;
    }
    inner_->cancel(&s.ack);  // the record stays until the transport lets go
  }
  return finish(s, st, str("posting a CUDA IPC offer to rank ", s.peer, " failed: ", last_error()),
                0);
}

// Done once the offer is sent and the receiver said it has copied.
int StagingTransport::finish_offer(Staged& s) {
  if (s.inner.done && s.inner.status != TUTTI_SUCCESS && !s.ack.done && !s.cancel_requested) {
    inner_->cancel(&s.ack);  // no acknowledgement comes for an offer not sent
    s.cancel_requested = true;
  }
  if (!s.inner.done || !s.ack.done) return 0;
  Status st = s.inner.status;
  std::string error = s.inner.error;
  if (st == TUTTI_SUCCESS && s.ack.status != TUTTI_SUCCESS) {
    st = s.ack.status;
    error = s.ack.error;
  }
  if (st == TUTTI_SUCCESS && s.ack_status == kIpcAckSendData && !s.cancel_requested)
    return stage_refused_offer(s);
  if (st == TUTTI_SUCCESS && s.ack_status != TUTTI_SUCCESS) {
    st = static_cast<Status>(s.ack_status);
    error = str("rank ", s.peer, " could not copy a message through CUDA IPC (",
                status_string(st), "; its own error says why; TUTTI_CUDA_IPC=0 turns IPC off)");
  }
  if (st == TUTTI_SUCCESS) ++ipc_counts_.offered;
  return finish(s, st, std::move(error), 0);
}

// The receiver could not map the buffer: the data goes staged, under
// ipc_data_tag, and later messages to that rank do not offer.
int StagingTransport::stage_refused_offer(Staged& s) {
  refused_by_[static_cast<size_t>(s.peer)] = 1;
  ++ipc_counts_.refused;
  s.ipc = false;
  s.tag = ipc_data_tag(s.tag);
  s.inner.reset();
  s.inner_posted = false;
  s.ack_posted = false;
  s.pinned = pinned_.acquire(s.bytes);
  cudaError_t e = cudaErrorMemoryAllocation;
  if (s.pinned) {
    try {
      DeviceGuard guard(s.device_id);
      e = enqueue_copy(s.pinned.data(), s.device, s.bytes, CopyDirection::Out, s.stream, *s.event);
    } catch (const Error& err) {
      return finish(s, err.status(), err.what(), 0);
    }
    s.event_seq = ++events_recorded_;
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (s.pinned && s.stream) (void)cudaStreamSynchronize(s.stream);
    return finish(s, status_of(e), describe(e, "staging a message CUDA IPC could not carry"), 0);
  }
  s.state = Staged::State::CopyOut;
  return 1;
}

int StagingTransport::copy_offered(Staged& s, const Offer& offer) {
  s.ipc = true;
  s.pinned = PinnedPool::Lease{};  // the data does not come through it
  if (offer.bytes != s.bytes) {
    acknowledge(s, TUTTI_ERR_MISMATCH);
    return finish(s, TUTTI_ERR_MISMATCH,
                  str("CUDA IPC offer of ", offer.bytes, " bytes from rank ", s.peer,
                      " for a receive of ", s.bytes),
                  offer.bytes);
  }
  const int device = s.device ? s.device_id : -1;
  std::string why;
  cudaError_t e = cudaSuccess;
  try {
    std::optional<DeviceGuard> guard;
    if (device >= 0) guard.emplace(device);
    char* base = static_cast<char*>(mappings_->map(s.peer, offer.handle, why));
    if (base) {
      if (!s.event) s.event.emplace();
      void* dst = s.device ? s.device : s.host_dst;
      e = enqueue_copy(dst, base + offer.offset, s.bytes, CopyDirection::In, s.stream, *s.event,
                       cudaMemcpyDefault);
      s.event_seq = ++events_recorded_;
    }
  } catch (const Error& err) {
    why = err.what();
  }
  if (why.empty() && e != cudaSuccess) {
    cudaGetLastError();
    why = describe(e, str("copying rank ", s.peer, "'s message through CUDA IPC"));
  }
  if (!why.empty() && e == cudaSuccess) return receive_refused_offer(s, why);
  if (!why.empty()) {
    const Status st = e != cudaSuccess ? status_of(e) : TUTTI_ERR_UNSUPPORTED;
    if (s.stream && s.event) (void)cudaStreamSynchronize(s.stream);  // nothing reads on
    acknowledge(s, st);
    return finish(s, st,
                  str(why, " (device ", offer.device, " of rank ", s.peer,
                      "; TUTTI_CUDA_IPC=0 turns IPC off)"),
                  0);
  }
  s.state = Staged::State::CopyIn;
  return 0;
}

// The sender's buffer cannot be mapped here: it sends the data instead
// (ipc_data_tag), received as any staged message; `why` goes to the debug
// log once.
int StagingTransport::receive_refused_offer(Staged& s, const std::string& why) {
  if (ipc_counts_.refused++ == 0 && ipc_.log_refusal)
    std::fprintf(stderr, "tutti[%d]: CUDA IPC from rank %d refused, data staged instead: %s\n",
                 rank(), s.peer, why.c_str());
  s.ack_status = kIpcAckSendData;
  if (inner_->send(s.peer, ipc_ack_tag(s.tag), &s.ack_status, sizeof s.ack_status,
                   MemoryType::Host, &s.ack) != TUTTI_SUCCESS) {
    return finish(s, TUTTI_ERR_TRANSPORT,
                  str("cannot ask rank ", s.peer, " for the data CUDA IPC could not carry: ",
                      last_error()),
                  0);
  }
  s.ack_posted = true;
  s.ipc = false;
  s.watch = false;
  s.tag = ipc_data_tag(s.tag);
  s.inner.reset();
  s.inner_posted = false;
  void* into = s.host_dst;
  if (!into) {
    s.pinned = pinned_.acquire(s.bytes);
    into = s.pinned.data();
  }
  if (!into) {
    return finish(s, TUTTI_ERR_OUT_OF_MEMORY,
                  str("cannot allocate ", s.bytes, " bytes of pinned memory to stage a receive"),
                  0);
  }
  const Status st = inner_->recv(s.peer, s.tag, into, s.bytes, MemoryType::Host, &s.inner);
  if (st != TUTTI_SUCCESS)
    return finish(s, st, str("posting a receive from rank ", s.peer, " failed: ", last_error()), 0);
  s.inner_posted = true;
  s.state = Staged::State::Receiving;
  return 0;
}

// Tells the sender its buffer is free again, and how the copy went. A
// failure to post leaves the sender to its timeout.
void StagingTransport::acknowledge(Staged& s, Status status) {
  s.ack_status = status;
  if (inner_->send(s.peer, ipc_ack_tag(s.tag), &s.ack_status, sizeof s.ack_status,
                   MemoryType::Host, &s.ack) == TUTTI_SUCCESS)
    s.ack_posted = true;
}

int StagingTransport::finish(Staged& s, Status status, std::string error, size_t bytes) {
  answer(s, status, std::move(error), bytes);
  s.state = Staged::State::Done;
  return 1;
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
  if (ipc_applies(peer, tag, bytes) && !refused_by_[static_cast<size_t>(peer)]) {
    Status st = TUTTI_SUCCESS;
    if (auto s = offer(peer, tag, buf, bytes, st)) {
      s->user = c;
      c->handle = s.get();
      staged_.push_back(std::move(s));
      return TUTTI_SUCCESS;
    }
    if (st != TUTTI_SUCCESS) return st;
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

// A receive's record, before anything is posted.
std::unique_ptr<StagingTransport::Staged> StagingTransport::receive_record(int peer, Tag tag,
                                                                           size_t bytes,
                                                                           bool watch) {
  auto s = std::make_unique<Staged>();
  s->is_send = false;
  s->state = Staged::State::Receiving;
  s->watch = watch;
  s->peer = peer;
  s->tag = tag;
  s->bytes = bytes;
  return s;
}

// Posts the inner receive of `s` into `into` and keeps the record.
Status StagingTransport::post_receive(std::unique_ptr<Staged> s, void* into, Completion* c) {
  const Status st = inner_->recv(s->peer, s->tag, into, s->bytes, MemoryType::Host, &s->inner);
  if (st != TUTTI_SUCCESS) return st;
  s->inner_posted = true;
  s->user = c;
  c->handle = s.get();
  staged_.push_back(std::move(s));
  return TUTTI_SUCCESS;
}

Status StagingTransport::recv(int peer, Tag tag, void* buf, size_t bytes, MemoryType mem,
                              Completion* c) {
  if (mem == MemoryType::Cuda && bytes == 0) mem = MemoryType::Host;  // nothing to write
  const bool watch = ipc_applies(peer, tag, bytes);
  if (mem == MemoryType::Host && watch) {
    // The data lands in the user's buffer, or an offer does (then copied over).
    auto s = receive_record(peer, tag, bytes, true);
    s->host_dst = buf;
    return post_receive(std::move(s), buf, c);
  }
  if (mem == MemoryType::Host || !staging_) {
    if (mem == MemoryType::Cuda) {
      // Work already enqueued may still read the buffer the transport writes.
      const Status st = drain_stream();
      if (st != TUTTI_SUCCESS) return st;
    }
    return inner_->recv(peer, tag, buf, bytes, mem, c);
  }
  auto s = receive_record(peer, tag, bytes, watch);
  s->device = buf;
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
  char* into = s->pinned.data();
  return post_receive(std::move(s), into, c);
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
          return finish(s, status_of(q), describe(q, "copying a message to pinned memory"), 0);
        }
      }
      if (std::find(blocked.begin(), blocked.end(), key) != blocked.end()) return 0;
      if (s.cancel_requested || !s.user) return finish(s, TUTTI_ERR_TRANSPORT, kCancelled, 0);
      if (s.ipc) return post_offer(s);
      const void* from = s.pinned ? static_cast<const void*>(s.pinned.data()) : s.host_src;
      const Status st = inner_->send(s.peer, s.tag, from, s.bytes, MemoryType::Host, &s.inner);
      if (st != TUTTI_SUCCESS)
        return finish(s, st, str("posting a send to rank ", s.peer, " failed: ", last_error()), 0);
      s.inner_posted = true;
      s.state = State::Sending;
      [[fallthrough]];
    }
    case State::Sending:
      if (s.ipc) return finish_offer(s);
      if (!s.inner.done) return 0;
      return finish(s, s.inner.status, s.inner.error, 0);
    case State::Receiving: {
      if (!s.inner.done) return 0;
      Offer offered;
      const void* landed = s.host_dst ? s.host_dst : s.pinned.data();
      const bool is_offered = s.watch && s.inner.status == TUTTI_SUCCESS &&
                              is_offer(landed, s.inner.bytes, s.bytes, &offered);
      if (s.cancel_requested || !s.user) {
        if (is_offered) acknowledge(s, TUTTI_ERR_TRANSPORT);  // the sender need not wait on
        return finish(s, TUTTI_ERR_TRANSPORT, kCancelled, 0);
      }
      if (s.inner.status != TUTTI_SUCCESS || s.inner.bytes == 0)
        return finish(s, s.inner.status, s.inner.error, s.inner.bytes);
      if (is_offered) return 1 + copy_offered(s, offered);
      if (s.host_dst) {  // the data itself, in place
        return finish(s, TUTTI_SUCCESS, {}, s.inner.bytes);
      }
      const size_t n = std::min(s.inner.bytes, s.bytes);
      cudaError_t e = cudaSuccess;
      {
        try {
          DeviceGuard guard(s.device_id);
          if (!s.event) s.event.emplace();
          e = enqueue_copy(s.device, s.pinned.data(), n, CopyDirection::In, s.stream, *s.event);
        } catch (const Error& err) {
          return finish(s, err.status(), err.what(), 0);
        }
        s.event_seq = ++events_recorded_;
      }
      if (e != cudaSuccess) {
        cudaGetLastError();
        return finish(s, status_of(e), describe(e, "copying a received message to the device"), 0);
      }
      s.state = State::CopyIn;
      [[fallthrough]];
    }
    case State::CopyIn: {
      const cudaError_t q = events.query(s);
      if (q == cudaErrorNotReady) return 0;
      if (s.ipc) acknowledge(s, q == cudaSuccess ? TUTTI_SUCCESS : status_of(q));
      if (q == cudaSuccess && s.ipc) ++ipc_counts_.copied;
      if (q != cudaSuccess) {
        cudaGetLastError();
        answer(s, status_of(q), describe(q, s.ipc ? "copying a message through CUDA IPC"
                                                  : "copying a received message to the device"), 0);
      } else if (s.cancel_requested) {
        answer(s, TUTTI_ERR_TRANSPORT, kCancelled, 0);
      } else {
        answer(s, TUTTI_SUCCESS, {}, s.ipc ? s.bytes : s.inner.bytes);  // (inner: the offer)
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
  // A finished record stays while the inner transport still owns one of its
  // buffers (a cancelled message, an acknowledgement on its way).
  std::erase_if(staged_,
                [](const auto& s) { return s->state == Staged::State::Done && !s->inner_busy(); });
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
      // reads the user's buffer until the inner transport lets go. An offer:
      // given up (a receiver already copying reads on, into a collective
      // that has failed anyway).
      if (s.ipc && s.ack_posted && !s.ack.done) inner_->cancel(&s.ack);
      if (s.pinned || s.ipc) answer(s, TUTTI_ERR_TRANSPORT, kCancelled, 0);
      break;
    case State::Receiving:
      inner_->cancel(&s.inner);
      // Into the user's host buffer (watched for an offer): answered once the
      // inner transport lets go of it.
      if (s.host_dst) {
        s.cancel_requested = true;
        break;
      }
      // The message lands in pinned memory, which this record keeps until
      // the inner transport lets go; the user's buffer is never written.
      answer(s, TUTTI_ERR_TRANSPORT, kCancelled, 0);
      break;
    case State::CopyIn: s.cancel_requested = true; break;  // answered when the copy is done
    case State::Done: break;
  }
}

}  // namespace tutti::cuda
