#include "interpose/stats.hpp"

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tutti::interpose {
namespace {

constexpr int kReasons = static_cast<int>(Pass::count_);
std::atomic<uint64_t> ran_in_tutti{0};
std::array<std::atomic<uint64_t>, kReasons> passed{};

bool stats_requested() {
  const char* v = std::getenv("TUTTI_MPI_STATS");
  return v && *v && std::strcmp(v, "0") != 0;
}

}  // namespace

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
    case Pass::count_: break;
  }
  return "?";
}

void count_ran_in_tutti() { ran_in_tutti.fetch_add(1, std::memory_order_relaxed); }

void count_passed(Pass reason) {
  passed[static_cast<int>(reason)].fetch_add(1, std::memory_order_relaxed);
}

void report_stats() {
  if (!stats_requested()) return;
  // Every rank reads the same variable (mpirun -x), so all take part.
  std::array<unsigned long long, kReasons + 1> mine{}, total{};
  mine[0] = ran_in_tutti.load();
  for (int i = 0; i < kReasons; ++i) mine[i + 1] = passed[i].load();
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
