// TUTTI_TRACE=<prefix>: the last kDepth operations of a communicator (its
// collective number, what it was, bytes, algorithm, start and end, state),
// written to <prefix>.rank<R>.comm<K> (K counts this process's
// communicators from 0) when an operation times out, when the communicator
// is aborted, when it is destroyed and at process exit, so that after a
// hang one can see where every rank stood.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/operation.hpp"

namespace tutti {

class FlightRecorder {
 public:
  static constexpr size_t kDepth = 256;

  // Writes `<prefix>.rank<world_rank>.comm<K>`, K counting this process's
  // communicators: named by the rank in MPI_COMM_WORLD, so that two
  // processes with the same rank in different communicators (the halves of
  // a split) never write one file.
  FlightRecorder(const std::string& prefix, int world_rank, int rank, int nranks);
  ~FlightRecorder();  // writes the file one last time
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // Records an operation's start; returns its id for finished().
  uint64_t started(const OpLabel& label, size_t bytes);
  // Records its end (a no-op if the entry has been overwritten since).
  void finished(uint64_t id, Status status);
  // (Re)writes the file; `why` goes in its header. Never throws.
  void write(const std::string& why) const;
  const std::string& path() const { return path_; }

 private:
  struct Entry {
    uint64_t id = 0;  // 0: unused
    std::string what;  // "allreduce #12 (ring)"
    size_t bytes = 0;
    double start_us = 0, end_us = -1;
    Status status = TUTTI_SUCCESS;
  };
  double now_us() const;

  std::string path_;
  int rank_ = 0, nranks_ = 1;
  std::chrono::steady_clock::time_point origin_;
  std::string origin_wall_;  // the wall-clock time of origin_, for the header
  std::vector<Entry> ring_;
  uint64_t next_id_ = 1;
};

}  // namespace tutti
