// What the C API's opaque handles hold: a communicator, and a request for an
// operation in flight on one.
#pragma once

#include <cstddef>
#include <memory>

#include "api/comm.hpp"

struct tutti_comm {
  std::unique_ptr<tutti::Comm> impl;
  // Requests handed out and not yet completed by tutti_wait/tutti_test, and
  // blocking calls recorded in an open group: the communicator cannot be
  // destroyed under them.
  size_t open_requests = 0;
};

struct tutti_request {
  std::shared_ptr<tutti::Operation> op;  // null: completed at once
  tutti_comm* owner;
  // Made inside a group that has not ended yet: nothing started, nothing to
  // wait for (api/group.hpp binds `op` at tutti_group_end).
  bool group_pending = false;
  tutti::Comm& comm() const { return *owner->impl; }
};

namespace tutti {

inline tutti_request_t open_request(tutti_comm_t comm, std::shared_ptr<Operation> op) {
  auto* r = new tutti_request{std::move(op), comm};
  ++comm->open_requests;
  return r;
}

inline void close_request(tutti_request_t r) {
  --r->owner->open_requests;
  delete r;
}

}  // namespace tutti
