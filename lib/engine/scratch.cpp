#include "engine/scratch.hpp"

#include <cstdlib>

#include "base/status.hpp"

namespace tutti {

ScratchLease& ScratchLease::operator=(ScratchLease&& o) noexcept {
  if (this != &o) {
    this->~ScratchLease();
    pool_ = o.pool_;
    index_ = o.index_;
    data_ = o.data_;
    o.pool_ = nullptr;
    o.data_ = nullptr;
  }
  return *this;
}

ScratchLease::~ScratchLease() {
  if (pool_) pool_->slots_[index_].in_use = false;
  pool_ = nullptr;
}

ScratchLease ScratchPool::acquire(size_t bytes) {
  if (bytes == 0) return {};
  // The smallest free buffer that fits; else grow a free one; else add one.
  size_t best = slots_.size(), free_slot = slots_.size();
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].in_use) continue;
    free_slot = i;
    if (slots_[i].bytes >= bytes && (best == slots_.size() || slots_[i].bytes < slots_[best].bytes))
      best = i;
  }
  if (best == slots_.size()) {
    best = free_slot == slots_.size() ? slots_.size() : free_slot;
    if (best == slots_.size()) slots_.emplace_back();
    const size_t rounded = (bytes + 4095) / 4096 * 4096;
    void* p = alloc_ ? alloc_(rounded) : std::aligned_alloc(64, rounded);
    if (!p) fail(TUTTI_ERR_OUT_OF_MEMORY, "cannot allocate ", rounded, " bytes of scratch memory");
    slots_[best].data = {static_cast<char*>(p), free_ ? free_ : std::free};
    slots_[best].bytes = rounded;
  }
  slots_[best].in_use = true;
  return ScratchLease(this, best, slots_[best].data.get());
}

size_t ScratchPool::bytes_held() const {
  size_t n = 0;
  for (const Slot& s : slots_) n += s.bytes;
  return n;
}

}  // namespace tutti
