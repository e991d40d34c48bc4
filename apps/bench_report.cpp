#include "bench_report.hpp"

#include <cstdio>

#include "base/status.hpp"
#include "cli.hpp"

namespace tutti::apps {

double busbw_factor(Collective c, int nranks) {
  const double p = nranks;
  switch (c) {
    case Collective::Allreduce: return 2 * (p - 1) / p;
    case Collective::Reduce:
    case Collective::Bcast: return 1;
    case Collective::Barrier: return 0;
    default: return (p - 1) / p;  // allgather, reduce_scatter, gather, scatter, alltoall(v)
  }
}

void BenchReport::header(const std::string& title) {
  switch (format_) {
    case Format::Table:
      std::printf("# %s\n", title.c_str());
      std::printf("#%13s %11s %9s %6s %5s %-20s %11s %10s %10s %7s", "size", "count", "type",
                  "redop", "root", "algorithm", "time(us)", "algbw", "busbw", "#wrong");
      if (compare_mpi_) std::printf(" %11s %10s %8s", "mpi(us)", "mpi_busbw", "speedup");
      if (bounds_) std::printf(" %10s %8s %8s %8s", "copy(us)", "of_bound", "rtt(us)", "xchg(us)");
      std::printf("\n#%13s %11s %9s %6s %5s %-20s %11s %10s %10s %7s", "(B)", "(elements)", "",
                  "", "", "", "", "(GB/s)", "(GB/s)", "");
      if (compare_mpi_) std::printf(" %11s %10s %8s", "", "(GB/s)", "(mpi/us)");
      if (bounds_) std::printf(" %10s %8s %8s %8s", "", "", "", "");
      std::printf("\n");
      break;
    case Format::Csv:
      std::printf("collective,bytes,count,dtype,redop,root,algorithm,time_us,algbw_gbs,busbw_gbs,wrong");
      if (compare_mpi_) std::printf(",mpi_time_us,mpi_busbw_gbs,speedup");
      if (bounds_) std::printf(",copy_us,of_bound,rtt_us,exchange_us");
      std::printf(",error\n");
      break;
    case Format::Json: std::printf("[\n"); break;
  }
  std::fflush(stdout);
}

void BenchReport::row(const BenchRow& r) {
  busbws_.push_back(r.busbw);
  const double speedup = r.mpi_time_us && r.time_us > 0 ? *r.mpi_time_us / r.time_us : 0;
  const double copy = r.copy_us.value_or(0), rtt = r.round_trip_us.value_or(0);
  const double exchange = r.exchange_us.value_or(0);  // 0: not measured at this size
  const double of_bound = r.copy_us && r.time_us > 0 ? *r.copy_us / r.time_us : 0;
  switch (format_) {
    case Format::Table: {
      const std::string wrong = r.wrong < 0 ? "N/A" : std::to_string(r.wrong);
      std::printf(" %13llu %11zu %9s %6s %5d %-20s %11.2f %10.3f %10.3f %7s",
                  static_cast<unsigned long long>(r.bytes), r.count, r.dtype.c_str(),
                  r.redop.c_str(), r.root, (r.collective + ":" + r.algorithm).c_str(), r.time_us,
                  r.algbw, r.busbw, wrong.c_str());
      if (compare_mpi_ && r.mpi_time_us)
        std::printf(" %11.2f %10.3f %8.2f", *r.mpi_time_us, *r.mpi_busbw, speedup);
      if (bounds_) std::printf(" %10.2f %8.3f %8.3f %8.3f", copy, of_bound, rtt, exchange);
      if (!r.error.empty()) std::printf("  ERROR: %s", r.error.c_str());
      std::printf("\n");
      break;
    }
    case Format::Csv:
      std::printf("%s,%llu,%zu,%s,%s,%d,%s,%.3f,%.4f,%.4f,%ld", r.collective.c_str(),
                  static_cast<unsigned long long>(r.bytes), r.count, r.dtype.c_str(),
                  r.redop.c_str(), r.root, r.algorithm.c_str(), r.time_us, r.algbw, r.busbw,
                  r.wrong);
      if (compare_mpi_)
        std::printf(",%.3f,%.4f,%.3f", r.mpi_time_us.value_or(0), r.mpi_busbw.value_or(0), speedup);
      if (bounds_) std::printf(",%.3f,%.4f,%.4f,%.4f", copy, of_bound, rtt, exchange);
      std::printf(",\"%s\"\n", r.error.c_str());
      break;
    case Format::Json:
      std::printf("%s  {\"collective\": \"%s\", \"bytes\": %llu, \"count\": %zu, \"dtype\": \"%s\", "
                  "\"redop\": \"%s\", \"root\": %d, \"algorithm\": \"%s\", \"time_us\": %.3f, "
                  "\"algbw_gbs\": %.4f, \"busbw_gbs\": %.4f, \"wrong\": %ld",
                  first_json_ ? "" : ",\n", r.collective.c_str(),
                  static_cast<unsigned long long>(r.bytes), r.count, r.dtype.c_str(),
                  r.redop.c_str(), r.root, r.algorithm.c_str(), r.time_us, r.algbw, r.busbw,
                  r.wrong);
      if (compare_mpi_ && r.mpi_time_us)
        std::printf(", \"mpi_time_us\": %.3f, \"mpi_busbw_gbs\": %.4f, \"speedup\": %.3f",
                    *r.mpi_time_us, *r.mpi_busbw, speedup);
      if (bounds_)
        std::printf(", \"copy_us\": %.3f, \"of_bound\": %.4f, \"rtt_us\": %.4f, \"exchange_us\": %.4f",
                    copy, of_bound, rtt, exchange);
      if (!r.error.empty()) std::printf(", \"error\": \"%s\"", r.error.c_str());
      std::printf("}");
      first_json_ = false;
      break;
  }
  std::fflush(stdout);
}

void BenchReport::footer() {
  if (format_ == Format::Json) {
    std::printf("\n]\n");
  } else if (format_ == Format::Table && !busbws_.empty()) {
    double sum = 0;
    for (double b : busbws_) sum += b;
    std::printf("# Avg bus bandwidth: %.3f GB/s\n", sum / static_cast<double>(busbws_.size()));
  }
  std::fflush(stdout);
}

}  // namespace tutti::apps
