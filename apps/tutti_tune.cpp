// tutti-tune: measures every algorithm (and chunk size) of every collective
// on this cluster, over a range of message sizes, and writes the tuning file
// that picks the fastest one for each size. Run it under mpirun or srun with
// the shape of job the table is for (ranks, nodes, ranks per node): the file
// holds one [[section]] for that shape. docs/TUNING.md has a real run.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/comm.hpp"
#include "base/status.hpp"
#include "cli.hpp"
#include "tune_calibrate.hpp"
#include "tune_measure.hpp"
#include "tuning/write.hpp"
#include "tutti/tutti.h"
#include "tutti_config.h"

namespace tutti::apps {
namespace {

constexpr const char* kUsage = R"(usage: mpirun -np N tutti-tune [options]

Times every algorithm of every collective (the MPI library's own included, and
chunk sizes for the algorithms that pipeline) at log-spaced message sizes,
checks each one's results, and writes a tuning file choosing the fastest.

  --collectives LIST   comma-separated collectives, or all                 [all]
  --min-bytes SIZE     smallest message (nccl-tests size)                  [8]
  --max-bytes SIZE     largest message                                     [4M]
  --step-factor F      size ratio between measurements (down from the max) [2]
  --iters N            timed iterations per candidate (at most; a candidate
                       also stops after 0.2 s, or when clearly slowest)   [100]
  --warmup N           untimed calls per candidate and round               [3]
  --repeats N          rounds over all candidates; a candidate's time is the
                       median of its round medians                         [3]
  --chunks LIST        chunk sizes tried for pipelining algorithms    [64K,256K,1M]
  --tolerance PCT      keep the previous size's choice while it is within PCT
                       percent of the fastest (smooths noise; 0: always
                       the fastest)                                        [5]
  --time-budget SEC    stop before the next size would exceed it; 0: none  [0]
  --output FILE        the tuning file to write                      [tuning.toml]
  --csv FILE           also write every measurement as CSV
  --cluster NAME       provenance: cluster name   [$SLURM_CLUSTER_NAME or hostname]
  --dtype NAME         datatype of the measured calls                      [float32]
  --calibrate FILE     instead of tuning: measure the cost model's machine
                       description (message latency and bandwidth inside a
                       node and between nodes, reduction and copy speed) and
                       write it to FILE, for TUTTI_MACHINE and tutti-sim
                       --machine (docs/SCALE.md). Run with 2 ranks per node
                       on 2 nodes to measure both links.
  -h, --help

Sizes are measured in increasing order, every collective at one size before
the next size; with --time-budget the largest sizes are dropped (the last
rule of each collective then covers everything above the largest measured).
)";

struct TuneOptions {
  std::vector<Collective> collectives{std::begin(kAllCollectives), std::end(kAllCollectives)};
  uint64_t min_bytes = 8, max_bytes = 4 << 20;
  double step_factor = 2;
  double time_budget_s = 0;
  double tolerance = 0.05;
  std::string output = "tuning.toml", csv, cluster;
  std::string calibrate;  // --calibrate FILE: measure the machine description instead
  MeasureOptions measure;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

TuneOptions parse_options(int argc, char** argv, bool print_help) {
  TuneOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(TUTTI_ERR_INVALID_ARGUMENT, arg, " needs a value (see --help)");
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      if (print_help) std::fputs(kUsage, stdout);
      MPI_Finalize();
      std::exit(0);
    } else if (arg == "--collectives") {
      const std::string v = value();
      o.collectives.clear();
      if (v == "all") {
        o.collectives.assign(std::begin(kAllCollectives), std::end(kAllCollectives));
        continue;
      }
      for (const std::string& name : split_list(v)) {
        const auto c = parse_collective(name);
        if (!c) fail(TUTTI_ERR_INVALID_ARGUMENT, "--collectives: unknown collective '", name, "'");
        o.collectives.push_back(*c);
      }
      if (o.collectives.empty()) fail(TUTTI_ERR_INVALID_ARGUMENT, "--collectives: empty list");
    } else if (arg == "--min-bytes") {
      o.min_bytes = parse_bytes(value(), arg);
    } else if (arg == "--max-bytes") {
      o.max_bytes = parse_bytes(value(), arg);
    } else if (arg == "--step-factor") {
      o.step_factor = parse_double(value(), arg, 1.01);
    } else if (arg == "--iters") {
      o.measure.iters = static_cast<int>(parse_int(value(), arg, 1, 100000));
    } else if (arg == "--warmup") {
      o.measure.warmup = static_cast<int>(parse_int(value(), arg, 1, 100000));
    } else if (arg == "--repeats") {
      o.measure.repeats = static_cast<int>(parse_int(value(), arg, 1, 1000));
    } else if (arg == "--chunks") {
      o.measure.chunks.clear();
      for (const std::string& c : split_list(value())) o.measure.chunks.push_back(parse_bytes(c, arg));
    } else if (arg == "--tolerance") {
      o.tolerance = parse_double(value(), arg, 0) / 100;
    } else if (arg == "--time-budget") {
      o.time_budget_s = parse_double(value(), arg, 0);
    } else if (arg == "--output") {
      o.output = value();
    } else if (arg == "--calibrate") {
      o.calibrate = value();
    } else if (arg == "--csv") {
      o.csv = value();
    } else if (arg == "--cluster") {
      o.cluster = value();
    } else if (arg == "--dtype") {
      const std::string v = value();
      const auto dt = parse_datatype(v);
      if (!dt) fail(TUTTI_ERR_INVALID_ARGUMENT, "--dtype: unknown datatype '", v, "'");
      o.measure.dtype = *dt;
    } else {
      fail(TUTTI_ERR_INVALID_ARGUMENT, "unknown option '", arg, "' (see --help)");
    }
  }
  if (o.min_bytes == 0) o.min_bytes = 1;
  if (o.max_bytes < o.min_bytes)
    fail(TUTTI_ERR_INVALID_ARGUMENT, "--max-bytes is smaller than --min-bytes");
  return o;
}

std::string us_text(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, us < 100 ? "%.2f us" : "%.1f us", us);
  return buf;
}

std::string clock_text(double seconds) {
  const long s = std::lround(std::max(seconds, 0.0));
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

std::string default_cluster() {
  if (const char* c = std::getenv("SLURM_CLUSTER_NAME"); c && *c) return c;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

using Clock = std::chrono::steady_clock;

// Cost of measuring (collective, size index), for the ETA and the budget:
// measured ones as measured, others extrapolated from the collective's
// measured sizes. For the ETA, growth per size step is the geometric mean
// since its first size (small sizes cost about the same, so this starts
// optimistic and rises as sizes become bandwidth-bound); for the budget's
// next step, the larger of that and the last step's growth. Growth is at
// most the size step, and a task costs at most its candidates' time caps.
class CostModel {
 public:
  CostModel(size_t ncoll, size_t nsizes, double step, double task_cap_s)
      : cost_(ncoll, std::vector<double>(nsizes, -1)), step_(step), task_cap_s_(task_cap_s) {}
  void record(size_t c, size_t k, double s) { cost_[c][k] = s; }
  double predict(size_t c, size_t k, bool conservative = false) const {
    if (auto own = extrapolate(c, k, conservative)) return *own;
    // Nothing measured for it yet: what the others cost there, on average.
    double sum = 0;
    int n = 0;
    for (size_t o = 0; o < cost_.size(); ++o)
      if (auto other = extrapolate(o, k, conservative)) sum += *other, ++n;
    return n ? sum / n : 0.05;
  }
  double remaining(size_t from_k, const std::vector<std::vector<bool>>& planned) const {
    double total = 0;
    for (size_t c = 0; c < cost_.size(); ++c)
      for (size_t k = from_k; k < cost_[c].size(); ++k)
        if (planned[c][k] && cost_[c][k] < 0) total += predict(c, k);
    return total;
  }

 private:
  std::optional<double> extrapolate(size_t c, size_t k, bool conservative) const {
    const std::vector<double>& row = cost_[c];
    if (row[k] >= 0) return row[k];
    std::optional<size_t> first, last, before_last;
    for (size_t j = 0; j < k; ++j) {
      if (row[j] < 0) continue;
      if (!first) first = j;
      before_last = last;
      last = j;
    }
    if (!last) return std::nullopt;
    double growth = 1;
    if (*last > *first && row[*first] > 0)
      growth = std::pow(row[*last] / row[*first], 1.0 / static_cast<double>(*last - *first));
    if (conservative && before_last && row[*before_last] > 0)
      growth = std::max(growth, std::pow(row[*last] / row[*before_last],
                                         1.0 / static_cast<double>(*last - *before_last)));
    growth = std::clamp(growth, 1.0, step_);
    return std::min(row[*last] * std::pow(growth, static_cast<double>(k - *last)),
                    std::max(task_cap_s_, row[*last]));
  }

  std::vector<std::vector<double>> cost_;
  double step_, task_cap_s_;
};

int run(Comm& comm, const TuneOptions& o, const std::string& command_line) {
  const int me = comm.rank(), p = comm.size();
  const bool print = me == 0;
  const Topology& topo = comm.topology();

  // Nominal sizes, log-spaced down from the largest (so it is measured),
  // and per collective the sizes that give distinct calls.
  std::vector<uint64_t> nominal;
  for (double b = static_cast<double>(o.max_bytes); b >= static_cast<double>(o.min_bytes) * 0.9999;
       b /= o.step_factor)
    nominal.insert(nominal.begin(), static_cast<uint64_t>(std::llround(b)));
  const size_t nc = o.collectives.size(), nk = nominal.size();
  std::vector<std::vector<bool>> planned(nc, std::vector<bool>(nk, false));
  size_t total_tasks = 0;
  for (size_t c = 0; c < nc; ++c) {
    const Collective coll = o.collectives[c];
    uint64_t last = UINT64_MAX;
    for (size_t k = 0; k < nk; ++k) {
      if (coll == Collective::Barrier) {
        planned[c][k] = k == 0;
      } else {
        const uint64_t actual = actual_message_bytes(coll, nominal[k], o.measure.dtype, p);
        planned[c][k] = actual > 0 && actual != last;
        last = actual;
      }
      total_tasks += planned[c][k];
    }
  }

  if (print)
    std::fprintf(stderr,
                 "tutti-tune: %d ranks on %d node(s), %zu collective(s), sizes %s..%s (x%g), "
                 "%zu measurements%s\n",
                 p, topo.nnodes, nc, format_size(nominal.front()).c_str(),
                 format_size(nominal.back()).c_str(), o.step_factor, total_tasks,
                 o.time_budget_s > 0 ? str(", time budget ", o.time_budget_s, " s").c_str() : "");

  std::vector<TunedCollective> tuned(nc);
  for (size_t c = 0; c < nc; ++c) tuned[c].coll = o.collectives[c];
  struct CsvRow {
    Collective coll;
    size_t count;
    TunedSize size;
  };
  std::vector<CsvRow> csv_rows;
  // A task runs at most ~10 candidates, each stopped near its time cap.
  CostModel model(nc, nk, o.step_factor, 10 * 1.5 * o.measure.candidate_cap_s);
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  size_t done = 0;
  long wrong = 0;
  uint64_t largest_measured = 0;
  bool budget_stop = false;
  for (size_t k = 0; k < nk && !budget_stop; ++k) {
    // Rank 0's clock decides whether the next size still fits the budget.
    int stop = 0;
    if (print && o.time_budget_s > 0 && k > 0) {
      double next = 0;
      for (size_t c = 0; c < nc; ++c)
        if (planned[c][k]) next += model.predict(c, k, /*conservative=*/true);
      stop = elapsed() + next > o.time_budget_s;
    }
    MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (stop) {
      budget_stop = true;
      if (print)
        std::fprintf(stderr, "tutti-tune: time budget: stopping before %s (measured up to %s)\n",
                     format_size(nominal[k]).c_str(), format_size(largest_measured).c_str());
      break;
    }
    for (size_t c = 0; c < nc; ++c) {
      if (!planned[c][k]) continue;
      const Collective coll = o.collectives[c];
      const double t0 = elapsed();
      SizeMeasurement m = measure_size(comm, MPI_COMM_WORLD, coll, nominal[k], o.measure,
                                       1000 * (k + 1) + c);
      double cost = elapsed() - t0;
      MPI_Bcast(&cost, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);  // one model on every rank
      model.record(c, k, cost);
      ++done;
      wrong += m.wrong_elements;
      if (coll != Collective::Barrier) largest_measured = std::max(largest_measured, nominal[k]);
      if (print) {
        std::string line = str("tutti-tune: [", done, "/", total_tasks, "] ",
                               collective_name(coll), " ", format_size(m.tuned.bytes), ": ");
        const auto& r = m.tuned.ranked;
        if (r.empty()) line += "nothing ran";
        else line += str(candidate_label(r[0].algorithm, r[0].params), " ", us_text(r[0].time_us));
        if (const TunedCandidate* ru = tuned_runner_up(m.tuned))
          line += str(", runner-up ", candidate_label(ru->algorithm, ru->params), " ", us_text(ru->time_us));
        line += str(" | ", clock_text(elapsed()), " elapsed, ~", clock_text(model.remaining(k, planned)),
                    " left\n");
        for (const Skipped& s : m.skipped)
          if (s.why.rfind("refused", 0) != 0) line += str("tutti-tune:   ", s.candidate, ": ", s.why, "\n");
        std::fputs(line.c_str(), stderr);
      }
      csv_rows.push_back({coll, m.count, m.tuned});
      tuned[c].sizes.push_back(std::move(m.tuned));
    }
  }

  // The file: one section for this job's shape, host memory.
  const std::string cluster = o.cluster.empty() ? default_cluster() : o.cluster;
  TuningProvenance prov{cluster, str("tutti-tune ", tutti_version(), " (", command_line, ")"),
                        utc_now(), tutti_version()};
  TuningSection shape;
  shape.name = str(p, " ranks, ", topo.nnodes, topo.nnodes == 1 ? " node" : " nodes", ", ",
                   topo.max_ranks_per_node, " per node");
  shape.ranks = {static_cast<uint64_t>(p), static_cast<uint64_t>(p) + 1};
  shape.nodes = {static_cast<uint64_t>(topo.nnodes), static_cast<uint64_t>(topo.nnodes) + 1};
  shape.ppn = {static_cast<uint64_t>(topo.max_ranks_per_node),
               static_cast<uint64_t>(topo.max_ranks_per_node) + 1};
  TuningRule base;
  base.memory = MemoryType::Host;
  const std::string preamble = str(
      "Tuning table for tutti, written by tutti-tune on ", cluster, " at ", prov.date, ".\n",
      "Measured: ", p, " ranks on ", topo.nnodes, " node(s), ", topo.max_ranks_per_node,
      " per node; ", datatype_name(o.measure.dtype), " (reductions: sum), host memory;\n",
      "sizes ", format_size(nominal.front()), " to ",
      format_size(budget_stop ? largest_measured : nominal.back()), " (x", o.step_factor,
      "), warm-up ", o.measure.warmup, ", up to ", o.measure.iters,
      " iterations per candidate in ", o.measure.repeats,
      " interleaved rounds;\neach iteration the slowest rank's time; the median of the round medians.\n",
      "Every candidate's results were checked first.\n",
      "A rule keeps its choice while that is within ", o.tolerance * 100,
      "% of the fastest (--tolerance).\n",
      budget_stop ? "The time budget ended the run before the largest size asked for.\n" : "",
      "The last rule of each collective covers every larger size.\n\n",
      "Use it with TUTTI_TUNING_FILE=", o.output, ", or install it as ~/.config/tutti/tuning.toml\n",
      "or ", TUTTI_DATADIR, "/tuning.toml. Format: docs/TUNING.md. Times are per call, in microseconds.\n",
      "Command: ", command_line);
  if (print) {
    const std::string text = write_tuning_toml(preamble, prov, shape, tuned, base, o.tolerance);
    std::ofstream out(o.output);
    out << text;
    out.close();
    if (!out) fail(TUTTI_ERR_INVALID_ARGUMENT, "cannot write '", o.output, "'");
    if (!o.csv.empty()) {
      std::ofstream csv(o.csv);
      csv << "collective,bytes,count,algorithm,chunk_bytes,time_us,runner_up,runner_up_chunk_bytes,"
             "runner_up_us,rule_algorithm,rule_chunk_bytes\n";
      std::map<Collective, std::vector<TuningRule>> rules;
      for (const TunedCollective& t : tuned) rules[t.coll] = merge_tuned(t, base, o.tolerance);
      for (const CsvRow& r : csv_rows) {
        const auto& rk = r.size.ranked;
        const TunedCandidate* ru = tuned_runner_up(r.size);
        const TuningRule* rule = tuned_rule_for(rules[r.coll], r.coll, r.size.bytes);
        csv << collective_name(r.coll) << ',' << r.size.bytes << ',' << r.count << ','
            << (rk.empty() ? "" : rk[0].algorithm) << ','
            << (rk.empty() ? 0 : rk[0].params.chunk_bytes) << ','
            << (rk.empty() ? 0.0 : rk[0].time_us) << ',' << (ru ? ru->algorithm : "") << ','
            << (ru ? ru->params.chunk_bytes : 0) << ',' << (ru ? ru->time_us : 0.0) << ','
            << (rule ? rule->algorithm : "") << ',' << (rule ? rule->params.chunk_bytes : 0) << '\n';
      }
      if (!csv) fail(TUTTI_ERR_INVALID_ARGUMENT, "cannot write '", o.csv, "'");
    }
    std::fprintf(stderr, "tutti-tune: %zu measurements in %s; wrote %s\n", done,
                 clock_text(elapsed()).c_str(), o.output.c_str());
    // The resulting table, on stdout.
    for (const TunedCollective& t : tuned)
      for (const TuningRule& r : merge_tuned(t, base, o.tolerance))
        std::printf("%s\n", rule_to_string(r).c_str());
    if (wrong)
      std::fprintf(stderr, "tutti-tune: WRONG RESULTS: %ld elements in total (see above); those "
                           "candidates were left out\n", wrong);
  }
  return wrong ? 1 : 0;
}

}  // namespace
}  // namespace tutti::apps

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  std::string command_line = "tutti-tune";
  for (int i = 1; i < argc; ++i) command_line += std::string(" ") + argv[i];
  command_line += tutti::str(", ", nranks, " ranks");
  int rc = 0;
  try {
    const tutti::apps::TuneOptions options = tutti::apps::parse_options(argc, argv, rank == 0);
    if (!options.calibrate.empty()) {
      rc = tutti::apps::calibrate(options.calibrate, command_line);
    } else {
      tutti::Comm comm(MPI_COMM_WORLD);
      rc = tutti::apps::run(comm, options, command_line);
    }
  } catch (const tutti::Error& e) {
    if (rank == 0) std::fprintf(stderr, "tutti-tune: %s\n", e.what());
    rc = 2;
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
