#include "api/progress_elsewhere.hpp"

#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "api/comm.hpp"

namespace tutti::progress_elsewhere {
namespace {

std::atomic<uint32_t> g_next_thread{1};

thread_local struct {
  uint32_t id = 0;               // this thread's mark in a Claim, from 1
  int depth = 0;                 // tutti calls this thread is in
  std::vector<Claim*> claimed;   // by the outermost call, released at its end
} t_thread;

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
  if (--t_thread.depth > 0) return;
  for (Claim* c : t_thread.claimed) c->by_.store(0, std::memory_order_release);
  t_thread.claimed.clear();
}

bool nested_call() { return t_thread.depth > 1; }

void claim(Comm& comm) {
  if (t_thread.depth == 0) return;  // outside an API call: nothing releases it
  Claim& c = comm.claim();
  const uint32_t me = this_thread_id();
  uint32_t free = 0;
  if (c.by_.compare_exchange_strong(free, me, std::memory_order_acquire)) [[likely]] {
    t_thread.claimed.push_back(&c);
    return;
  }
  if (free == me) return;  // claimed earlier in this call
  do {
    std::this_thread::yield();
    free = 0;
  } while (!c.by_.compare_exchange_weak(free, me, std::memory_order_acquire));
  t_thread.claimed.push_back(&c);
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
  std::erase(t_thread.claimed, &comm->claim());
}

int progress_others(const Comm* waiting) {
  // One pass at a time (a thread that finds another passing goes on
  // waiting on its own), and never one inside another.
  const std::unique_lock<std::mutex> lock(g_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return 0;
  const uint32_t me = this_thread_id();
  int events = 0;
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
      if (comm->has_in_flight()) events += comm->progress();
    } else if (free == me && comm->has_in_flight()) {
      events += comm->progress();  // this thread's own call holds it (a group's wait)
    }
  }
  return events;
}

}  // namespace tutti::progress_elsewhere
