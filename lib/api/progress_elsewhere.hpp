// MPI's progress rule across communicators: a rank blocked in a call on one
// communicator still does its part of the non-blocking calls in flight on
// the others. Rank 0: ibcast on B, then a barrier on A; rank 1: waits for
// the ibcast, then the barrier. A large bcast needs the root to go on
// writing after its first part, so a barrier that progressed only A waited
// for ever (until TUTTI_TIMEOUT) while rank 1 waited for the rest of B.
//
// A wait that has gone idle progresses the other communicators with
// operations in flight (Comm::Patience). Only while one thread alone has
// ever called tutti in this process: a communicator is used from one thread
// at a time, and another thread may be using B right now. With several
// threads each waits for its own communicators only, as before.
#pragma once

namespace tutti {

class Comm;

namespace progress_elsewhere {

// Held by every API call: counts the threads that have called tutti (one
// thread-local check once counted) and how deep this thread is in tutti's
// calls (tutti_progress from inside one, through the MPI library's progress
// engine, must not progress what that call is progressing).
class ApiCall {
 public:
  ApiCall();
  ~ApiCall();
  ApiCall(const ApiCall&) = delete;
  ApiCall& operator=(const ApiCall&) = delete;
};
// Whether this thread is inside more than one tutti call (the one asking).
bool nested_call();
// A communicator's life: only registered ones are progressed from others.
void add(Comm* comm);
void remove(Comm* comm);
// From a wait on `waiting` that found nothing to do: progresses the other
// communicators' operations in flight, where one thread alone uses tutti.
// Returns how many events that found.
int progress_others(const Comm* waiting);

}  // namespace progress_elsewhere
}  // namespace tutti
