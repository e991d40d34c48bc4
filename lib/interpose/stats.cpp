#include "interpose/stats.hpp"

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tutti::interpose {
namespace {

constexpr int kReasons = static_cast<int>(Pass::count_);

// Every thread's counters. They outlive their threads (a program's threads
// are few), so a thread that has ended still counts.
std::mutex threads_mutex;
auto* all_threads = new std::vector<std::unique_ptr<detail::Counters>>;

bool stats_requested() {
  const char* v = std::getenv("TUTTI_MPI_STATS");
  return v && *v && std::strcmp(v, "0") != 0;
}

}  // namespace

detail::Counters& detail::register_thread() {
  std::lock_guard lock(threads_mutex);
  this_thread_counters = all_threads->emplace_back(std::make_unique<Counters>()).get();
  return *this_thread_counters;
}

const char* pass_reason_name(Pass reason) {
  switch (reason) {
    case Pass::disabled: return "TUTTI_MPI=0";
    case Pass::not_ready: return "tutti not ready";
    case Pass::inter_communicator: return "inter-communicator";
    case Pass::one_rank: return "one-rank communicator";
    case Pass::datatype: return "datatype";
    case Pass::op: return "op";
    case Pass::uneven_counts: return "uneven counts";
    case Pass::trial: return "trial";
    case Pass::mpi_faster: return "MPI measured faster";
    case Pass::bad_arguments: return "bad arguments";
    case Pass::agreement_failed: return "alltoallv size agreement failed";
    case Pass::count_: break;
  }
  return "?";
}

void report_stats() {
  if (!stats_requested()) return;
  // Every rank reads the same variable (mpirun -x), so all take part.
  std::array<unsigned long long, kReasons + 1> mine{}, total{};
  {
    std::lock_guard lock(threads_mutex);
    for (const auto& thread : *all_threads)
      for (int i = 0; i <= kReasons; ++i) mine[i] += thread->n[i].load(std::memory_order_relaxed);
  }
  if (PMPI_Reduce(mine.data(), total.data(), kReasons + 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0,
                  MPI_COMM_WORLD) != MPI_SUCCESS)
    return;
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;
  unsigned long long passed_total = 0;
  std::string reasons;
  for (int i = 0; i < kReasons; ++i) {
    if (total[i + 1] == 0) continue;
    passed_total += total[i + 1];
    reasons += std::string(reasons.empty() ? " (" : ", ") + std::to_string(total[i + 1]) + " " +
               pass_reason_name(static_cast<Pass>(i));
  }
  if (!reasons.empty()) reasons += ")";
  std::fprintf(stderr, "tutti-mpi: %llu calls ran in tutti, %llu passed to MPI%s\n", total[0],
               passed_total, reasons.c_str());
}

}  // namespace tutti::interpose
