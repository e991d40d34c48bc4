// MPI's progress rule across communicators: a rank blocked in a call on one
// communicator still does its part of the non-blocking calls in flight on
// the others. Rank 0: ibcast on B, then a barrier on A; rank 1: waits for
// the ibcast, then the barrier. A large bcast needs the root to go on
// writing after its first part, so a barrier that progressed only A waited
// for ever (until TUTTI_TIMEOUT) while rank 1 waited for the rest of B.
//
// A wait (or a poll) that has gone idle progresses the other communicators
// with operations in flight (Comm::Patience, tutti_test). A communicator is
// used from one thread at a time, but another thread may be inside a call
// on B right now: every API call claims the communicators it touches (one
// atomic word each, held until the call returns), and a pass progresses
// only those it can claim, or this thread already holds. So threads that
// each use their own communicators (a thread per communicator, the torch
// backend's worker per group) each keep the rule for their own.
#pragma once

#include <atomic>
#include <cstdint>

namespace tutti {

class Comm;

namespace progress_elsewhere {

// Which thread is inside a call on a communicator (0: none). Lives in Comm.
class Claim {
 private:
  friend void claim(Comm& comm);
  friend int progress_others(const Comm* waiting, bool* polled_mpi);
  friend class ApiCall;
  std::atomic<uint32_t> by_{0};
};

// Held by every API call: how deep this thread is in tutti's calls
// (tutti_progress from inside one, through the MPI library's progress
// engine, must not progress what that call is progressing); the outermost
// releases the communicators the call claimed.
class ApiCall {
 public:
  ApiCall();
  ~ApiCall();
  ApiCall(const ApiCall&) = delete;
  ApiCall& operator=(const ApiCall&) = delete;
};
// Whether this thread is inside more than one tutti call (the one asking).
bool nested_call();
// Claims `comm` for this thread until its outermost API call returns
// (nothing outside one). Where another thread is inside a call on it (not
// allowed: one thread at a time) or a pass is progressing it (a bounded
// round), yields until it is free.
void claim(Comm& comm);
// A communicator's life: only registered ones are progressed from others.
// remove() is called by its destructor, which this thread has claimed.
void add(Comm* comm);
void remove(Comm* comm);
// From a wait or poll on `waiting` (null: tutti_progress) that found
// nothing to do: progresses the other communicators' operations in flight
// that no other thread is inside. Returns how many events that found;
// sets `*polled_mpi` where one of them polled the MPI library.
int progress_others(const Comm* waiting, bool* polled_mpi = nullptr);

}  // namespace progress_elsewhere
}  // namespace tutti
