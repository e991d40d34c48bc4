// TUTTI_CHECK=1: before each collective, the ranks agree on what they are
// calling (collective, count, datatype, op, root, the call's number on the
// communicator; for alltoallv, every pair's counts), so that a mismatch is
// TUTTI_ERR_MISMATCH on every rank, naming the ranks and values that
// differ, instead of a hang or garbage. One MPI_Iallreduce of the signature
// per call (plus an MPI_Alltoall of the counts for alltoallv), on a
// communicator of its own; the exact values are gathered only on a mismatch.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "engine/coll_args.hpp"

namespace tutti {

class SignatureCheck {
 public:
  explicit SignatureCheck(MPI_Comm comm);  // collective over comm
  ~SignatureCheck();
  SignatureCheck(const SignatureCheck&) = delete;
  SignatureCheck& operator=(const SignatureCheck&) = delete;

  // Throws Error: TUTTI_ERR_MISMATCH when the ranks disagree (on every
  // rank alike), TUTTI_ERR_TIMEOUT when some rank did not make the call
  // within timeout_s (<= 0: wait forever). After a timeout the check's
  // communicator has a collective in flight that never ends: the caller
  // must treat the communicator as failed.
  void agree(const CollArgs& args, double timeout_s);
  uint64_t calls() const { return calls_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  uint64_t calls_ = 0;  // collectives checked so far: the call's number
  bool abandoned_ = false;  // an agreement timed out and is still in flight
  std::unique_ptr<int64_t[]> buffer_;  // the agreement's reduction buffer
};

}  // namespace tutti
