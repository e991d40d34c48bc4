// Scratch memory kept across calls. Fresh memory is expensive (page faults
// run at ~0.4 GB/s: 150 ms for 64 MiB), so a communicator keeps the buffers
// its schedules used and lends them again; a repeated call allocates nothing.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace tutti {

class ScratchPool;

// A borrowed buffer, returned to its pool when the lease ends.
class ScratchLease {
 public:
  ScratchLease() = default;
  ScratchLease(ScratchPool* pool, size_t index, void* data) : pool_(pool), index_(index), data_(data) {}
  ScratchLease(ScratchLease&& o) noexcept { *this = std::move(o); }
  ScratchLease& operator=(ScratchLease&& o) noexcept;
  ~ScratchLease();
  void* data() const { return data_; }
  // Never returns the buffer to the pool: it stays in use until the pool
  // (the communicator, after its transport) is destroyed.
  void keep_until_pool_ends() { pool_ = nullptr; }

 private:
  ScratchPool* pool_ = nullptr;
  size_t index_ = 0;
  void* data_ = nullptr;
};

class ScratchPool {
 public:
  // Where the memory comes from: host memory by default; a pool of another
  // kind (CUDA device memory) passes functions that return null on failure.
  using AllocFn = void* (*)(size_t bytes);
  using FreeFn = void (*)(void* p);
  ScratchPool() = default;
  ScratchPool(AllocFn alloc, FreeFn free) : alloc_(alloc), free_(free) {}

  // A buffer of at least `bytes` (64-byte aligned); may throw Error(OOM).
  ScratchLease acquire(size_t bytes);
  size_t bytes_held() const;

 private:
  friend class ScratchLease;
  struct Slot {
    std::unique_ptr<char, void (*)(void*)> data{nullptr, nullptr};
    size_t bytes = 0;
    bool in_use = false;
  };
  std::vector<Slot> slots_;
  AllocFn alloc_ = nullptr;
  FreeFn free_ = nullptr;
};

}  // namespace tutti
