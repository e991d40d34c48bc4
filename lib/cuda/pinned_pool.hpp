// Pinned host buffers for staging device messages, kept for reuse in
// power-of-two size classes (4 KiB and up). Pinned memory is expensive to
// get (cudaHostAlloc maps and locks pages: tens of microseconds to
// milliseconds) and scarce (it cannot be swapped), so the pool
//   - allocates ahead (reserve(), at communicator creation) what the first
//     calls need, keeping cudaHostAlloc off their critical path;
//   - keeps at most `keep_bytes` of idle buffers: a buffer returned beyond
//     that is freed at once (a call that once staged 1 GiB does not pin
//     1 GiB for the rest of the job);
//   - lets trim() free every idle buffer.
// Buffers in use are not bounded here: they are what the schedules in
// flight stage, and a failed allocation is an empty lease, which the
// caller reports.
// Host code only; the allocator is a parameter so that the policy can be
// tested without a GPU (tests/unit, [cuda-host]).
#pragma once

#include <cstddef>
#include <vector>

namespace tutti::cuda {

class PinnedPool {
 public:
  struct Allocator {
    void* (*alloc)(size_t bytes);  // null when out of memory
    void (*free)(void* p);
  };
  static constexpr size_t kDefaultKeepBytes = size_t{64} << 20;

  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& o) noexcept { *this = std::move(o); }
    Lease& operator=(Lease&& o) noexcept {
      if (this != &o) {
        release();
        pool_ = o.pool_;
        size_class_ = o.size_class_;
        data_ = o.data_;
        o.pool_ = nullptr;
        o.data_ = nullptr;
      }
      return *this;
    }
    ~Lease() { release(); }
    char* data() const { return data_; }
    explicit operator bool() const { return data_ != nullptr; }

   private:
    friend class PinnedPool;
    void release() {
      if (pool_ && data_) pool_->give_back(size_class_, data_);
      pool_ = nullptr;
      data_ = nullptr;
    }
    PinnedPool* pool_ = nullptr;
    int size_class_ = 0;
    char* data_ = nullptr;
  };

  PinnedPool(Allocator allocator, size_t keep_bytes = kDefaultKeepBytes)
      : allocator_(allocator), keep_bytes_(keep_bytes) {}
  ~PinnedPool() { trim(); }
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  // At least `bytes` (> 0); an empty lease where pinned memory ran out.
  Lease acquire(size_t bytes) {
    const int c = size_class_of(bytes);
    Lease lease;
    std::vector<char*>& idle = idle_of(c);
    if (!idle.empty()) {
      lease.data_ = idle.back();
      idle.pop_back();
      idle_bytes_ -= class_bytes(c);
    } else {
      lease.data_ = static_cast<char*>(allocator_.alloc(class_bytes(c)));
      if (!lease.data_) return lease;
      held_bytes_ += class_bytes(c);
    }
    lease.pool_ = this;
    lease.size_class_ = c;
    return lease;
  }

  // Allocates `count` idle buffers of at least `bytes` ahead of use, within
  // the bound on idle bytes; false if an allocation failed.
  bool reserve(size_t bytes, int count) {
    const int c = size_class_of(bytes);
    for (int i = 0; i < count; ++i) {
      if (idle_bytes_ + class_bytes(c) > keep_bytes_) return true;
      char* p = static_cast<char*>(allocator_.alloc(class_bytes(c)));
      if (!p) return false;
      held_bytes_ += class_bytes(c);
      idle_bytes_ += class_bytes(c);
      idle_of(c).push_back(p);
    }
    return true;
  }

  // Frees every idle buffer.
  void trim() {
    for (std::vector<char*>& idle : idle_)
      for (char* p : idle) allocator_.free(p);
    idle_.clear();
    held_bytes_ -= idle_bytes_;
    idle_bytes_ = 0;
  }

  // Pinned bytes held: leased and idle.
  size_t bytes_held() const { return held_bytes_; }
  size_t bytes_idle() const { return idle_bytes_; }

 private:
  static constexpr int kMinClass = 12;  // 4 KiB
  static int size_class_of(size_t bytes) {
    int c = kMinClass;
    while (c < 62 && (size_t{1} << c) < bytes) ++c;
    return c;
  }
  static size_t class_bytes(int c) { return size_t{1} << c; }
  std::vector<char*>& idle_of(int c) {
    if (idle_.size() <= static_cast<size_t>(c)) idle_.resize(static_cast<size_t>(c) + 1);
    return idle_[static_cast<size_t>(c)];
  }
  void give_back(int c, char* p) {
    if (idle_bytes_ + class_bytes(c) > keep_bytes_) {
      allocator_.free(p);
      held_bytes_ -= class_bytes(c);
      return;
    }
    idle_of(c).push_back(p);
    idle_bytes_ += class_bytes(c);
  }

  Allocator allocator_;
  size_t keep_bytes_;
  std::vector<std::vector<char*>> idle_;  // by size class
  size_t held_bytes_ = 0, idle_bytes_ = 0;
};

}  // namespace tutti::cuda
