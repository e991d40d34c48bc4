// A non-blocking call under TUTTI_CHECK: first the agreement of the ranks on
// the call (safety/signature_check.hpp), then the call itself. The request
// is handed back at once; tutti_test and tutti_wait progress the agreement
// like any other operation. The communicator posts the agreements one at a
// time in call order and starts each call once its agreement succeeded
// (start_call); a mismatch finishes this operation with TUTTI_ERR_MISMATCH
// and the call never starts.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "engine/operation.hpp"
#include "safety/signature_check.hpp"

namespace tutti {

class CheckedOp : public Operation {
 public:
  // `start` starts the call once agreed, given the call's arguments (held
  // here: the caller may reuse its alltoallv arrays once its call returned),
  // and returns its operation (null for a call with nothing to move).
  using Start = std::function<std::shared_ptr<Operation>(const CollArgs&)>;
  CheckedOp(const OpLabel& label, const CollArgs& args, Start start)
      : Operation(label), args_(args), start_(std::move(start)) {}

  const CollArgs& args() const { return args_.get(); }
  // For the communicator, in call order: whether the agreement is posted
  // yet, posting it, and whether it has finished (polling it).
  bool agreement_posted() const { return agreement_ != nullptr; }
  void post_agreement(std::unique_ptr<Agreement> agreement) { agreement_ = std::move(agreement); }
  bool agreement_finished() { return cancelled_ || agreement_->poll(); }
  // Once the agreement finished: starts the call, or records the mismatch.
  void start_call();

  void cancel(Status why, const std::string& message) override;
  std::vector<int> waiting_for() const override;

 protected:
  bool advance() override;

 private:
  HeldArgs args_;
  Start start_;
  std::unique_ptr<Agreement> agreement_;
  std::shared_ptr<Operation> call_;  // once started
  bool started_ = false, cancelled_ = false;
};

}  // namespace tutti
