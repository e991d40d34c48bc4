// TUTTI_CHECK=1: before each collective, the ranks agree on what they are
// calling (collective, count, datatype, op, root, the call's number on the
// communicator; for alltoallv, every pair's counts), so that a mismatch is
// TUTTI_ERR_MISMATCH on every rank, naming the ranks and values that
// differ, instead of a hang or garbage. One MPI_Iallreduce of the signature
// per call (plus an exchange of the counts for alltoallv), on a communicator
// of its own; the exact values are gathered only on a mismatch.
//
// Every step is a non-blocking MPI collective, so an agreement can be part
// of a non-blocking call (progressed by test/wait, reported by them): a
// tutti_iallreduce returns its request at once even when the other ranks
// make the call much later. Agreements run one at a time, in call order (the
// caller starts the next once the last finished), so every rank posts the
// check communicator's collectives in the same order.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "engine/coll_args.hpp"

namespace tutti {

class SignatureCheck;

// One call's agreement in flight.
class Agreement {
 public:
  ~Agreement();
  Agreement(const Agreement&) = delete;
  Agreement& operator=(const Agreement&) = delete;

  // Advances without blocking; true once finished. Throws Error on an MPI
  // failure.
  bool poll();
  bool finished() const { return step_ == Step::Done; }
  // Once finished: TUTTI_SUCCESS, or TUTTI_ERR_MISMATCH with error() (the
  // same on every rank).
  Status status() const { return status_; }
  const std::string& error() const { return error_; }
  // "TUTTI_CHECK: allreduce count=.. (call #3) ...: at least one rank never
  // made a collective call #3 on this communicator".
  std::string stuck_message(double timeout_s) const;

 private:
  friend class SignatureCheck;
  enum class Step { Signature, Counts, FirstBad, Length, Message, Gather, Done };
  static constexpr int kFields = 6;
  using Signature = std::array<int64_t, kFields>;

  Agreement(SignatureCheck& check, const CollArgs& args, uint64_t call);
  void post(int rc, const char* what);
  void after_signature();
  void after_counts();
  void finish(Status status, std::string error);

  SignatureCheck& check_;
  CollArgs args_;
  uint64_t call_;
  Step step_ = Step::Signature;
  MPI_Request request_ = MPI_REQUEST_NULL;
  Status status_ = TUTTI_SUCCESS;
  std::string error_;
  // What MPI reads and writes while a step is in flight. Heap-held: an
  // agreement abandoned mid-step leaves them to MPI (a late rank completes
  // the step), see the destructor.
  struct Buffers {
    Signature mine{};
    std::array<int64_t, 2 * kFields> both{};  // min(v), min(-v) of every field
    std::vector<int64_t> sends, theirs;       // alltoallv counts
    std::vector<Signature> all;               // every rank's signature
    int first_bad = 0, length = 0;
    std::string mismatch;
  };
  std::unique_ptr<Buffers> b_;
};

class SignatureCheck {
 public:
  explicit SignatureCheck(MPI_Comm comm);  // collective over comm
  ~SignatureCheck();
  SignatureCheck(const SignatureCheck&) = delete;
  SignatureCheck& operator=(const SignatureCheck&) = delete;

  // The agreement on this call, its first step posted. Start the next only
  // once this one finished (or was abandoned).
  std::unique_ptr<Agreement> start(const CollArgs& args);

  uint64_t calls() const { return calls_; }

 private:
  friend class Agreement;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  uint64_t calls_ = 0;  // collectives checked so far: the call's number
  bool abandoned_ = false;  // an agreement was dropped with a step in flight
};

}  // namespace tutti
