#include "safety/flight_recorder.hpp"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <set>

#include "base/status.hpp"

namespace tutti {
namespace {

// The live recorders, written once more at process exit (a communicator the
// application never destroyed still leaves its trace).
std::mutex& live_mutex() {
  static std::mutex m;
  return m;
}
std::set<const FlightRecorder*>& live() {
  static std::set<const FlightRecorder*> s;
  return s;
}
void write_all_at_exit() {
  std::lock_guard<std::mutex> lock(live_mutex());
  for (const FlightRecorder* r : live()) r->write("process exit");
}

int next_comm_index() {
  static std::mutex m;
  static int n = 0;
  std::lock_guard<std::mutex> lock(m);
  if (n == 0) std::atexit(write_all_at_exit);
  return n++;
}

std::string wall_clock_now() {
  char buf[64];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

FlightRecorder::FlightRecorder(const std::string& prefix, int world_rank, int rank, int nranks)
    : path_(str(prefix, ".rank", world_rank, ".comm", next_comm_index())),
      rank_(rank),
      nranks_(nranks),
      origin_(std::chrono::steady_clock::now()),
      origin_wall_(wall_clock_now()),
      ring_(kDepth) {
  std::lock_guard<std::mutex> lock(live_mutex());
  live().insert(this);
}

FlightRecorder::~FlightRecorder() {
  {
    std::lock_guard<std::mutex> lock(live_mutex());
    live().erase(this);
  }
  write("communicator destroyed");
}

double FlightRecorder::now_us() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_)
      .count();
}

uint64_t FlightRecorder::started(const OpLabel& label, size_t bytes) {
  const uint64_t id = next_id_++;
  Entry& e = ring_[id % kDepth];
  e.id = id;
  e.what = label.to_string();
  e.bytes = bytes;
  e.start_us = now_us();
  e.end_us = -1;
  e.status = TUTTI_SUCCESS;
  return id;
}

void FlightRecorder::finished(uint64_t id, Status status) {
  Entry& e = ring_[id % kDepth];
  if (e.id != id) return;
  e.end_us = now_us();
  e.status = status;
}

void FlightRecorder::write(const std::string& why) const {
  std::FILE* f = std::fopen(path_.c_str(), "w");
  if (!f) return;  // tracing must never make things worse
  std::fprintf(f, "# tutti flight recorder: rank %d of %d, written at %.1f us (%s)\n", rank_,
               nranks_, now_us(), why.c_str());
  std::fprintf(f, "# times in us since the communicator was created (%s); the last %zu operations\n",
               origin_wall_.c_str(), kDepth);
  std::fprintf(f, "# %-8s %-40s %12s %14s %14s  state\n", "id", "operation", "bytes", "start",
               "end");
  const uint64_t first = next_id_ > kDepth ? next_id_ - kDepth : 1;
  for (uint64_t id = first; id < next_id_; ++id) {
    const Entry& e = ring_[id % kDepth];
    if (e.id != id) continue;
    const char* state = e.end_us < 0 ? "RUNNING" : e.status == TUTTI_SUCCESS ? "done" : nullptr;
    std::string failed;
    if (!state) failed = str("failed: ", tutti_strerror(e.status));
    if (e.end_us < 0)
      std::fprintf(f, "  %-8llu %-40s %12zu %14.1f %14s  %s\n",
                   static_cast<unsigned long long>(id), e.what.c_str(), e.bytes, e.start_us, "-",
                   state);
    else
      std::fprintf(f, "  %-8llu %-40s %12zu %14.1f %14.1f  %s\n",
                   static_cast<unsigned long long>(id), e.what.c_str(), e.bytes, e.start_us,
                   e.end_us, state ? state : failed.c_str());
  }
  std::fclose(f);
}

}  // namespace tutti
