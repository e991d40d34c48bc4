#include "api/progress_elsewhere.hpp"

#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "api/comm.hpp"

namespace tutti::progress_elsewhere {
namespace {

std::atomic<uint32_t> g_next_thread{1};

// A call claims one communicator, a group's end one per communicator in
// it: the first few go in place, the rest (rare) in `more`.
constexpr int kClaimsInPlace = 4;

thread_local struct {
  uint32_t id = 0;  // this thread's mark in a Claim, from 1
  int depth = 0;    // tutti calls this thread is in
  // Claimed by the outermost call, released at its end.
  int claimed = 0;
  Claim* in_place[kClaimsInPlace];
  std::vector<Claim*> more;
} t_thread;

void note_claimed(Claim* c) {
  if (t_thread.claimed < kClaimsInPlace) t_thread.in_place[t_thread.claimed] = c;
  else t_thread.more.push_back(c);
  ++t_thread.claimed;
}

uint32_t this_thread_id() {
  if (t_thread.id == 0) [[unlikely]]
    t_thread.id = g_next_thread.fetch_add(1);
  return t_thread.id;
}

std::mutex g_mutex;  // guards g_comms
std::vector<Comm*> g_comms;

}  // namespace

ApiCall::ApiCall() { ++t_thread.depth; }

ApiCall::~ApiCall() {
  if (--t_thread.depth > 0 || t_thread.claimed == 0) return;
  const int in_place = std::min(t_thread.claimed, kClaimsInPlace);
  const auto release = [](Claim* c) {
    if (c != nullptr) c->by_.store(0, std::memory_order_release);  // null: destroyed in the call
  };
  for (int k = 0; k < in_place; ++k) release(t_thread.in_place[k]);
  for (Claim* c : t_thread.more) release(c);
  t_thread.more.clear();
  t_thread.claimed = 0;
}

bool nested_call() { return t_thread.depth > 1; }

void claim(Comm& comm) {
  if (t_thread.depth == 0) return;  // outside an API call: nothing releases it
  Claim& c = comm.claim();
  const uint32_t me = this_thread_id();
  // A call asks more than once (validation, then the run): one atomic
  // read-modify-write per call, not per ask.
  if (c.by_.load(std::memory_order_relaxed) == me) return;
  uint32_t free = 0;
  while (!c.by_.compare_exchange_weak(free, me, std::memory_order_acquire)) {
    std::this_thread::yield();
    free = 0;
  }
  note_claimed(&c);
}

void add(Comm* comm) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_comms.push_back(comm);
}

void remove(Comm* comm) {
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    g_comms.erase(std::remove(g_comms.begin(), g_comms.end(), comm), g_comms.end());
  }
  // Its claim goes with it: the call that destroys it must not release it.
  Claim* gone = &comm->claim();
  const int in_place = std::min(t_thread.claimed, kClaimsInPlace);
  for (int k = 0; k < in_place; ++k)
    if (t_thread.in_place[k] == gone) t_thread.in_place[k] = nullptr;
  std::replace(t_thread.more.begin(), t_thread.more.end(), gone, static_cast<Claim*>(nullptr));
}

int progress_others(const Comm* waiting, bool* polled_mpi) {
  // One pass at a time (a thread that finds another passing goes on
  // waiting on its own), and never one inside another.
  const std::unique_lock<std::mutex> lock(g_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return 0;
  const uint32_t me = this_thread_id();
  int events = 0;
  // Asked before each comm's progress: what it polls may finish there.
  auto progress = [polled_mpi](Comm& comm) {
    if (polled_mpi && !*polled_mpi) *polled_mpi = comm.progress_polls_mpi();
    return comm.progress();
  };
  for (Comm* comm : g_comms) {
    if (comm == waiting) continue;
    Claim& c = comm->claim();
    uint32_t free = 0;
    if (c.by_.compare_exchange_strong(free, me, std::memory_order_acquire)) {
      // Released also where progress() throws.
      struct Release {
        Claim& c;
        ~Release() { c.by_.store(0, std::memory_order_release); }
      } release{c};
      if (comm->has_in_flight()) events += progress(*comm);
    } else if (free == me && comm->has_in_flight()) {
      events += progress(*comm);  // this thread's own call holds it (a group's wait)
    }
  }
  return events;
}

}  // namespace tutti::progress_elsewhere
