#include "safety/abort_channel.hpp"

#include "transport/mpi_types.hpp"

namespace tutti {

AbortChannel::AbortChannel(MPI_Comm comm) {
  check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup (abort channel)");
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  notice_ = rank_;
  check_mpi(MPI_Irecv(&from_, 1, MPI_INT, MPI_ANY_SOURCE, 0, comm_, &receive_),
            "MPI_Irecv (abort channel)");
}

AbortChannel::~AbortChannel() {
  // A cancelled receive completes whatever its peers do (MPI 3.1, 3.8.4), so
  // the wait ends. Where MPI refused the cancel it might not: the request is
  // left to MPI rather than waited for without end.
  if (receive_ != MPI_REQUEST_NULL && MPI_Cancel(&receive_) == MPI_SUCCESS)
    MPI_Wait(&receive_, MPI_STATUS_IGNORE);
  // Notices are small (sent eagerly); a peer that is gone must not block us.
  for (MPI_Request& r : sends_)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void AbortChannel::notify_all() {
  if (notified_) return;
  notified_ = true;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request req = MPI_REQUEST_NULL;
    check_mpi(MPI_Isend(&notice_, 1, MPI_INT, r, 0, comm_, &req), "MPI_Isend (abort notice)");
    sends_.push_back(req);
  }
}

std::optional<int> AbortChannel::poll() {
  if (received_ || receive_ == MPI_REQUEST_NULL) return received_;
  int done = 0;
  check_mpi(MPI_Test(&receive_, &done, MPI_STATUS_IGNORE), "MPI_Test (abort channel)");
  if (done) received_ = from_;
  return received_;
}

}  // namespace tutti
