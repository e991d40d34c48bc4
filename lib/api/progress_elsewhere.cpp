#include "api/progress_elsewhere.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "api/comm.hpp"

namespace tutti::progress_elsewhere {
namespace {

// The threads that have called tutti, and whether a wait is progressing
// another communicator right now. A new thread counts itself, then waits
// for such a pass to end; a pass starts only while it sees one thread.
// Both sides use sequentially consistent operations, so that either the
// pass sees the second thread and does not start, or the new thread sees
// the pass and waits for it (as in Dekker's algorithm).
std::atomic<int> g_threads{0};
std::atomic<bool> g_passing{false};
thread_local struct {
  bool counted = false;
  int depth = 0;  // tutti calls this thread is in
} t_thread;

std::mutex g_mutex;  // guards g_comms
std::vector<Comm*> g_comms;

}  // namespace

ApiCall::ApiCall() {
  ++t_thread.depth;
  if (t_thread.counted) [[likely]]
    return;
  t_thread.counted = true;
  g_threads.fetch_add(1);
  // A pass is one non-blocking progress() per communicator: bounded. Yield
  // meanwhile, since the passing thread may share this core.
  while (g_passing.load()) std::this_thread::yield();
}

ApiCall::~ApiCall() { --t_thread.depth; }

bool nested_call() { return t_thread.depth > 1; }

void add(Comm* comm) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_comms.push_back(comm);
}

void remove(Comm* comm) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_comms.erase(std::remove(g_comms.begin(), g_comms.end(), comm), g_comms.end());
}

int progress_others(const Comm* waiting) {
  if (g_threads.load(std::memory_order_relaxed) > 1) return 0;  // cheap early out
  const std::unique_lock<std::mutex> lock(g_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return 0;
  g_passing.store(true);
  struct EndPass {
    ~EndPass() { g_passing.store(false); }  // also where progress() throws
  } end_pass;
  int events = 0;
  if (g_threads.load() <= 1)
    for (Comm* comm : g_comms)
      if (comm != waiting && comm->has_in_flight()) events += comm->progress();
  return events;
}

}  // namespace tutti::progress_elsewhere
