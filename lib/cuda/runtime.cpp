#include "cuda/runtime.hpp"

#include <atomic>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>


namespace tutti::cuda {
namespace {

// Per-device state, created lazily under one mutex (rarely taken: once per
// device for the stream and properties, and for the event pool).
struct DeviceState {
  bool props_ready = false;
  DeviceProps props;
  cudaStream_t stream = nullptr;
  cudaStream_t copy_streams[2] = {nullptr, nullptr};  // CopyDirection
  std::vector<cudaEvent_t> free_events;
};

struct Registry {
  std::mutex mutex;
  std::deque<DeviceState> devices;  // deque: references stay valid as it grows
};

Registry& registry() {
  // Never destroyed: streams and events may be used from static
  // destructors of the application, after this would have gone.
  static Registry* r = new Registry;
  return *r;
}

DeviceState& state_locked(Registry& r, int device) {
  while (r.devices.size() <= static_cast<size_t>(device)) r.devices.emplace_back();
  return r.devices[static_cast<size_t>(device)];
}

std::atomic<uint64_t> g_noted_errors{0};  // noted outside any ErrorScope
thread_local NotedErrors* t_error_sink = nullptr;

}  // namespace

bool available() {
  static const bool yes = [] {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      cudaGetLastError();  // no driver, no device: not an error for tutti
      return false;
    }
    return n > 0;
  }();
  return yes;
}

Status status_of(cudaError_t e) {
  return e == cudaErrorMemoryAllocation ? TUTTI_ERR_OUT_OF_MEMORY : TUTTI_ERR_INTERNAL;
}

std::string describe(cudaError_t e, std::string_view what) {
  return str("CUDA error in ", what, ": ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
}

void fail_cuda(cudaError_t e, std::string_view what) {
  cudaGetLastError();  // clear a non-sticky error so later calls can work
  throw Error(status_of(e), describe(e, what));
}

int current_device() {
  int d = 0;
  check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}

const DeviceProps& device_props(int device) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  DeviceState& s = state_locked(r, device);
  if (!s.props_ready) {
    cudaDeviceProp p{};
    check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
    s.props.id = device;
    s.props.name = p.name;
    s.props.sm_count = p.multiProcessorCount > 0 ? p.multiProcessorCount : 1;
    s.props.max_threads_per_sm = p.maxThreadsPerMultiProcessor > 0 ? p.maxThreadsPerMultiProcessor : 1024;
    s.props.cc_major = p.major;
    s.props.cc_minor = p.minor;
    s.props.memory_bytes = p.totalGlobalMem;
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) == cudaSuccess) s.props.pci_bus_id = bus;
    else cudaGetLastError();
    s.props_ready = true;
  }
  return s.props;
}

cudaStream_t stream() {
  const int device = current_device();
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  DeviceState& s = state_locked(r, device);
  if (!s.stream) check(cudaStreamCreateWithFlags(&s.stream, cudaStreamDefault), "cudaStreamCreate");
  return s.stream;
}

cudaStream_t copy_stream(CopyDirection direction) {
  const int device = current_device();
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  cudaStream_t& s = state_locked(r, device).copy_streams[static_cast<int>(direction)];
  // Blocking, like tutti's stream: it also waits for the legacy default stream.
  if (!s) check(cudaStreamCreateWithFlags(&s, cudaStreamDefault), "cudaStreamCreate (copies)");
  return s;
}

bool copy_streams_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("TUTTI_CUDA_COPY_STREAMS");
    const std::string_view s = v ? v : "";
    if (s.empty() || s == "1" || s == "on" || s == "yes" || s == "true") return true;
    if (s == "0" || s == "off" || s == "no" || s == "false") return false;
    fail(TUTTI_ERR_INVALID_ARGUMENT, "TUTTI_CUDA_COPY_STREAMS='", s, "': expected 1 or 0");
  }();
  return enabled;
}

DeviceGuard::DeviceGuard(int device) {
  int now = -1;
  if (cudaGetDevice(&now) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  if (now == device) return;
  // Failing here, the work of the scope would run on another device's
  // stream: an error now, rather than a misleading one later.
  check(cudaSetDevice(device), "cudaSetDevice (tutti's device for a copy)");
  previous_ = now;
}

DeviceGuard::~DeviceGuard() {
  if (previous_ < 0) return;
  // A destructor cannot throw: the failure is noted (the call in flight
  // reports noted errors) and cleared, so the application's next
  // cudaGetLastError does not see tutti's.
  if (const cudaError_t e = cudaSetDevice(previous_); e != cudaSuccess) {
    cudaGetLastError();
    note_error(e, "cudaSetDevice (restoring the caller's device)");
  }
}

Event::Event() : device_(current_device()) {
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    DeviceState& s = state_locked(r, device_);
    if (!s.free_events.empty()) {
      event_ = s.free_events.back();
      s.free_events.pop_back();
      return;
    }
  }
  check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate");
}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    release();
    event_ = o.event_;
    device_ = o.device_;
    o.event_ = nullptr;
  }
  return *this;
}

Event::~Event() { release(); }

void Event::release() {
  if (!event_) return;
  // Reuse is safe even if a stream still waits on this event: a wait binds
  // to the record that preceded it, not to later ones.
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  state_locked(r, device_).free_events.push_back(event_);
  event_ = nullptr;
}

void* device_alloc(size_t bytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return p;
}

void device_free(void* p) {
  if (p && cudaFree(p) != cudaSuccess) cudaGetLastError();  // at exit the runtime may be gone
}

void* pinned_alloc(size_t bytes) {
  void* p = nullptr;
  if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return p;
}

void pinned_free(void* p) {
  if (p && cudaFreeHost(p) != cudaSuccess) cudaGetLastError();
}

cudaError_t copy(void* dst, const void* src, size_t bytes, bool wait) {
  if (bytes == 0 || dst == src) return cudaSuccess;
  cudaStream_t s = nullptr;
  try {
    s = stream();
  } catch (const Error&) {
    return cudaErrorInvalidDevice;
  }
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s);
  if (e == cudaSuccess && wait) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) cudaGetLastError();
  return e;
}

ErrorScope::ErrorScope(NotedErrors& sink) : previous_(t_error_sink) { t_error_sink = &sink; }
ErrorScope::~ErrorScope() { t_error_sink = previous_; }

void note_error(cudaError_t e, std::string_view what) {
  cudaGetLastError();  // the failed call's own error: clear it
  if (NotedErrors* sink = t_error_sink) {
    ++sink->count;
    sink->last = describe(e, what);
    return;
  }
  g_noted_errors.fetch_add(1, std::memory_order_relaxed);
}

uint64_t noted_errors() { return g_noted_errors.load(std::memory_order_relaxed); }

std::string runtime_report() {
  std::string out;
  int runtime = 0, driver = 0;
  // Either may fail without a driver: the version then reads "none".
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  cudaGetLastError();
  auto version = [](int v) { return v ? str(v / 1000, ".", v % 1000 / 10) : std::string("none"); };
  out += str("  CUDA runtime:       ", version(runtime), " (tutti built with ", CUDART_VERSION / 1000,
             ".", CUDART_VERSION % 1000 / 10, ")\n");
  out += str("  CUDA driver:        ", driver ? version(driver) : "not installed", "\n");
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    out += str("  CUDA devices:       none (", cudaGetErrorString(e), ")\n");
    return out;
  }
  out += str("  CUDA devices:       ", n, "\n");
  for (int d = 0; d < n; ++d) {
    try {
      const DeviceProps& p = device_props(d);
      out += str("    ", d, ": ", p.name, ", sm_", p.cc_major, p.cc_minor, ", ", p.sm_count,
                 " SMs, ", p.memory_bytes >> 20, " MiB", p.pci_bus_id.empty() ? "" : ", PCI ",
                 p.pci_bus_id, "\n");
    } catch (const Error& err) {
      out += str("    ", d, ": ", err.what(), "\n");
    }
  }
  return out;
}

}  // namespace tutti::cuda
