// tutti_comm_abort's messenger: a receive from any rank kept posted on a
// communicator of its own, and a notice sent to every other rank on abort.
// Polled only by waits that are idle (an operation that can still complete
// does not need it), so it costs nothing on the fast path.
#pragma once

#include <mpi.h>

#include <optional>
#include <vector>

namespace tutti {

class AbortChannel {
 public:
  explicit AbortChannel(MPI_Comm comm);  // collective over comm
  ~AbortChannel();
  AbortChannel(const AbortChannel&) = delete;
  AbortChannel& operator=(const AbortChannel&) = delete;

  // Sends the notice to every other rank (once; later calls do nothing).
  void notify_all();
  // The rank whose notice arrived, if one did.
  std::optional<int> poll();

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  int from_ = -1;  // the receive's buffer: the aborting rank
  MPI_Request receive_ = MPI_REQUEST_NULL;
  std::optional<int> received_;
  bool notified_ = false;
  int notice_ = 0;  // the sends' buffer: this rank
  std::vector<MPI_Request> sends_;
};

}  // namespace tutti
