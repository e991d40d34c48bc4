// Memory shared by the ranks of one node, for the shared-memory algorithms
// (lib/algos/*_shm.cpp): a data area every rank addresses by the same
// offsets, and flags for synchronisation that costs a cache-line transfer
// instead of a message.
//
// Each ordered pair of ranks (to, from) has two flag lines, written only by
// `from`: the n-th signal from `from` to `to` goes to line n % 2, which it
// may first fill with up to kInlineBytes of data (small collectives send
// their whole vector this way, so it arrives with the flag), then stores n
// in the line's counter (release). `to`'s n-th wait for `from` returns once
// that counter reaches n (acquire): everything `from` wrote before
// signalling is visible, the line's data included.
//
// Line n % 2 is written again by signal n + 2. That is safe because every
// shared-memory schedule synchronises fully (every rank signals every other,
// then waits for all): between its signals n and n + 2 to `to`, `from`
// waits for a signal `to` sends after it finished reading line n.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tutti {

class SharedSegment {
 public:
  static constexpr size_t kCacheLine = 64;
  // Data a signal can carry in its flag line, after the 8-byte counter.
  static constexpr size_t kInlineBytes = kCacheLine - sizeof(uint64_t);

  // Bytes needed for the flags of `nranks` ranks (the data area follows).
  static size_t flag_bytes(int nranks) {
    return static_cast<size_t>(nranks) * static_cast<size_t>(nranks) * 2 * kCacheLine;
  }

  // A view over `total_bytes` of zero-initialised shared memory at `base`.
  SharedSegment(void* base, size_t total_bytes, int nranks)
      : base_(static_cast<char*>(base)), total_(total_bytes), nranks_(nranks) {}

  char* data() const { return base_ + flag_bytes(nranks_); }
  size_t data_bytes() const {
    return total_ > flag_bytes(nranks_) ? total_ - flag_bytes(nranks_) : 0;
  }
  int nranks() const { return nranks_; }

  // The flag line of the n-th signal from `from` to `to`.
  char* line(int to, int from, uint64_t n) const {
    const size_t pair = static_cast<size_t>(to) * static_cast<size_t>(nranks_) + static_cast<size_t>(from);
    return base_ + (pair * 2 + (n & 1)) * kCacheLine;
  }
  static std::atomic_ref<uint64_t> counter(char* line) {
    return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(line));
  }
  static char* payload(char* line) { return line + sizeof(uint64_t); }

 private:
  char* base_;
  size_t total_;
  int nranks_;
};

// The data area is split in two halves, the "parities". Chunk k of the
// communicator's sequence of shared-memory chunks (counted across
// collectives) is staged in half k % 2. Every chunk is: write own slots;
// full synchronisation; read the peers' slots. So when a rank writes chunk
// k+2, every peer has signalled in chunk k+1, after reading chunk k: no
// collective needs a closing synchronisation to make the segment reusable.
inline size_t shared_half_bytes(size_t data_bytes) { return data_bytes / 2 / 64 * 64; }

// One rank's side of a segment: how many signals it sent to, and waited
// for from, each peer, and the parity the next chunk uses (these continue
// across collectives).
class SharedPort {
 public:
  SharedPort(SharedSegment* segment, int rank)
      : segment_(segment), rank_(rank),
        sent_(static_cast<size_t>(segment->nranks()), 0),
        waited_(static_cast<size_t>(segment->nranks()), 0) {}

  SharedSegment& segment() const { return *segment_; }
  size_t half_bytes() const { return shared_half_bytes(segment_->data_bytes()); }
  // For a schedule of `chunks` chunks, built as if its first chunk were
  // parity 0: whether its halves must be swapped, because the sequence is at
  // parity 1. Called in collective order, the same on every rank.
  bool take_parity(uint32_t chunks) {
    const bool swap = next_parity_ != 0;
    next_parity_ ^= chunks & 1;
    return swap;
  }
  // Signals `peer`, carrying `bytes` (at most kInlineBytes) from `data`.
  void signal(int peer, const void* data = nullptr, size_t bytes = 0) {
    const uint64_t n = ++sent_[peer];
    char* line = segment_->line(peer, rank_, n);
    if (bytes) std::memcpy(SharedSegment::payload(line), data, bytes);
    SharedSegment::counter(line).store(n, std::memory_order_release);
  }
  // Reserves the next wait for `peer`: the flag value it completes at.
  uint64_t next_wait(int peer) { return ++waited_[peer]; }
  bool reached(int peer, uint64_t target) const {
    return SharedSegment::counter(segment_->line(rank_, peer, target)).load(std::memory_order_acquire) >=
           target;
  }
  // The data carried by signal `target` from `peer`, once reached.
  const char* payload(int peer, uint64_t target) const {
    return SharedSegment::payload(segment_->line(rank_, peer, target));
  }

 private:
  SharedSegment* segment_;
  int rank_;
  std::vector<uint64_t> sent_, waited_;
  uint32_t next_parity_ = 0;
};

}  // namespace tutti
