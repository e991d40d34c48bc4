// tutti-info: what this tutti is (version, build, transports, reducer), what
// it can run (every algorithm per collective), and which algorithm a given
// call would get and why (--explain). Runs with or without mpirun.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "algos/registry.hpp"
#include "base/status.hpp"
#include "cli.hpp"
#include "host/reduce.hpp"
#include "node/node_memory.hpp"
#include "tuning/config.hpp"
#include "tuning/dispatch.hpp"
#include "tuning/file.hpp"
#include "tuning/model_choice.hpp"
#include "tutti/tutti.h"
#include "tutti_config.h"
#if TUTTI_HAVE_UCX
#include "transport/ucx.hpp"
#endif
#if TUTTI_HAVE_CUDA
#include "cuda/ipc_protocol.hpp"
#include "cuda/runtime.hpp"
#endif

namespace tutti::apps {
namespace {

constexpr const char* kUsage = R"(usage: tutti-info [--explain COLLECTIVE BYTES [RANKS]] [options]

  (no arguments)          version, build configuration, transports, algorithms
  --explain COLL BYTES [RANKS]
                          which algorithm a call of BYTES (the nccl-tests size:
                          the largest buffer of one rank) would get, every
                          candidate that refused it and why, and the final choice
    --ranks N             rank count (default: 3rd positional, else this job's)
    --nodes M             node count                                        [1]
    --memory host|cuda    buffer memory type                                [host]
    --dtype NAME          datatype                                          [float32]
    --cores shared|own    whether ranks outnumber a node's CPUs             [own]
    --reads fast|slow     whether a peer read beats the shared segment
                          (measured at tutti_comm_create; TUTTI_READS)      [TUTTI_READS, else fast]
)";

#if TUTTI_HAVE_UCX
// The memory types UCX moves on this machine (as the UCX transport sees
// them at tutti_comm_create), from a context of our own.
std::string ucx_memory_types() {
  ucp_config_t* config = nullptr;
  if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) return "unknown (ucp_config_read failed)";
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  ucp_context_h context = nullptr;
  const ucs_status_t s = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (s != UCS_OK) return str("unknown (ucp_init: ", ucs_status_string(s), ")");
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  std::string types = "unknown";
  if (ucp_context_query(context, &attr) == UCS_OK) {
    const bool cuda = attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA);
    types = str("host", cuda ? ", cuda" : "",
                attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED) ? ", cuda-managed" : "",
                cuda ? " (device buffers go to UCX directly)"
                     : " (no CUDA support: device buffers are staged through pinned host memory)");
  }
  ucp_cleanup(context);
  return types;
}
#endif

void print_build() {
  std::printf("tutti %s\n", tutti_version());
  char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(mpi_version, &len);
  std::string mpi(mpi_version, static_cast<size_t>(len));
  if (const size_t nl = mpi.find_first_of(",\n"); nl != std::string::npos) mpi.resize(nl);
  std::printf("  MPI library:        %s\n", mpi.c_str());
#if TUTTI_HAVE_UCX
  std::printf("  UCX:                built with %d.%d, running %s\n", UCP_API_MAJOR, UCP_API_MINOR,
              UcxTransport::version().c_str());
  std::printf("  transports:         ucx (default), mpi, sim (tests)\n");
#else
  std::printf("  UCX:                not built\n");
  std::printf("  transports:         mpi (default), sim (tests)\n");
#endif
  std::printf("  CUDA:               %s\n", TUTTI_HAVE_CUDA ? "built (sm_80, sm_90, compute_90 PTX)" : "not built");
#if TUTTI_HAVE_CUDA
  std::fputs(cuda::runtime_report().c_str(), stdout);
  if (const char* staging = std::getenv("TUTTI_CUDA_STAGING"))
    std::printf("  TUTTI_CUDA_STAGING: %s\n", staging);
  const std::optional<bool> ipc = cuda::ipc_wanted_from_text(std::getenv("TUTTI_CUDA_IPC"));
  std::printf("  CUDA IPC:           %s\n",
              !ipc  ? "TUTTI_CUDA_IPC is not 0 or 1: tutti_comm_create fails"
              : *ipc ? "on where every rank sets TUTTI_CUDA_IPC=1 (staged device messages of "
                       "64 KiB-1 GiB inside a node)"
                     : "off (TUTTI_CUDA_IPC=1 turns it on; its fixes of 2026-11-28 not yet run on a GPU)");
#endif
#if TUTTI_HAVE_UCX
  std::printf("  UCX memory types:   %s\n", ucx_memory_types().c_str());
#endif
  std::printf("  tuning files (TOML): %s\n", TUTTI_HAVE_TOML ? "supported" : "not built");
  std::printf("  host reducer:       %s\n", std::string(host_reduce_isa()).c_str());
  const Config cfg = Config::from_environment(TUTTI_HAVE_UCX);
  const auto file = find_tuning_file(cfg.tuning_file);
  std::printf("  tuning file:        %s\n",
              file ? str(file->path, " (via ", file->how, ")").c_str()
                   : "none (TUTTI_TUNING_FILE, ~/.config/tutti/tuning.toml, " TUTTI_DATADIR
                     "/tuning.toml)");
  if (!cfg.tune.empty()) std::printf("  TUTTI_TUNE:         %s\n", cfg.tune.c_str());
}

void print_algorithms() {
  std::printf("\nalgorithms (TUTTI_ALGO_<COLLECTIVE>=name forces one; [the parameters a tuning rule may set]):\n");
  for (Collective c : kAllCollectives) {
    std::printf("  %s\n", std::string(collective_name(c)).c_str());
    for (const algos::Algorithm* a : algos::algorithms_for(c)) {
      std::string params;  // what a tuning rule may set for it
      for (std::string_view p : kTuningParams)
        if (algorithm_uses_param(*a, p)) params += str(params.empty() ? "" : ",", p);
      std::printf("    %-20s %-13s %s\n", std::string(a->name).c_str(),
                  params.empty() ? "" : ("[" + params + "]").c_str(), std::string(a->summary).c_str());
    }
  }
  std::printf("\nbuilt-in tuning rules (first match wins; later matches are fallbacks):\n");
  // With their filters: the one-node rules (nodes=1) differ from the
  // general ones only there.
  for (const TuningRule& r : builtin_tuning().rules()) std::printf("  %s\n", rule_to_string(r).c_str());
}

struct ExplainRequest {
  Collective coll = Collective::Allreduce;
  uint64_t bytes = 0;
  int ranks = 0, nodes = 1;
  MemoryType memory = MemoryType::Host;
  Datatype dtype = Datatype::Float32;
  bool shared_cores = false;
  std::optional<bool> fast_reads;
};

int explain(const ExplainRequest& q) {
  const Config cfg = Config::from_environment(TUTTI_HAVE_UCX);
  Topology topo = Topology::single_node(q.ranks);
  topo.nnodes = q.nodes;
  topo.shared_cores = q.shared_cores;
  topo.max_ranks_per_node = (q.ranks + q.nodes - 1) / q.nodes;
  for (int r = 0; r < q.ranks; ++r) topo.node_of_rank[r] = r * q.nodes / q.ranks;
  topo.index_nodes();
  // The same loading as tutti_comm_create, for this job shape.
  UserTuning tuning =
      load_user_tuning(cfg.tune, cfg.tuning_file, cfg.tuning_strict, JobShape::of(topo));
  const std::string tuning_text = tuning.describe();
  for (const std::string& w : tuning.warnings) std::printf("warning:    %s\n", w.c_str());
  const model::Machine machine =
      cfg.machine_file.empty() ? model::Machine{} : model::load_machine(cfg.machine_file);
  Dispatcher dispatcher(std::move(tuning.table), topo, machine);
  // Every node of several ranks gets a shared segment of this size (as
  // tutti_comm_create allocates them on nodes of this size), so the
  // algorithms that use it are candidates.
  if (topo.max_ranks_per_node > 1)
    dispatcher.set_shared_bytes(cfg.shm_bytes < 0 ? default_node_memory_bytes(topo.max_ranks_per_node)
                                                  : static_cast<size_t>(cfg.shm_bytes));
  // Cross-memory attach, as tutti_comm_create's probe finds it where the
  // kernel allows a user's processes to read each other (TUTTI_CMA=0: off).
  if (topo.max_ranks_per_node > 1) dispatcher.set_peer_reads(cfg.cma);
  // Whether those reads beat the segment: measured at creation, so here
  // what the caller says, else TUTTI_READS, else fast (the rules' default).
  const bool fast_reads = q.fast_reads.value_or(cfg.fast_reads.value_or(true));
  dispatcher.set_fast_reads(fast_reads);

  CollArgs a;
  a.coll = q.coll;
  a.dtype = q.dtype;
  a.memory = q.memory;
  a.count = count_for_message_bytes(q.coll, q.bytes, q.dtype, q.ranks);
  // A blocking call: alltoallv may exchange its node's counts (Comm::plan_for).
  a.node_counts_exchangeable = q.coll == Collective::Alltoallv && q.memory == MemoryType::Host;
  // alltoallv across nodes: a loop of calls of this size on every rank
  // agrees on it (base/agreed_size.hpp); elsewhere its rules see size 0.
  if (a.node_counts_exchangeable && q.nodes > 1) a.agreed_bytes = q.bytes;
  const std::string forced = cfg.forced[static_cast<int>(q.coll)];
  std::printf("%s of %llu bytes (count %zu %s) on %d ranks, %d node(s), %s memory\n",
              std::string(collective_name(q.coll)).c_str(),
              static_cast<unsigned long long>(q.bytes), a.count,
              std::string(datatype_name(q.dtype)).c_str(), q.ranks, q.nodes,
              std::string(memory_type_name(q.memory)).c_str());
  std::printf("tuning:     %s\n", tuning_text.c_str());
  std::printf("candidates: %s\n", algos::algorithm_names(q.coll).c_str());
  if (!forced.empty())
    std::printf("forced:     %s by %s\n", forced.c_str(), algo_env_name(q.coll).c_str());
  // The rules this call matches, in the order the dispatcher tries them.
  const uint64_t bytes = q.coll == Collective::Barrier     ? 0
                         : q.coll == Collective::Alltoallv ? a.agreed_bytes
                                                           : message_bytes(a, q.ranks);
  const CallShape shape{q.coll,   bytes,   q.ranks,         q.nodes,
                        q.memory, q.dtype, q.shared_cores, fast_reads};
  int matched = 0;
  for (const TuningTable* table : {&dispatcher.user_table(), &builtin_tuning()})
    for (const TuningRule* r : table->matches(shape))
      std::printf("%s %-28s %s\n", matched++ ? "           " : "rules:     ", r->origin.c_str(),
                  rule_to_string(*r).c_str());
  if (!matched) std::printf("rules:      none match\n");
  const Decision d = dispatcher.select(a, forced, "forced by " + algo_env_name(q.coll));
  if (d.model) {
    // The cost model's predictions behind a choice on a job shape the
    // built-in rules were not measured on (tuning/model_choice.hpp).
    std::printf("model:      machine %s; predicted at count %zu\n",
                cfg.machine_file.empty() ? "built-in" : cfg.machine_file.c_str(),
                d.model->class_count);
    for (const ModelEstimate& e : d.model->estimates) {
      if (e.error.empty())
        std::printf("            %-20s %12.1f us\n", std::string(e.algorithm->name).c_str(), e.us);
      else
        std::printf("            %-20s %12s    (%s)\n", std::string(e.algorithm->name).c_str(), "-",
                    e.error.c_str());
    }
  } else if (model_decides(a, topo)) {
    std::printf("model:      not asked (decided before it: forced, or a rule of your table)\n");
  } else {
    std::printf("model:      not asked (%s)\n",
                q.memory != MemoryType::Host   ? "device buffers: the model knows host costs only"
                : q.coll == Collective::Alltoallv ? "alltoallv counts differ per call"
                : "the built-in rules were measured on this job shape");
  }
  for (const Decision::Refused& r : d.refused)
    std::printf("refused:    %-20s (%s): %s\n", r.algorithm.c_str(), r.origin.c_str(), r.why.c_str());
  std::printf("chosen:     %s (%s)%s\n", std::string(d.algorithm->name).c_str(), d.reason.c_str(),
              d.algorithm->is_mpi() ? " -- the MPI library's own collective" : "");
  return 0;
}

int main_impl(int argc, char** argv, int job_ranks) {
  if (argc == 1) {
    print_build();
    print_algorithms();
    return 0;
  }
  ExplainRequest q;
  bool have_explain = false;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(TUTTI_ERR_INVALID_ARGUMENT, arg, " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--explain") {
      have_explain = true;
    } else if (arg == "--ranks") {
      q.ranks = static_cast<int>(parse_int(value(), arg, 1, 1 << 23));
    } else if (arg == "--nodes") {
      q.nodes = static_cast<int>(parse_int(value(), arg, 1, 1 << 23));
    } else if (arg == "--memory") {
      const std::string v = value();
      const auto m = parse_memory_type(v);
      if (!m) fail(TUTTI_ERR_INVALID_ARGUMENT, "--memory: expected host or cuda, got '", v, "'");
      q.memory = *m;
    } else if (arg == "--dtype") {
      const std::string v = value();
      const auto dt = parse_datatype(v);
      if (!dt) fail(TUTTI_ERR_INVALID_ARGUMENT, "--dtype: unknown datatype '", v, "'");
      q.dtype = *dt;
    } else if (arg == "--cores") {
      const std::string v = value();
      const auto c = parse_cores(v);
      if (!c) fail(TUTTI_ERR_INVALID_ARGUMENT, "--cores: expected shared or own, got '", v, "'");
      q.shared_cores = *c;
    } else if (arg == "--reads") {
      const std::string v = value();
      const auto f = parse_reads(v);
      if (!f) fail(TUTTI_ERR_INVALID_ARGUMENT, "--reads: expected fast or slow, got '", v, "'");
      q.fast_reads = *f;
    } else if (have_explain && positional == 0) {
      const auto c = parse_collective(arg);
      if (!c) fail(TUTTI_ERR_INVALID_ARGUMENT, "--explain: unknown collective '", arg, "'");
      q.coll = *c;
      ++positional;
    } else if (have_explain && positional == 1) {
      q.bytes = parse_bytes(arg, "--explain BYTES");
      ++positional;
    } else if (have_explain && positional == 2) {
      q.ranks = static_cast<int>(parse_int(arg, "--explain RANKS", 1, 1 << 23));
      ++positional;
    } else {
      fail(TUTTI_ERR_INVALID_ARGUMENT, "unexpected argument '", arg, "' (see --help)");
    }
  }
  if (!have_explain || positional < 2)
    fail(TUTTI_ERR_INVALID_ARGUMENT, "usage: tutti-info --explain COLLECTIVE BYTES [RANKS]");
  if (q.ranks == 0) q.ranks = job_ranks;
  if (q.nodes > q.ranks) fail(TUTTI_ERR_INVALID_ARGUMENT, "--nodes exceeds the rank count");
  return explain(q);
}

}  // namespace
}  // namespace tutti::apps

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int rc = 0;
  if (rank == 0) {
    try {
      rc = tutti::apps::main_impl(argc, argv, nranks);
    } catch (const tutti::Error& e) {
      std::fprintf(stderr, "tutti-info: %s\n", e.what());
      rc = 2;
    }
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
