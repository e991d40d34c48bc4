// A stand-in for lib/cuda/runtime.hpp and the CUDA runtime, so that
// lib/cuda/staging_transport.cpp compiles and runs without a GPU (or a CUDA
// toolkit) in tests/unit/test_ipc_protocol.cpp: it is found before the real
// header through the test's include path. "Device" memory is host memory the
// test registers (fake_cuda.hpp); copies are queued on their stream and run
// when an event after them is polled or waited for, so the code under test
// sees copies that are not done yet, as on a GPU.
//
// Only what staging_transport.cpp uses is here, with the real signatures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.hpp"

// ---- the CUDA runtime's names (global, as CUDA's) ----------------------------
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorAlreadyMapped = 208,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost,
  cudaMemcpyHostToDevice,
  cudaMemcpyDeviceToHost,
  cudaMemcpyDeviceToDevice,
  cudaMemcpyDefault,
};
struct FakeStream;
struct FakeEvent;
using cudaStream_t = FakeStream*;
using cudaEvent_t = FakeEvent*;
struct cudaIpcMemHandle_t {
  char reserved[64];
};
inline constexpr unsigned cudaIpcMemLazyEnablePeerAccess = 1;

cudaError_t cudaGetLastError();
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* base);
cudaError_t cudaIpcOpenMemHandle(void** base, cudaIpcMemHandle_t handle, unsigned flags);
cudaError_t cudaIpcCloseMemHandle(void* base);

// ---- tutti::cuda, as lib/cuda/runtime.hpp declares it ------------------------
namespace tutti::cuda {

bool available();
Status status_of(cudaError_t e);
std::string describe(cudaError_t e, std::string_view what);
int current_device();
cudaStream_t stream();
enum class CopyDirection { Out, In };
cudaStream_t copy_stream(CopyDirection direction);
bool copy_streams_enabled();

class DeviceGuard {
 public:
  explicit DeviceGuard(int) {}
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
};

class Event {
 public:
  Event();
  Event(Event&& o) noexcept : event_(o.event_) { o.event_ = nullptr; }
  Event& operator=(Event&& o) noexcept;
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }
  int device() const { return 0; }
  [[nodiscard]] cudaError_t record(cudaStream_t s) { return cudaEventRecord(event_, s); }
  [[nodiscard]] cudaError_t query() const { return cudaEventQuery(event_); }
  [[nodiscard]] cudaError_t synchronize() const { return cudaEventSynchronize(event_); }

 private:
  cudaEvent_t event_ = nullptr;
};

void* pinned_alloc(size_t bytes);
void pinned_free(void* p);
struct Allocation {
  uintptr_t start = 0;
  uint64_t id = 0;
};
Allocation allocation_of(const void* p);

}  // namespace tutti::cuda
