// tutti_comm_abort's messenger: a receive from any rank kept posted on the
// communicator's own transport under a tag nothing else carries, and a
// notice sent to every other rank on abort. Polled only by waits that are
// idle (an operation that can still complete does not need it), so it costs
// nothing on the fast path.
//
// The notices travel over tutti's transport, not the MPI library, so that
// tutti's waits over UCX never call into MPI (which may be busy in the
// user's other threads, and whose progress a sleeping wait would pace).
// With the MPI transport the notices do go through MPI; waits over that
// transport never sleep.
#pragma once

#include <memory>
#include <optional>

#include "transport/transport.hpp"

namespace tutti {

class AbortChannel {
 public:
  // Posts the receive. Not collective: a notice that arrives before a peer
  // posted its receive waits in the transport until it does.
  explicit AbortChannel(Transport& transport);
  // Withdraws the receive; must run before the transport goes.
  ~AbortChannel();
  AbortChannel(const AbortChannel&) = delete;
  AbortChannel& operator=(const AbortChannel&) = delete;

  // Sends the notice to every other rank (once; later calls do nothing). A
  // peer the transport can no longer reach is skipped: its own waits end at
  // TUTTI_TIMEOUT.
  void notify_all();
  // The rank whose notice arrived, if one did. Progresses the transport
  // (the waiter may be polling only the shared segment).
  std::optional<int> poll();

 private:
  // Waits, for a bounded number of polls, until `c` is done.
  bool settle(Completion& c);

  Transport& transport_;
  int from_ = -1;  // the receive's buffer: the aborting rank
  std::unique_ptr<Completion> receive_;
  std::optional<int> received_;
  int notice_ = 0;  // the sends' buffer: this rank
  std::unique_ptr<Completion[]> sends_;  // null until notify_all
};

}  // namespace tutti
