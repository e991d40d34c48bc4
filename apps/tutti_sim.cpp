// tutti-sim: predicted times of every algorithm of every collective, for
// rank counts and message sizes beyond this machine, from the cost model
// (model/predict.hpp), and which one the dispatcher picks.
//
//   tutti-sim --collectives all --ranks 2,8,64,512 --ranks-per-node 8
//             --min-bytes 8 --max-bytes 1G [--machine FILE] [--csv]
#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "algos/registry.hpp"
#include "apps/cli.hpp"
#include "base/status.hpp"
#include "model/predict.hpp"
#include "tuning/dispatch.hpp"

using namespace tutti;

namespace {

struct Options {
  std::vector<Collective> collectives;
  std::vector<int> ranks{2, 8, 64, 512};
  int ranks_per_node = 8;
  uint64_t min_bytes = 8, max_bytes = 1 << 20, factor = 4;
  std::string machine_file;
  bool csv = false;
  bool why = false;  // say on stderr why an algorithm has no prediction
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

const char* kUsage =
    "usage: tutti-sim [--collectives all|NAME,...] [--ranks N,...] [--ranks-per-node N]\n"
    "                 [--min-bytes B] [--max-bytes B] [--factor F] [--machine FILE] [--csv] [--why]\n"
    "                 [--threads N]\n"
    "Predicted time of every algorithm (cost model: schedules run in virtual time)\n"
    "and the dispatcher's choice, per collective, rank count and message size.\n"
    "alltoallv (per-call counts) is not modelled; nor is the MPI library's own collective.\n"
    "--why: say on stderr why an algorithm has no row (refused, or too large to simulate)\n"
    "and which rows are extrapolated. --threads N: simulations at once (default: every core).\n";

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string piece = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!piece.empty()) out.push_back(piece);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  std::string collectives = "all";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(TUTTI_ERR_INVALID_ARGUMENT, a, " needs a value");
      return argv[++i];
    };
    if (a == "--collectives") collectives = value();
    else if (a == "--ranks") {
      o.ranks.clear();
      for (const std::string& r : split(value()))
        o.ranks.push_back(static_cast<int>(apps::parse_int(r, "--ranks", 1, 1 << 20)));
    } else if (a == "--ranks-per-node")
      o.ranks_per_node = static_cast<int>(apps::parse_int(value(), a, 1, 1 << 20));
    else if (a == "--min-bytes") o.min_bytes = apps::parse_bytes(value(), a);
    else if (a == "--max-bytes") o.max_bytes = apps::parse_bytes(value(), a);
    else if (a == "--factor") o.factor = static_cast<uint64_t>(apps::parse_int(value(), a, 2, 1024));
    else if (a == "--machine") o.machine_file = value();
    else if (a == "--csv") o.csv = true;
    else if (a == "--why") o.why = true;
    else if (a == "--threads") o.threads = static_cast<int>(apps::parse_int(value(), a, 1, 1024));
    else if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else
      fail(TUTTI_ERR_INVALID_ARGUMENT, "unknown option '", a, "'\n", kUsage);
  }
  if (o.ranks.empty()) fail(TUTTI_ERR_INVALID_ARGUMENT, "--ranks: no rank count given");
  if (o.min_bytes == 0 || o.min_bytes > o.max_bytes)
    fail(TUTTI_ERR_INVALID_ARGUMENT, "need 0 < --min-bytes <= --max-bytes");
  for (const std::string& name : collectives == "all" ? std::vector<std::string>{} : split(collectives)) {
    const std::optional<Collective> c = parse_collective(name);
    if (!c) fail(TUTTI_ERR_INVALID_ARGUMENT, "--collectives: unknown collective '", name, "'");
    o.collectives.push_back(*c);
  }
  if (collectives == "all")
    for (Collective c : kAllCollectives)
      if (c != Collective::Alltoallv) o.collectives.push_back(c);
  return o;
}

void appendf(std::string& out, const char* format, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string& out, const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (n > 0) {
    const size_t at = out.size();
    out.resize(at + static_cast<size_t>(n) + 1);
    std::vsnprintf(out.data() + at, static_cast<size_t>(n) + 1, format, again);
    out.resize(at + static_cast<size_t>(n));
  }
  va_end(again);
}

struct Row {
  std::string algorithm;
  std::optional<double> us;  // none: not modelled (mpi)
  bool chosen = false;
};

// One (collective, rank count) of the grid, shared by its sizes' tasks.
struct Shape {
  Shape(Collective c, int nranks, int ranks_per_node, const model::Machine& machine)
      : coll(c),
        p(nranks),
        topo(model::model_topology(nranks, ranks_per_node)),
        dispatcher(TuningTable{}, topo, machine) {}
  Collective coll;
  int p;
  Topology topo;
  Dispatcher dispatcher;  // its model also predicts the rows it did not choose from
};

// The message sizes of one collective's rows.
std::vector<uint64_t> sizes_of(const Options& o, Collective coll) {
  std::vector<uint64_t> sizes;
  if (coll == Collective::Barrier)
    sizes.push_back(0);
  else
    for (uint64_t b = o.min_bytes; b <= o.max_bytes; b *= o.factor) sizes.push_back(b);
  return sizes;
}

// One point of the grid: its rows as text, and on `why` the reasons for
// missing rows (--why).
std::string simulate(const Options& o, Shape& shape, uint64_t bytes, std::string& why) {
  std::string out;
  const Collective coll = shape.coll;
  const int p = shape.p;
  const Topology& topo = shape.topo;
  CollArgs args{.coll = coll, .dtype = Datatype::Float32, .op = Op::Sum};
  args.count = count_for_message_bytes(coll, bytes, args.dtype, p);
  if (coll != Collective::Barrier && args.count == 0) return out;
  const Decision d = shape.dispatcher.select(args, "", "");
  std::vector<Row> rows;
  // Where the dispatcher asked the model at this very count, its
  // predictions are the ones to print (and cost nothing again).
  const bool reuse = d.model && d.model->class_count == args.count;
  for (const algos::Algorithm* a : algos::algorithms_for(coll)) {
    const bool chosen = d.algorithm == a;
    if (a->is_mpi()) {
      if (chosen) rows.push_back({std::string(a->name), std::nullopt, true});
      continue;
    }
    CollArgs with_params = args;
    if (chosen) with_params.params = d.params;
    const ModelEstimate* known = nullptr;
    if (reuse)
      for (const ModelEstimate& e : d.model->estimates)
        if (e.algorithm == a) known = &e;
    model::Prediction pr;
    if (known) {
      pr.us = known->us;
      pr.error = known->error;
      pr.extrapolated = known->extrapolated;
    } else {
      pr = shape.dispatcher.predict(*a, with_params);
    }
    if (!pr.error.empty()) {  // refused, or too large to simulate
      if (o.why)
        appendf(why, "%s %d ranks %llu B %s: %s\n", std::string(collective_name(coll)).c_str(), p,
                static_cast<unsigned long long>(bytes), std::string(a->name).c_str(),
                pr.error.c_str());
      continue;
    }
    if (o.why && pr.extrapolated)
      appendf(why, "%s %d ranks %llu B %s: extrapolated from smaller counts\n",
              std::string(collective_name(coll)).c_str(), p,
              static_cast<unsigned long long>(bytes), std::string(a->name).c_str());
    rows.push_back({std::string(a->name), pr.us, chosen});
  }
  if (o.csv) {
    for (const Row& r : rows) {
      appendf(out, "%s,%d,%d,%llu,%s,", std::string(collective_name(coll)).c_str(), p,
              topo.nnodes, static_cast<unsigned long long>(bytes), r.algorithm.c_str());
      if (r.us) appendf(out, "%.3f", *r.us);
      appendf(out, ",%d\n", r.chosen ? 1 : 0);
    }
    return out;
  }
  const Row* best = nullptr;
  const Row* chosen = nullptr;
  for (const Row& r : rows) {
    if (r.us && (!best || *r.us < *best->us)) best = &r;
    if (r.chosen) chosen = &r;
  }
  if (!best) return out;
  appendf(out, "%-15s %6d %5d %9s  %-24s %12.2f  %-24s ",
          std::string(collective_name(coll)).c_str(), p, topo.nnodes,
          apps::human_bytes(bytes).c_str(), best->algorithm.c_str(), *best->us,
          chosen ? chosen->algorithm.c_str() : "(not modelled)");
  if (chosen && chosen->us)
    appendf(out, "%12.2f %6.2f\n", *chosen->us, *chosen->us / *best->us);
  else
    appendf(out, "%12s %6s\n", "-", "-");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    const model::Machine machine =
        o.machine_file.empty() ? model::Machine{} : model::load_machine(o.machine_file);
    if (o.csv) std::printf("collective,ranks,nodes,bytes,algorithm,predicted_us,chosen\n");
    else
      std::printf("%-15s %6s %5s %9s  %-24s %12s  %-24s %12s %6s\n", "collective", "ranks",
                  "nodes", "bytes", "best (model)", "us", "chosen (dispatcher)", "us", "ratio");
    // Every point of the grid is independent: run them on every core
    // (points of one shape share its dispatcher's predictions), print in
    // order. The largest shapes go first, so that no core is left with one
    // long shape at the end.
    struct Task {
      Shape* shape;
      uint64_t bytes;
      std::string out, why;
    };
    std::vector<std::unique_ptr<Shape>> shapes;
    std::vector<Task> tasks;
    for (Collective coll : o.collectives)
      for (int p : o.ranks) {
        shapes.push_back(std::make_unique<Shape>(coll, p, o.ranks_per_node, machine));
        for (uint64_t bytes : sizes_of(o, coll)) tasks.push_back({shapes.back().get(), bytes, {}, {}});
      }
    std::vector<size_t> order(tasks.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return tasks[a].shape->p > tasks[b].shape->p;
    });
    std::atomic<size_t> next{0};
    std::vector<std::string> errors(tasks.size());
    auto worker = [&] {
      for (size_t n; (n = next++) < tasks.size();) {
        const size_t i = order[n];
        try {
          tasks[i].out = simulate(o, *tasks[i].shape, tasks[i].bytes, tasks[i].why);
        } catch (const Error& e) {
          errors[i] = e.what();
        }
      }
    };
    std::vector<std::thread> threads;
    const int nthreads = std::max(1, std::min<int>(o.threads, static_cast<int>(tasks.size())));
    for (int t = 1; t < nthreads; ++t) threads.emplace_back(worker);
    worker();
    for (std::thread& t : threads) t.join();
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (!errors[i].empty()) throw Error(TUTTI_ERR_INTERNAL, errors[i]);
      std::fputs(tasks[i].why.c_str(), stderr);
      std::fputs(tasks[i].out.c_str(), stdout);
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "tutti-sim: %s\n", e.what());
    return 1;
  }
}
