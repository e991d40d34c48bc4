// tutti-bench's output: one row per (collective, size), as a table, CSV or
// JSON, printed by rank 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench_options.hpp"

namespace tutti::apps {

struct BenchRow {
  std::string collective;
  uint64_t bytes = 0;
  size_t count = 0;
  std::string dtype, redop;
  int root = 0;
  std::string algorithm;
  double time_us = 0;
  double algbw = 0, busbw = 0;  // GB/s
  long wrong = -1;              // -1: not checked
  std::optional<double> mpi_time_us, mpi_busbw;
  std::optional<double> copy_us;        // --bounds: every rank copying `bytes` at once
  std::optional<double> round_trip_us;  // --bounds: ranks 0 and 1, one cache line
  std::optional<double> exchange_us;    // --bounds: ranks 0 and 1 swap what a 2-rank call hands over
  std::string error;            // non-empty if the call failed
};

// nccl-tests' bus-bandwidth factor: what each rank's link carries relative
// to the algorithm bandwidth.
double busbw_factor(Collective c, int nranks);

class BenchReport {
 public:
  BenchReport(Format format, bool compare_mpi, bool bounds)
      : format_(format), compare_mpi_(compare_mpi), bounds_(bounds) {}
  void header(const std::string& title);
  void row(const BenchRow& r);
  void footer();

 private:
  Format format_;
  bool compare_mpi_;
  bool bounds_;
  bool first_json_ = true;
  std::vector<double> busbws_;
};

}  // namespace tutti::apps
