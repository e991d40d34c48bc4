// Pinned host buffers for staging device messages, kept for reuse in
// power-of-two size classes (4 KiB and up). Pinned memory is expensive to
// get (cudaHostAlloc maps and locks pages: tens of microseconds to
// milliseconds; cudaFreeHost waits for the device) and scarce (it cannot be
// swapped), so the pool
//   - allocates ahead (reserve(), at communicator creation) what the first
//     calls need, keeping cudaHostAlloc off their critical path;
//   - keeps idle buffers up to a bound that follows what the job needs:
//     `floor_bytes` always, and up to what the busiest of the last
//     kRememberedPeriods busy periods (stretches with a buffer leased; a
//     blocking call is one) had leased at once, never more than
//     `cap_bytes`. A call that stages 256 MiB at once therefore finds its
//     buffers again on the next call, where a fixed 64 MiB bound freed and
//     re-pinned 192 MiB every call (0.6-0.8 GB/s at 256 MiB on an H200,
//     docs/CUDA.md); once the large calls stop, the bound falls back to
//     the floor within kRememberedPeriods periods;
//   - lets trim() free every idle buffer.
// Buffers in use are not bounded here: they are what the schedules in
// flight stage, and a failed allocation is an empty lease, which the
// caller reports.
// Host code only; the allocator is a parameter so that the policy can be
// tested without a GPU (tests/unit, [cuda-host]).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace tutti::cuda {

class PinnedPool {
 public:
  struct Allocator {
    void* (*alloc)(size_t bytes);  // null when out of memory
    void (*free)(void* p);
  };
  static constexpr size_t kDefaultFloorBytes = size_t{64} << 20;
  static constexpr size_t kDefaultCapBytes = size_t{1} << 30;
  static constexpr int kRememberedPeriods = 16;
  static constexpr uint64_t kMaxCapMiB = uint64_t{1} << 24;  // 16 TiB

  // The cap from TUTTI_CUDA_PINNED_KEEP_MB's text (MiB, decimal): the
  // default where unset or empty, nothing where it is not a number of MiB
  // from 0 to kMaxCapMiB.
  static std::optional<size_t> cap_bytes_from_text(const char* text) {
    if (!text || !*text) return kDefaultCapBytes;
    uint64_t mib = 0;
    for (const char* c = text; *c; ++c) {
      if (*c < '0' || *c > '9') return std::nullopt;
      mib = mib * 10 + static_cast<uint64_t>(*c - '0');
      if (mib > kMaxCapMiB) return std::nullopt;
    }
    return static_cast<size_t>(mib) << 20;
  }

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

  // `cap_bytes` below `floor_bytes` lowers the floor to it (0: keep nothing).
  PinnedPool(Allocator allocator, size_t floor_bytes = kDefaultFloorBytes,
             size_t cap_bytes = kDefaultCapBytes)
      : allocator_(allocator),
        cap_bytes_(cap_bytes),
        floor_bytes_(floor_bytes < cap_bytes ? floor_bytes : cap_bytes) {}
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
    const size_t leased = held_bytes_ - idle_bytes_;
    if (leased > period_peak_) period_peak_ = leased;
    return lease;
  }

  // Allocates `count` idle buffers of at least `bytes` ahead of use, within
  // the bound on idle bytes; false if an allocation failed.
  bool reserve(size_t bytes, int count) {
    const int c = size_class_of(bytes);
    for (int i = 0; i < count; ++i) {
      if (idle_bytes_ + class_bytes(c) > keep_bound()) return true;
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
  // How many idle bytes the pool keeps now (see the header comment).
  size_t keep_bound() const {
    size_t need = period_peak_;
    for (size_t peak : recent_peaks_) need = peak > need ? peak : need;
    need = need > floor_bytes_ ? need : floor_bytes_;
    return need < cap_bytes_ ? need : cap_bytes_;
  }

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
  // Kept while the busy period lasts (it may lease the buffer again, and
  // the period's peak bounds what is held); trimmed when it ends.
  void give_back(int c, char* p) {
    idle_of(c).push_back(p);
    idle_bytes_ += class_bytes(c);
    if (held_bytes_ == idle_bytes_) end_busy_period();
  }
  // Nothing is leased any more: remember this period's peak, forget the
  // oldest, and free the idle buffers beyond the new bound, largest first
  // (the small buffers of small calls stay).
  void end_busy_period() {
    recent_peaks_[next_period_] = period_peak_;
    next_period_ = (next_period_ + 1) % kRememberedPeriods;
    period_peak_ = 0;
    const size_t bound = keep_bound();
    for (int c = static_cast<int>(idle_.size()) - 1; c >= kMinClass && idle_bytes_ > bound; --c) {
      std::vector<char*>& idle = idle_[static_cast<size_t>(c)];
      while (!idle.empty() && idle_bytes_ > bound) {
        allocator_.free(idle.back());
        idle.pop_back();
        idle_bytes_ -= class_bytes(c);
        held_bytes_ -= class_bytes(c);
      }
    }
  }

  Allocator allocator_;
  size_t cap_bytes_, floor_bytes_;
  size_t period_peak_ = 0;  // most bytes leased at once in this busy period
  std::array<size_t, kRememberedPeriods> recent_peaks_{};
  int next_period_ = 0;
  std::vector<std::vector<char*>> idle_;  // by size class
  size_t held_bytes_ = 0, idle_bytes_ = 0;
};

}  // namespace tutti::cuda
