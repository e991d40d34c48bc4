// The CUDA runtime as tutti uses it: whether there is a device at all, one
// internal stream per device, pooled events, device and pinned allocations,
// and CUDA errors as tutti statuses. Only built (and included) where
// TUTTI_HAVE_CUDA.
//
// Ordering rule: every piece of device work tutti enqueues (reduction
// kernels, local copies) goes to tutti's stream of the device, so it runs
// in the order it was enqueued without the host waiting in between; the
// staging copies run on a stream per direction that waits for tutti's
// (copy_stream below). The host waits (on an event) only where it hands
// memory to someone outside those streams: a transport reading device
// memory directly, the host reading a result, the user getting the
// buffers back.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.hpp"

namespace tutti::cuda {

// True where the CUDA driver loads and reports at least one device. Checked
// once per process; false on machines without a GPU, where tutti built with
// CUDA behaves exactly like tutti built without it (every buffer is host
// memory, no CUDA call is made per operation).
bool available();

// TUTTI_ERR_OUT_OF_MEMORY for allocation failures, TUTTI_ERR_INTERNAL otherwise.
Status status_of(cudaError_t e);
// "CUDA error in <what>: cudaErrorX (message)".
std::string describe(cudaError_t e, std::string_view what);
[[noreturn]] void fail_cuda(cudaError_t e, std::string_view what);
inline void check(cudaError_t e, std::string_view what) {
  if (e != cudaSuccess) fail_cuda(e, what);
}

int current_device();  // throws Error

struct DeviceProps {
  int id = 0;
  std::string name;
  int sm_count = 1;
  int max_threads_per_sm = 1024;
  int cc_major = 0, cc_minor = 0;
  size_t memory_bytes = 0;
  std::string pci_bus_id;
};
// Cached per device; throws Error.
const DeviceProps& device_props(int device);

// tutti's stream on the current device: created on first use and kept for
// the life of the process. It is a blocking stream (it synchronises with the
// legacy default stream): a cudaMemcpy from pageable memory returns before its
// DMA has reached the device, and tutti must not read a buffer such a copy is
// still writing (seen on the first H200 run: stale tails and whole stale
// elements until the stream waited for it). Throws Error.
cudaStream_t stream();

// A stream of the current device for the staging copies of one direction
// (device to pinned host memory, and back), created on first use and kept
// for the life of the process. Why apart from tutti's stream: a copy out
// (a chunk to send) and a copy in (a chunk received) then use the two copy
// engines at once instead of waiting for each other. Each staging copy
// first waits for the work enqueued on tutti's stream so far (which may
// write what it reads, or read what it overwrites); work that depends on
// a copy is enqueued only after the host has seen the copy's event
// complete (a receive completes then; a send's buffer is not written
// before the send completes). Throws Error.
enum class CopyDirection { Out, In };
cudaStream_t copy_stream(CopyDirection direction);
// TUTTI_CUDA_COPY_STREAMS (unset or 1: use them; 0: every staging copy on
// tutti's stream). Read once; throws Error on any other value.
bool copy_streams_enabled();

// Makes `device` current for a scope, if it is not already.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// An event of the current device (timing disabled), taken from a pool and
// given back on destruction. Move-only.
class Event {
 public:
  Event();  // throws Error
  Event(Event&& o) noexcept : event_(o.event_), device_(o.device_) { o.event_ = nullptr; }
  Event& operator=(Event&& o) noexcept;
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return event_; }
  int device() const { return device_; }
  [[nodiscard]] cudaError_t record(cudaStream_t s) { return cudaEventRecord(event_, s); }
  // cudaSuccess once everything recorded before has run, cudaErrorNotReady
  // before; anything else is an error of that work.
  [[nodiscard]] cudaError_t query() const { return cudaEventQuery(event_); }
  [[nodiscard]] cudaError_t synchronize() const { return cudaEventSynchronize(event_); }

 private:
  void release();

  cudaEvent_t event_ = nullptr;
  int device_ = 0;
};

// Allocations that return null (and clear the error) on failure, usable as
// ScratchPool allocators. Device memory is cudaMalloc'd (256-byte aligned);
// pinned memory is page-locked, portable host memory.
void* device_alloc(size_t bytes);
void device_free(void* p);
void* pinned_alloc(size_t bytes);
void pinned_free(void* p);

// The device allocation that holds `p`: its start (what cudaIpcGetMemHandle
// exports and cudaIpcOpenMemHandle maps) and the driver's process-wide
// unique id of it (a new allocation at a freed one's address has another).
// start 0 where the driver does not say (not device memory). Defined in
// memory_cuda.cpp.
struct Allocation {
  uintptr_t start = 0;
  uint64_t id = 0;
};
Allocation allocation_of(const void* p);

// Copies any memory to any memory on tutti's stream (cudaMemcpyDefault).
// With `wait`, returns once the copy is done (the host reads `dst` next).
[[nodiscard]] cudaError_t copy(void* dst, const void* src, size_t bytes, bool wait);

// Errors of device work that could not return a status where it was
// enqueued (the engine's local steps return nothing): noted, and reported
// by the call whose work it was. A call (CallOp) holds an ErrorScope while
// it starts and progresses its operation, so what is noted meanwhile on
// that thread is its own: an error in one call's kernels never fails
// another call running beside it. Outside any scope an error is counted for
// the process (noted_errors(): nothing reports it to a call).
struct NotedErrors {
  uint64_t count = 0;
  std::string last;  // describe() of the latest
};
class ErrorScope {
 public:
  explicit ErrorScope(NotedErrors& sink);
  ~ErrorScope();
  ErrorScope(const ErrorScope&) = delete;
  ErrorScope& operator=(const ErrorScope&) = delete;

 private:
  NotedErrors* previous_;
};
void note_error(cudaError_t e, std::string_view what);
uint64_t noted_errors();

// Runtime and driver versions and every device, for tutti-info.
std::string runtime_report();

}  // namespace tutti::cuda
