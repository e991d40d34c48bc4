#include "api/group.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "base/status.hpp"

namespace tutti::group {
namespace {

struct Recorded {
  tutti_comm_t comm;
  GroupedCall call;
  tutti_request_t request;  // null: a blocking call
};

// Per thread, as in NCCL: a group gathers the calls of the thread that
// opened it.
struct OpenGroup {
  int depth = 0;
  std::vector<Recorded> calls;
};
thread_local OpenGroup open_group;

}  // namespace

void start() { ++open_group.depth; }

bool is_open() { return open_group.depth > 0; }

void record(tutti_comm_t comm, GroupedCall call, tutti_request_t* req) {
  tutti_request_t r = nullptr;
  if (req) {
    r = open_request(comm, nullptr);
    r->group_pending = true;
    *req = r;
  } else {
    ++comm->open_requests;  // pinned until the group ends
  }
  open_group.calls.push_back({comm, std::move(call), r});
}

Status end() {
  if (open_group.depth == 0)
    fail(TUTTI_ERR_INVALID_ARGUMENT, "tutti_group_end: no group is open (call tutti_group_start first)");
  if (--open_group.depth > 0) return TUTTI_SUCCESS;
  std::vector<Recorded> calls = std::move(open_group.calls);
  open_group.calls.clear();

  std::vector<tutti_comm_t> comms;  // in order of first call
  for (const Recorded& c : calls)
    if (std::find(comms.begin(), comms.end(), c.comm) == comms.end()) comms.push_back(c.comm);
  struct Blocking {
    tutti_comm_t comm;
    std::shared_ptr<Operation> op;
  };
  std::vector<Blocking> blocking;  // one entry per operation (fused calls share one)
  for (tutti_comm_t comm : comms) {
    std::vector<GroupedCall> mine;
    std::vector<Recorded*> owners;
    for (Recorded& c : calls) {
      if (c.comm != comm) continue;
      mine.push_back(std::move(c.call));
      owners.push_back(&c);
    }
    progress_elsewhere::claim(*comm->impl);  // until tutti_group_end returns
    const std::vector<std::shared_ptr<Operation>> ops = comm->impl->start_group(mine);
    for (size_t k = 0; k < ops.size(); ++k) {
      if (tutti_request_t r = owners[k]->request) {
        r->op = ops[k];
        r->group_pending = false;
        continue;
      }
      --comm->open_requests;
      const bool seen = std::any_of(blocking.begin(), blocking.end(),
                                    [&](const Blocking& b) { return b.op == ops[k]; });
      if (!seen) blocking.push_back({comm, ops[k]});
    }
  }
  // Every blocking call's buffers are final before the group returns, the
  // failed ones included (a failure makes the communicator fail the rest
  // fast).
  Status first = TUTTI_SUCCESS;
  std::string first_error;
  for (const Blocking& b : blocking) {
    Comm& c = *b.comm->impl;
    const Status st = c.wait(*b.op, c.config().timeout_s);
    if (st != TUTTI_SUCCESS && first == TUTTI_SUCCESS) {
      first = st;
      first_error = last_error();
    }
  }
  if (first != TUTTI_SUCCESS) return set_last_error(first, first_error);
  return TUTTI_SUCCESS;
}

}  // namespace tutti::group
