// The fake CUDA runtime of fake_cuda/cuda/runtime.hpp: one "device", three
// in-order streams per process whose copies run only when an event after
// them is polled (one copy every third poll) or waited for, and IPC handles that carry the
// allocation's address (the tests' ranks share one process).
#include "fake_cuda.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <vector>

#include "cuda/runtime.hpp"

struct FakeStream {
  struct Copy {
    void* dst;
    const void* src;
    size_t bytes;
  };
  std::deque<Copy> pending;
  uint64_t enqueued = 0, done = 0;
  uint64_t polls = 0;  // queries of events not yet reached
  void run_one() {
    const Copy c = pending.front();
    pending.pop_front();
    std::memcpy(c.dst, c.src, c.bytes);
    ++done;
    ++fake_cuda::counters().copies;
  }
  void run_to(uint64_t position) {
    while (done < position) run_one();
  }
};

struct FakeEvent {
  FakeStream* stream = nullptr;
  uint64_t position = 0;
};

namespace fake_cuda {
namespace {
FakeStream streams[kProcesses][3];  // per process: tutti's, copies out, copies in
struct Registered {
  size_t bytes;
  uint64_t id;
};
std::map<uintptr_t, Registered> allocations;  // by start
uint64_t next_id = 1;
struct Mapping {
  uintptr_t start;
  size_t bytes;
  uint64_t id;
};
std::vector<Mapping> mapped[kProcesses];  // per process: the handles it has open
constexpr uint64_t kHandleMagic = 0x4641'4b45'4950'4321ull;
}  // namespace

bool refuse_ipc_open = false;
int process = 0;

Counters& counters() {
  static Counters c;
  return c;
}

void* device_alloc(size_t bytes) {
  void* p = std::calloc(1, bytes);
  allocations[reinterpret_cast<uintptr_t>(p)] = {bytes, next_id++};
  return p;
}

void device_free(void* p) {
  allocations.erase(reinterpret_cast<uintptr_t>(p));
  std::free(p);
}

void device_reallocate_in_place(void* p) {
  Registered& r = allocations.at(reinterpret_cast<uintptr_t>(p));
  std::memset(p, 0, r.bytes);
  r.id = next_id++;
}

void drain() {
  for (auto& per_process : streams)
    for (FakeStream& s : per_process) s.run_to(s.enqueued);
}

size_t pending_copies() {
  size_t n = 0;
  for (const auto& per_process : streams)
    for (const FakeStream& s : per_process) n += s.pending.size();
  return n;
}

}  // namespace fake_cuda

cudaError_t cudaGetLastError() { return cudaSuccess; }

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  s->run_to(s->enqueued);
  return cudaSuccess;
}

// In-order streams here: waiting for an event runs its stream up to it now.
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t e, unsigned) {
  if (e->stream) e->stream->run_to(e->position);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind,
                            cudaStream_t s) {
  s->pending.push_back({dst, src, bytes});
  ++s->enqueued;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  e->stream = s;
  e->position = s->enqueued;
  return cudaSuccess;
}

// Not ready while copies before it are queued: every third query runs one
// of them (a copy takes a while), so that whoever polls sees it pending.
cudaError_t cudaEventQuery(cudaEvent_t e) {
  if (!e->stream || e->stream->done >= e->position) return cudaSuccess;
  if (++e->stream->polls % 3 == 0) e->stream->run_one();
  return cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (e->stream) e->stream->run_to(e->position);
  return cudaSuccess;
}

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* base) {
  if (!fake_cuda::allocations.count(reinterpret_cast<uintptr_t>(base))) return cudaErrorInvalidValue;
  std::memset(handle, 0, sizeof *handle);
  std::memcpy(handle->reserved, &fake_cuda::kHandleMagic, 8);
  std::memcpy(handle->reserved + 8, &base, sizeof base);
  std::memcpy(handle->reserved + 16, &fake_cuda::allocations[reinterpret_cast<uintptr_t>(base)].id,
              sizeof(uint64_t));  // a new allocation at an old address: another handle
  std::memcpy(handle->reserved + 24, &fake_cuda::allocations[reinterpret_cast<uintptr_t>(base)].bytes,
              sizeof(size_t));
  ++fake_cuda::counters().handles_exported;
  return cudaSuccess;
}

cudaError_t cudaIpcOpenMemHandle(void** base, cudaIpcMemHandle_t handle, unsigned) {
  uint64_t magic = 0;
  std::memcpy(&magic, handle.reserved, 8);
  if (fake_cuda::refuse_ipc_open || magic != fake_cuda::kHandleMagic)
    return cudaErrorInvalidResourceHandle;
  fake_cuda::Mapping m;
  std::memcpy(&m.start, handle.reserved + 8, sizeof m.start);
  std::memcpy(&m.id, handle.reserved + 16, sizeof m.id);
  std::memcpy(&m.bytes, handle.reserved + 24, sizeof m.bytes);
  for (const fake_cuda::Mapping& held : fake_cuda::mapped[fake_cuda::process])
    if (held.id != m.id && held.start < m.start + m.bytes && m.start < held.start + held.bytes)
      return cudaErrorAlreadyMapped;
  fake_cuda::mapped[fake_cuda::process].push_back(m);
  *base = reinterpret_cast<void*>(m.start);
  ++fake_cuda::counters().handles_opened;
  return cudaSuccess;
}

cudaError_t cudaIpcCloseMemHandle(void* base) {
  ++fake_cuda::counters().handles_closed;
  const auto start = reinterpret_cast<uintptr_t>(base);
  auto& held = fake_cuda::mapped[fake_cuda::process];  // (a destructor may run as another)
  const auto open = std::find_if(held.begin(), held.end(),
                                 [&](const fake_cuda::Mapping& m) { return m.start == start; });
  if (open != held.end()) {
    held.erase(open);
  } else {
    for (auto& other : fake_cuda::mapped)
      if (const auto it = std::find_if(other.begin(), other.end(),
                                       [&](const fake_cuda::Mapping& m) { return m.start == start; });
          it != other.end()) {
        other.erase(it);
        break;
      }
  }
  const auto it = fake_cuda::allocations.find(start);
  const size_t bytes = it == fake_cuda::allocations.end() ? 1 : it->second.bytes;
  for (const auto& per_process : fake_cuda::streams)
    for (const FakeStream& s : per_process)
      for (const FakeStream::Copy& c : s.pending) {
        const auto src = reinterpret_cast<uintptr_t>(c.src);
        if (src >= start && src < start + bytes) ++fake_cuda::counters().closed_while_copying;
      }
  return cudaSuccess;
}

namespace tutti::cuda {

bool available() { return true; }
Status status_of(cudaError_t e) {
  return e == cudaErrorMemoryAllocation ? TUTTI_ERR_OUT_OF_MEMORY : TUTTI_ERR_INTERNAL;
}
std::string describe(cudaError_t e, std::string_view what) {
  return str("CUDA error in ", what, ": fake error ", static_cast<int>(e));
}
int current_device() { return 0; }
cudaStream_t stream() { return &fake_cuda::streams[fake_cuda::process][0]; }
cudaStream_t copy_stream(CopyDirection d) {
  return &fake_cuda::streams[fake_cuda::process][d == CopyDirection::Out ? 1 : 2];
}
bool copy_streams_enabled() { return true; }

Event::Event() : event_(new FakeEvent) {}
Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    delete event_;
    event_ = o.event_;
    o.event_ = nullptr;
  }
  return *this;
}
Event::~Event() { delete event_; }

void* pinned_alloc(size_t bytes) {
  ++fake_cuda::counters().pinned_allocs;
  return std::malloc(bytes);
}
void pinned_free(void* p) { std::free(p); }

Allocation allocation_of(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  auto it = fake_cuda::allocations.upper_bound(at);
  if (it == fake_cuda::allocations.begin()) return {};
  --it;
  if (at >= it->first + it->second.bytes) return {};
  return {it->first, it->second.id};
}

}  // namespace tutti::cuda
