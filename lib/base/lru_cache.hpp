// A small cache of at most `capacity` entries that drops the least recently
// used one when full (capacity 0: no limit). Linear search: it holds tens of entries (CUDA IPC
// handles), where a scan of a vector beats any map.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace tutti {

template <class Key, class Value>
class LruCache {
 public:
  // Called with each entry that leaves the cache (evicted, or by clear()).
  using Dropped = std::function<void(Value&)>;
  explicit LruCache(size_t capacity, Dropped dropped = {})
      : capacity_(capacity), dropped_(std::move(dropped)) {}
  ~LruCache() { clear(); }
  LruCache(const LruCache&) = delete;
  LruCache& operator=(const LruCache&) = delete;

  // The value kept for `key`, now the most recently used; null if none.
  Value* find(const Key& key) {
    for (Entry& e : entries_)
      if (e.key == key) {
        e.last_use = ++clock_;
        return &e.value;
      }
    return nullptr;
  }
  // Keeps `value` for `key` (not already kept), dropping the least
  // recently used entry first when full.
  Value& insert(Key key, Value value) {
    if (capacity_ > 0 && entries_.size() >= capacity_) drop_oldest();
    entries_.push_back({std::move(key), std::move(value), ++clock_});
    return entries_.back().value;
  }
  void clear() {
    for (Entry& e : entries_)
      if (dropped_) dropped_(e.value);
    entries_.clear();
  }
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Key key;
    Value value;
    uint64_t last_use;
  };
  void drop_oldest() {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
    if (dropped_) dropped_(oldest->value);
    entries_.erase(oldest);
  }
  size_t capacity_;
  Dropped dropped_;
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
};

}  // namespace tutti
