// Operations of a communicator start in the order they were called, even
// when one of them has to wait before it may start (for the work enqueued on
// the user's CUDA stream, see call_op.hpp): MPI's collectives must be
// started in the same order on every rank, and messages between a pair of
// ranks with the same tag must not overtake each other.
#pragma once

#include <cstdint>
#include <set>

namespace tutti::cuda {

// Tickets that make operations start in the order they were called.
class StartOrder {
 public:
  uint64_t take() { return next_++; }
  bool is_turn(uint64_t ticket) const { return ticket == head_; }
  // The ticket's operation started, or will never start (cancelled); later
  // tickets may go once every earlier one is released.
  void release(uint64_t ticket) {
    released_.insert(ticket);
    while (released_.erase(head_)) ++head_;
  }
  // No operation is waiting for its turn.
  bool idle() const { return head_ == next_; }

 private:
  uint64_t next_ = 0, head_ = 0;
  std::set<uint64_t> released_;
};

}  // namespace tutti::cuda
