#include "safety/checked_op.hpp"

namespace tutti {

void CheckedOp::start_call() {
  if (cancelled_ || started_) return;
  started_ = true;
  if (agreement_->status() == TUTTI_SUCCESS) call_ = start_(args_.get());
  else finish_with(agreement_->status(), agreement_->error());
  agreement_.reset();
  start_ = nullptr;  // lets go of what the closure holds
}

bool CheckedOp::advance() {
  if (cancelled_) return !call_ || call_->finished();
  if (!started_) return false;
  if (!call_) return true;  // a mismatch, or nothing to move
  if (!call_->finished()) return false;
  finish_with(call_->status(), call_->error());
  return true;
}

void CheckedOp::cancel(Status why, const std::string& message) {
  finish_with(why, message);
  cancelled_ = true;
  if (call_) call_->cancel(why, message);
  // An agreement in flight is left to MPI (its destructor says how).
  agreement_.reset();
}

std::vector<int> CheckedOp::waiting_for() const {
  return call_ ? call_->waiting_for() : std::vector<int>{};
}

}  // namespace tutti
