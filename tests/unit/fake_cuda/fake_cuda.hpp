// What the tests control and observe of the fake CUDA runtime
// (fake_cuda/cuda/runtime.hpp, fake_cuda.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fake_cuda {

// "Device" memory: host memory registered as one allocation, which
// allocation_of finds (with an id of its own) and cudaIpcGetMemHandle
// exports. Zeroed.
void* device_alloc(size_t bytes);
void device_free(void* p);
// cudaFree(p) then a cudaMalloc that returns the same address: a new
// allocation there (zeroed, a new id), as cudaMalloc reuses addresses.
void device_reallocate_in_place(void* p);

struct Counters {
  uint64_t handles_exported = 0, handles_opened = 0, handles_closed = 0;
  uint64_t copies = 0;           // cudaMemcpyAsync calls run
  uint64_t pinned_allocs = 0;
  uint64_t closed_while_copying = 0;  // handles closed with a copy from them still queued
};
Counters& counters();

// Opening any handle fails (cudaErrorInvalidResourceHandle), as between
// GPUs that cannot reach each other.
extern bool refuse_ipc_open;
// As CUDA, a handle opens at the allocation's address in its owner: opening
// one whose addresses a process still maps for another allocation fails
// with cudaErrorAlreadyMapped until that mapping is closed.

// Which rank's process the calls are made for: each has its own streams,
// so one rank's waits do not run another's copies (as in separate processes).
extern int process;
constexpr int kProcesses = 4;

// Runs every queued copy (the device finishing its work).
void drain();
// Copies queued and not yet run.
size_t pending_copies();

}  // namespace fake_cuda
