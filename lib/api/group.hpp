// tutti_group_start/tutti_group_end: the calls a thread makes between them
// are recorded (api.cpp validates them first) and started together at the
// outermost end, per communicator (Comm::start_group).
#pragma once

#include "api/grouped_call.hpp"
#include "api/handles.hpp"

namespace tutti::group {

void start();
// Starts the recorded calls; waits for the blocking ones. Returns the first
// error among those (last-error text set); throws Error when no group is
// open.
Status end();
// Whether a group is open on this thread: calls are recorded, not run.
bool is_open();
// Records a validated call on `comm`. Blocking (req null): the call's
// buffers are final when the group ends. Otherwise *req is a request that
// is bound to the call's operation when the group ends.
void record(tutti_comm_t comm, GroupedCall call, tutti_request_t* req);

}  // namespace tutti::group
