#include "api/comm.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <thread>

#include "algos/mpi_collective.hpp"
#include "algos/node_groups.hpp"
#include "api/progress_elsewhere.hpp"
#include "base/log.hpp"
#include "node/peer_memory.hpp"
#include "node/read_probe.hpp"
#include "transport/mpi.hpp"
#include "transport/mpi_types.hpp"
#include "tuning/load.hpp"
#include "tutti_config.h"
#if TUTTI_HAVE_UCX
#include "transport/ucx.hpp"
#endif
#if TUTTI_HAVE_CUDA
#include "cuda/call_op.hpp"
#include "cuda/staging_transport.hpp"
#endif

namespace tutti {
namespace {

MPI_Comm duplicate(MPI_Comm comm) {
  MPI_Comm dup = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  return dup;
}

int comm_rank(MPI_Comm c) {
  int r = 0;
  check_mpi(MPI_Comm_rank(c, &r), "MPI_Comm_rank");
  return r;
}
int comm_size(MPI_Comm c) {
  int n = 1;
  check_mpi(MPI_Comm_size(c, &n), "MPI_Comm_size");
  return n;
}

// log2 bucket of a size, for "log once per (collective, size bucket)".
int size_bucket(size_t bytes) {
  int b = 0;
  while (bytes > 1) {
    bytes >>= 1;
    ++b;
  }
  return b;
}

using Clock = std::chrono::steady_clock;

}  // namespace

Topology discover_topology(MPI_Comm comm) {
  Topology t;
  t.nranks = comm_size(comm);
  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, comm_rank(comm), MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  // A node is named by the lowest rank on it.
  int leader = comm_rank(comm);
  int rc = MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, local);
  // The CPUs the node's ranks may run on: the union of their masks.
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) CPU_ZERO(&cpus);  // unknown: not oversubscribed
  if (rc == MPI_SUCCESS)
    rc = MPI_Allreduce(MPI_IN_PLACE, &cpus, static_cast<int>(sizeof cpus), MPI_BYTE, MPI_BOR, local);
  const int local_ranks = comm_size(local);
  MPI_Comm_free(&local);
  check_mpi(rc, "MPI_Allreduce (node leader, CPUs)");
  const int node_cpus = CPU_COUNT(&cpus);
  t.oversubscribed = node_cpus > 0 && local_ranks > node_cpus;
  // Every rank's node leader and whether its node is oversubscribed, in one
  // exchange: shared_cores must be the same on every rank.
  const int mine[2] = {leader, t.oversubscribed ? 1 : 0};
  std::vector<int> gathered(2 * static_cast<size_t>(t.nranks));
  check_mpi(MPI_Allgather(mine, 2, MPI_INT, gathered.data(), 2, MPI_INT, comm),
            "MPI_Allgather (node leaders, oversubscribed nodes)");
  std::vector<int> leaders(static_cast<size_t>(t.nranks));
  for (size_t r = 0; r < leaders.size(); ++r) {
    leaders[r] = gathered[2 * r];
    t.shared_cores = t.shared_cores || gathered[2 * r + 1] != 0;
  }
  std::map<int, int> node_index;
  for (int l : leaders) node_index.emplace(l, 0);
  int next = 0;
  for (auto& [l, idx] : node_index) idx = next++;
  t.nnodes = next;
  std::vector<int> per_node(static_cast<size_t>(next), 0);
  for (int l : leaders) {
    t.node_of_rank.push_back(node_index[l]);
    ++per_node[node_index[l]];
  }
  t.max_ranks_per_node = *std::max_element(per_node.begin(), per_node.end());
  t.index_nodes();
  return t;
}

Comm::Comm(MPI_Comm mpi_comm)
    : mpi_comm_(duplicate(mpi_comm)),
      rank_(comm_rank(mpi_comm_)),
      size_(comm_size(mpi_comm_)),
      config_(Config::from_environment(TUTTI_HAVE_UCX)),
      dispatcher_(make_dispatcher(mpi_comm_, config_, discover_topology(mpi_comm_))) {
  forced_ = config_.forced;
  // More ranks than CPUs on this node, or the launcher says so: a spinning
  // rank takes the CPU its peer needs to make progress, so waits yield at
  // once (unless TUTTI_SPIN says otherwise), and a long wait sleeps (unless
  // TUTTI_SLEEP_AFTER says otherwise): ranks that only yield still took up
  // to half the cores from ranks that computed (docs/PERFORMANCE.md).
  if (topology().oversubscribed || config_.launcher_yields) {
    if (!config_.spin_set) config_.spin_before_yield = 0;
    if (!config_.sleep_set) config_.sleep_after_us = Config::kSharedCoresSleepAfterUs;
  }
#if TUTTI_HAVE_UCX
  if (config_.transport == TransportKind::Ucx) {
    auto ucx =
        std::make_unique<UcxTransport>(mpi_comm_, config_.ucx_peer_errors, config_.timeout_s);
    if (config_.debug.transport && rank_ == 0) log_line(rank_, ucx->describe());
    transport_ = std::move(ucx);
  }
#endif
  if (!transport_) transport_ = std::make_unique<MpiTransport>(mpi_comm_);
#if TUTTI_HAVE_CUDA
  // Device buffers through any transport: staged where it cannot move them.
  device_scratch_ = ScratchPool(cuda::device_alloc, cuda::device_free);
  device_buffers_possible_ = cuda::available();
  // CUDA IPC inside a node (TUTTI_CUDA_IPC) is on for every rank or for none:
  // a receiver watches for offers only where senders may make them. A bad
  // value on any rank fails the creation on every rank.
  const std::optional<bool> ipc_wanted = cuda::ipc_wanted_from_text(std::getenv("TUTTI_CUDA_IPC"));
  int ipc_vote = !ipc_wanted ? -1 : *ipc_wanted && device_buffers_possible_ ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ipc_vote, 1, MPI_INT, MPI_MIN, mpi_comm_),
            "MPI_Allreduce (TUTTI_CUDA_IPC)");
  if (ipc_vote < 0) {
    if (!ipc_wanted)
      fail(TUTTI_ERR_INVALID_ARGUMENT, "TUTTI_CUDA_IPC='", std::getenv("TUTTI_CUDA_IPC"),
           "': expected 0 or 1");
    fail(TUTTI_ERR_INVALID_ARGUMENT, "TUTTI_CUDA_IPC on another rank is not 0 or 1");
  }
  if (device_buffers_possible_) {
    cuda::IpcSetup ipc;
    ipc.enabled = ipc_vote == 1;
    ipc.log_refusal = config_.debug.any();
    const std::vector<int>& node_of = topology().node_of_rank;
    for (int r = 0; r < size_; ++r)
      ipc.same_node.push_back(node_of.empty() || node_of[static_cast<size_t>(r)] ==
                                                     node_of[static_cast<size_t>(rank_)]);
    auto staging = std::make_unique<cuda::StagingTransport>(
        std::move(transport_), cuda::staging_mode_from_env(), std::move(ipc));
    staging_ = staging.get();
    if (config_.debug.transport && rank_ == 0) log_line(rank_, str("CUDA: ", staging->describe_mode()));
    transport_ = std::move(staging);
  }
#endif
  if (config_.check) signature_check_ = std::make_unique<SignatureCheck>(mpi_comm_);
  abort_channel_ = std::make_unique<AbortChannel>(*transport_);
  if (!config_.trace_prefix.empty()) {
    int world_rank = 0;
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank), "MPI_Comm_rank");
    recorder_ = std::make_unique<FlightRecorder>(config_.trace_prefix, world_rank, rank_, size_);
  }
  if (size_ > 1 && topology().max_ranks_per_node > 1) allocate_node_memory();
  if (config_.debug.any() && rank_ == 0)
    log_line(rank_, str("communicator of ", size_, " ranks on ", topology().nnodes,
                        " node(s), transport ", transport_->name(), ", shared segment ",
                        topology().shared_bytes, " bytes, ", signal_groups(), " signal groups"));
  progress_elsewhere::add(this);  // last: a constructor that throws adds nothing
}

// The shared segment of this rank's node, over the communicator's ranks on
// it. Collective over the communicator: in a job across nodes every node
// allocates its own, all of one size (the smallest any node asks for), or
// none at all where one node with several ranks could not get one, since
// algorithms size their chunks by it and the messages between nodes must
// match. A node of one rank needs no segment and does not limit the size.
void Comm::allocate_node_memory() {
  if (topology().nnodes == 1) {
    const size_t bytes = config_.shm_bytes < 0 ? default_node_memory_bytes(size_)
                                               : static_cast<size_t>(config_.shm_bytes);
    node_memory_ = NodeMemory::allocate(mpi_comm_, bytes, ranks_wait_for_cores());
    if (node_memory_) node_memory_->port().slot_writes().force(config_.shm_stream);
    dispatcher_.set_shared_bytes(node_memory_ ? node_memory_->segment().data_bytes() : 0);
    // The single-copy algorithms synchronise through the segment's flags.
    // Every rank got a segment or none (NodeMemory::allocate agrees).
    if (node_memory_ && probe_peer_reads(mpi_comm_, config_.cma)) {
      dispatcher_.set_peer_reads(true);
      dispatcher_.set_fast_reads(settle_fast_reads(mpi_comm_));
    }
    if (node_memory_) {  // on only where every rank asked (else their calls would differ)
      int follow = static_cast<int>(config_.follow_state);
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, &follow, 1, MPI_INT, MPI_MIN, mpi_comm_),
                "MPI_Allreduce (TUTTI_FOLLOW_STATE)");
      follow_state_ = static_cast<Config::FollowState>(follow);
    }
    return;
  }
  MPI_Comm node_comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(mpi_comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm),
            "MPI_Comm_split_type (shared segment)");
  const int node_ranks = comm_size(node_comm);
  constexpr unsigned long long kNoLimit = ~0ull;
  unsigned long long bytes = config_.shm_bytes < 0 ? default_node_memory_bytes(node_ranks)
                                                   : static_cast<unsigned long long>(config_.shm_bytes);
  if (node_ranks == 1) bytes = kNoLimit;
  int rc = MPI_Allreduce(MPI_IN_PLACE, &bytes, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, mpi_comm_);
  if (rc == MPI_SUCCESS && node_ranks > 1) {
    try {
      node_memory_ = NodeMemory::allocate(node_comm, static_cast<size_t>(bytes), ranks_wait_for_cores());
    } catch (...) {
      MPI_Comm_free(&node_comm);
      throw;
    }
  }
  // The single-copy steps inside a node (the node-aware *_cma algorithms)
  // synchronise through the segment's flags; a node of one rank reads
  // nobody. Every rank of a node got a segment or none (allocate agrees).
  int reads = 1, fast_reads = 1;
  if (rc == MPI_SUCCESS && node_memory_) {
    try {
      reads = probe_peer_reads(node_comm, config_.cma) ? 1 : 0;
      if (reads) fast_reads = settle_fast_reads(node_comm) ? 1 : 0;
    } catch (...) {
      MPI_Comm_free(&node_comm);
      throw;
    }
  }
  MPI_Comm_free(&node_comm);
  check_mpi(rc, "MPI_Allreduce (shared segment size)");
  // Reads count as fast only where every node found them so.
  int agreed[3] = {node_ranks == 1 || node_memory_ ? 1 : 0, reads, fast_reads};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, agreed, 3, MPI_INT, MPI_MIN, mpi_comm_),
            "MPI_Allreduce (shared segments)");
  const bool ok = agreed[0] == 1;
  if (!ok) node_memory_.reset();  // collective on this node: its ranks agree
  dispatcher_.set_peer_reads(ok && agreed[1] == 1);
  dispatcher_.set_fast_reads(agreed[2] == 1);
  if (node_memory_) {
    node_memory_->port().slot_writes().force(config_.shm_stream);
    node_memory_->port().use_rank_index(topology().nodes->local_of_rank);
  }
  dispatcher_.set_shared_bytes(ok && bytes != kNoLimit ? static_cast<size_t>(bytes) : 0);
}

// Whether a peer read beats the segment on this node (node/read_probe.hpp),
// collective over `node_comm`, whose ranks have this node's segment and may
// read each other's memory.
bool Comm::settle_fast_reads(MPI_Comm node_comm) {
  SharedSegment& segment = node_memory_->segment();
  char* area = segment.data_bytes() >= kReadProbeAreaBytes ? segment.data() : nullptr;
  const ReadVerdict v = agree_fast_reads(node_comm, area, config_.fast_reads,
                                         topology().shared_cores, config_.timeout_s);
  if (config_.debug.any() && rank_ == 0)
    log_line(rank_, str("peer reads: ", v.fast ? "fast" : "slow", " (", v.why, ")"));
  return v.fast;
}

Comm::~Comm() {
  progress_elsewhere::remove(this);
  // Fallbacks are never silent: TUTTI_DEBUG reports them with the rest.
  if (config_.debug.any() && rank_ == 0)
    log_line(rank_, str("stats: ", stats_.collectives, " collectives, ", stats_.mpi_fallbacks,
                        " ran mpi, ", stats_.refused_fallbacks, " fell back after a refusal, ",
                        stats_.schedule_builds, " schedules built, ", stats_.schedule_cache_hits,
                        " reused"));
  // Operations still in flight are the caller's error; let them go first.
  for (auto& op : shm_waiting_) op->cancel(TUTTI_ERR_INVALID_ARGUMENT, "communicator destroyed");
  shm_waiting_.clear();
  for (auto& op : active_) op->cancel(TUTTI_ERR_INVALID_ARGUMENT, "communicator destroyed");
  checked_waiting_.clear();  // cancelled above: their agreements were let go
  for (int spins = 0; !active_.empty() && spins < 100000; ++spins) progress();
  active_.clear();
#if TUTTI_HAVE_CUDA
  if (config_.debug.any() && staging_ && rank_ == 0) {
    const auto& ipc = staging_->ipc_counts();
    log_line(rank_, str("CUDA IPC: ", ipc.offered, " messages sent as offers, ", ipc.copied,
                        " received as offers, ", ipc.not_exported,
                        " device sends not exportable (staged), ", ipc.refused,
                        " offers refused (staged)"));
  }
#endif
  abort_channel_.reset();  // its receive is posted on the transport
  transport_.reset();
  // A collective of the MPI library left in flight by a timeout still runs
  // on the duplicate: it stays to MPI_Finalize.
  if (mpi_comm_ != MPI_COMM_NULL && !*mpi_comm_in_use_) MPI_Comm_free(&mpi_comm_);
}

size_t Comm::CallKeyHash::operator()(const CallKey& k) const {
  size_t h = std::hash<size_t>{}(k.count);
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(static_cast<size_t>(k.coll) << 24 | static_cast<size_t>(k.dtype) << 16 |
      static_cast<size_t>(k.op) << 8 | static_cast<size_t>(k.in_place) << 1 |
      static_cast<size_t>(k.memory));
  mix(static_cast<size_t>(k.root));
  mix(static_cast<size_t>(k.variant));
  return h;
}

const Comm::Plan& Comm::plan_for(const CollArgs& args, bool blocking, int variant) {
  // On one node there is nothing to hand on, and no counts to exchange.
  auto needs_node_counts = [this](const algos::Algorithm* algo) {
    return algo->needs_node_counts && dispatcher_.topology().nnodes > 1;
  };
  // `node_counts`: alltoallv's counts of this rank's node, where exchanged.
  auto make = [&](Plan& plan, const CollArgs& args, std::span<const size_t> node_counts = {}) {
    Decision d = explain(args);
    if (config_.debug.decisions && rank_ == 0 && variant == 0) log_decision(args, d);
    plan.has_alternative = d.alternative != nullptr;
    if (variant == 1 && d.alternative) {
      d.algorithm = d.alternative;
      d.params = d.alternative_params;
    }
    plan.algorithm = d.algorithm;
    plan.params = d.params;
    plan.fell_back = d.fell_back();
    plan.schedule = nullptr;
    if (!d.algorithm->is_mpi()) {
      CollArgs with_params = args;
      with_params.params = d.params;
      if (needs_node_counts(d.algorithm) && node_counts.empty())
        node_counts = exchange_node_counts(args);
      with_params.node_send_counts = node_counts;
      ScheduleBuilder b(with_params, rank_, dispatcher_.topology());
      d.algorithm->build(b);
      ++stats_.schedule_builds;
      plan.schedule = std::make_shared<const Schedule>(b.finish());
      plan.direct = node_memory_ && d.algorithm->runs_directly(with_params, *plan.schedule, size_);
      if (plan.direct)
        direct_scratch_.resize(std::max(direct_scratch_.size(),
                                        kDirectScratchPerRank * static_cast<size_t>(size_)));
    }
  };
  const CallKey key{args.coll,    args.count,     args.dtype, args.op,
                    args.root,    args.in_place,  args.memory, variant};
  // alltoallv: its schedule depends on the counts and displacements, which
  // differ between ranks and calls, so only the last plan is kept, with
  // them, and replayed while calls repeat them (a loop of exchanges of one
  // shape). Built on every call it cost about 2 us: 8 B on 2 ranks took
  // 2.3-2.6 us against Open MPI's 0.58 (2026-11-28).
  // A plan built on the counts of the whole node (Algorithm::
  // needs_node_counts) holds while they stay the same: every call exchanges
  // them, exactly once on every rank of the node (in make where the plan is
  // new).
  if (args.coll == Collective::Alltoallv) {
    AlltoallvPlan& last = last_alltoallv_;
    CollArgs a = args;
    a.node_counts_exchangeable =
        blocking && args.memory == MemoryType::Host && dispatcher_.topology().nnodes > 1;
    bool reuse = last.plan.algorithm && last.key == key &&
                 last.node_counts_exchangeable == a.node_counts_exchangeable &&
                 last.agreed_bytes == a.agreed_bytes && last.same_layout(a);
    std::span<const size_t> node_counts;
    if (reuse && needs_node_counts(last.plan.algorithm)) {
      node_counts = exchange_node_counts(a);
      reuse = std::equal(node_counts.begin(), node_counts.end(), last.node_counts.begin(),
                         last.node_counts.end());
    }
    if (!reuse) {
      Plan plan;
      make(plan, a, node_counts);  // may throw: the last plan stays as it was
      last.plan = std::move(plan);
      last.key = key;
      last.node_counts_exchangeable = a.node_counts_exchangeable;
      last.agreed_bytes = a.agreed_bytes;
      last.keep_layout(a);
      if (needs_node_counts(last.plan.algorithm))
        last.node_counts.assign(node_counts_.begin(), node_counts_.end());
      else
        last.node_counts.clear();
    } else if (last.plan.schedule) {
      ++stats_.schedule_cache_hits;
    }
    return last.plan;
  }
  // Loops mostly repeat one call: compare with the last before hashing.
  if (!last_plan_ || !(last_key_ == key)) {
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      Plan plan;
      make(plan, args);  // may throw: nothing is cached then
      constexpr size_t kMaxCachedPlans = 1024;
      if (plans_.size() >= kMaxCachedPlans) plans_.clear();
      it = plans_.emplace(key, std::move(plan)).first;
    } else if (it->second.schedule) {
      ++stats_.schedule_cache_hits;
    }
    last_key_ = key;
    last_plan_ = &it->second;  // map nodes stay put until the map is cleared
  } else if (last_plan_->schedule) {
    ++stats_.schedule_cache_hits;
  }
  return *last_plan_;
}

std::string Comm::forced_origin(Collective coll) const {
  return forced_by_api_[static_cast<int>(coll)] ? "forced by tutti_comm_force_algorithm"
                                                : "forced by " + algo_env_name(coll);
}

Decision Comm::explain(const CollArgs& args) const {
  const int c = static_cast<int>(args.coll);
  return dispatcher_.select(args, forced_[c], forced_origin(args.coll));
}

void Comm::log_decision(const CollArgs& args, const Decision& d) {
  const size_t bytes = message_bytes(args, size_);
  // alltoallv across nodes: its rules see the agreed size, which may differ
  // from this call's (base/agreed_size.hpp); a new agreed size logs again.
  const bool agreed = args.coll == Collective::Alltoallv && args.agreed_bytes > 0;
  const int agreed_bucket = agreed ? size_bucket(args.agreed_bytes) : -1;
  if (!logged_decisions_.emplace(static_cast<int>(args.coll), size_bucket(bytes), agreed_bucket).second)
    return;
  std::string line = str(collective_name(args.coll), " ", bytes, " B",
                         agreed ? str(" (agreed size ", args.agreed_bytes, " B)") : std::string(),
                         ": ", d.algorithm->name, " (", d.reason, ")");
  for (const auto& r : d.refused) line += str("; refused ", r.algorithm, " [", r.origin, "]: ", r.why);
  log_line(rank_, line);
}

Buffers Comm::host_buffers(const void* in, void* out) {
  Buffers bufs;
  bufs.input = in;
  bufs.output = out;
  if (node_memory_) bufs.shared = &node_memory_->port();
  return bufs;
}

std::shared_ptr<Operation> Comm::start_plan(const CollArgs& args, const Plan& plan,
                                            const OpLabel& label, const void* in, void* out,
                                            MemoryType mem) {
  if (plan.algorithm->is_mpi()) {
    CollArgs with_params = args;
    with_params.params = plan.params;
    return start_mpi_collective(with_params, in, out, mpi_comm_, rank_, size_, label,
                                mpi_comm_in_use_);
  }
  Buffers bufs = host_buffers(in, out);
  bufs.input_mem = bufs.output_mem = bufs.scratch_mem = mem;
#if TUTTI_HAVE_CUDA
  ScratchPool& pool = mem == MemoryType::Cuda ? device_scratch_ : scratch_;
#else
  ScratchPool& pool = scratch_;
#endif
  return std::make_shared<ScheduleOp>(label, *transport_, plan.schedule, bufs, label.seq,
                                      pool.acquire(plan.schedule->scratch_bytes));
}

bool Comm::ordered_by_cuda() const {
#if TUTTI_HAVE_CUDA
  return stream_ || !start_order_.idle();
#else
  return false;
#endif
}

const Comm::Plan& Comm::begin_call(const CollArgs& args, OpLabel& label, bool blocking,
                                   int variant, const Plan* found) {
  if (failed_) fail(TUTTI_ERR_TRANSPORT, "communicator failed earlier: ", failure_);
  const Plan& plan = found ? *found : plan_for(args, blocking, variant);
  ++stats_.collectives;
  if (plan.fell_back) ++stats_.refused_fallbacks;
  if (plan.algorithm->is_mpi()) ++stats_.mpi_fallbacks;
  last_algorithm_ = plan.algorithm->name;
  // Field by field: building a temporary OpLabel and copying it stalled on
  // store forwarding, a fifth of a one-rank call's time (perf, 2026-11-30).
  label.kind = collective_name(args.coll);
  label.algorithm = plan.algorithm->name;
  label.seq = next_seq_++;
  return plan;
}

std::shared_ptr<Operation> Comm::start_collective(const CollArgs& in_args, const void* in,
                                                  void* out, [[maybe_unused]] MemoryType in_mem,
                                                  [[maybe_unused]] MemoryType out_mem) {
  OpLabel label;
  const Plan& plan = begin_call(in_args, label);
  if (signature_check_) {
    // Copies: the call starts later, after the plan cache may have changed.
    auto start = [this, plan = Plan(plan), label, in, out, in_mem, out_mem](const CollArgs& args) {
      return launch(args, plan, label, in, out, in_mem, out_mem);
    };
    return start_checked(std::make_shared<CheckedOp>(label, in_args, std::move(start)));
  }
  return launch(in_args, plan, label, in, out, in_mem, out_mem);
}

std::shared_ptr<Operation> Comm::start_empty_collective(const CollArgs& args) {
  if (failed_) fail(TUTTI_ERR_TRANSPORT, "communicator failed earlier: ", failure_);
  if (!signature_check_) return nullptr;
  // No sequence number of its own: a blocking empty call takes none either,
  // and ranks may mix the two forms.
  const OpLabel label{collective_name(args.coll), "none", next_seq_};
  return start_checked(
      std::make_shared<CheckedOp>(label, args, [](const CollArgs&) { return nullptr; }));
}

std::shared_ptr<Operation> Comm::start_checked(std::shared_ptr<CheckedOp> op) {
  checked_waiting_.push_back(op);
  active_.push_back(op);
  start_checked_calls();  // posts its agreement now if it is first in line
  return op;
}

void Comm::start_checked_calls() {
  while (!checked_waiting_.empty()) {
    CheckedOp& front = *checked_waiting_.front();
    if (!front.finished()) {  // not cancelled
      if (!front.agreement_posted()) front.post_agreement(signature_check_->start(front.args()));
      if (!front.agreement_finished()) return;
      front.start_call();
    }
    checked_waiting_.pop_front();
  }
}

std::shared_ptr<Operation> Comm::launch(const CollArgs& in_args, const Plan& plan,
                                        const OpLabel& label, const void* in, void* out,
                                        [[maybe_unused]] MemoryType in_mem,
                                        [[maybe_unused]] MemoryType out_mem) {
  std::shared_ptr<Operation> op;
#if TUTTI_HAVE_CUDA
  if (in_args.memory == MemoryType::Cuda || ordered_by_cuda()) {
    // The MPI library gets host memory (it need not be CUDA-aware), and so do
    // schedules through the shared segment (host memory, which the engine
    // does not copy to or from the device); other schedules run where the
    // buffers are, on the device if either is. The choice depends on the
    // algorithm alone, never on this rank's memory, so that ranks whose
    // buffers differ in kind still run the same algorithm.
    const bool host_only = plan.algorithm->is_mpi() || (plan.schedule && plan.schedule->uses_shared);
    const MemoryType run_mem = host_only ? MemoryType::Host : in_args.memory;
    const cuda::CallSpec spec = cuda::collective_spec(in_args, rank_, size_, in, out, in_mem,
                                                      out_mem, run_mem, stream_);
    // Copies: the call may start later, after the plan cache has changed
    // and the caller reused its alltoallv arrays.
    auto start = [this, held = HeldArgs(in_args), plan = Plan(plan), label, run_mem](const void* i,
                                                                                     void* o) {
      return start_plan(held.get(), plan, label, i, o, run_mem);
    };
    op = std::make_shared<cuda::CallOp>(label, spec, std::move(start), scratch_, device_scratch_,
                                        start_order_);
  }
#endif
  if (!op) op = start_plan(in_args, plan, label, in, out, MemoryType::Host);
  on_started(*op, message_bytes(in_args, size_));
  if (plan.schedule && plan.schedule->uses_shared) {
    if (shm_holder_ && !shm_holder_->finished()) {
      shm_waiting_.push_back(op);  // progress() starts it when the segment is free
      return op;
    }
    shm_holder_ = op;
  }
  if (op->poll()) on_finished(*op);  // posts the first round now
  else active_.push_back(op);
  return op;
}

// How a blocked call waits between polls: it spins, then yields its core
// (another rank may need it in an oversubscribed job), asks now and then
// whether another rank aborted, and reads the clock only every 64 polls (a
// small call finishes in less time than two reads take); the timeout counts
// from the first read. With TUTTI_SLEEP_AFTER, a wait that has gone that
// long without progress sleeps between polls: a thread that only yields
// keeps being scheduled beside threads that compute. Sleeping costs at most
// one sleep's wake-up per stretch without progress (where the waiter sees
// progress: rounds, flag waits, transport events).
//
// A wait whose polls are the MPI library's (MPI_Test: its own operation,
// another in flight here or on the communicators it progresses, the MPI
// transport) never sleeps; it yields, as the MPI library's own blocking
// calls do, so that its progress keeps pace with the library's.
//
// A sleep relies on the kernel's timer to wake the thread. On the 2-vCPU
// Firecracker machines tutti is tested on, that wake-up sometimes comes a
// minute late under load (a Python loop of 1 ms sleeps beside the job: up
// to 56 s; docs/RELIABILITY.md); every rank then waits for the sleeper.
// TUTTI_SLEEP_AFTER=0 avoids it there.
class Comm::Patience {
 public:
  // What a wait polls: tutti's transport (UCX, the shared segment) or, in
  // part, the MPI library.
  enum class Polls { Tutti, Mpi };
  Patience(Comm& comm, double timeout_s, Polls polls = Polls::Tutti)
      : comm_(comm), timeout_s_(timeout_s), may_sleep_(polls == Polls::Tutti) {
    if (comm.config_.debug.calls) start_clock();
  }
  // For a wait on `op`: where its polls are the MPI library's, and the
  // launcher asked that library to yield when idle, it already yields
  // between polls. Yielding again after each: an MPI_Ialltoallv waited on
  // by MPI_Test took 1.14-1.34x the blocking call's time on 2 x 2 emulated
  // nodes, without 1.07-1.11 (docs/perf/mpi-op-polling-2026-11-29.txt).
  Patience(Comm& comm, double timeout_s, const Operation& op)
      : Patience(comm, timeout_s, op.polls_mpi() ? Polls::Mpi : Polls::Tutti) {
    yields_ = !(op.polls_mpi() && comm.config_.launcher_yields);
  }
  // After a poll; `progressed`: it found something to do. False once the
  // timeout has passed.
  bool after_poll(bool progressed) {
    if (progressed) {
      idle_ = 0;
      sleeping_ = false;
      idle_timed_ = false;
    } else if (++idle_ > comm_.config_.spin_before_yield) {
      // Idle here: do this rank's part of what is in flight on the other
      // communicators, which a peer may need before it gets to this call.
      bool elsewhere_polls_mpi = false;
      progress_elsewhere::progress_others(&comm_, &elsewhere_polls_mpi);
      if (sleeping_ && !elsewhere_polls_mpi && !comm_.progress_polls_mpi())
        std::this_thread::sleep_for(std::chrono::microseconds(kIdleSleepUs));
      else if (yields_) sched_yield();
      if ((idle_ & 63) == 0) {
        // Stuck, perhaps because another rank (or a thread here) aborted:
        // ask now and then.
        comm_.poll_aborts();
        if (may_sleep_ && comm_.config_.sleep_after_us > 0 && !sleeping_)
          start_sleeping_when_due();
      }
    }
    return timeout_s_ <= 0 || (++polls_ & 63) != 0 || !timed_out();
  }
  // The same, where `mark` counts what the waiter has seen done (rounds,
  // flag waits): it progressed if the count moved since the last poll, or
  // if `events` says so.
  bool after_poll_at(uint64_t mark, bool events = false) {
    const bool moved = mark != last_mark_;
    last_mark_ = mark;
    return after_poll(events || moved);
  }
  // With TUTTI_DEBUG=calls: how long the call has waited.
  double waited_us() const {
    return clock_started_ ? std::chrono::duration<double, std::micro>(Clock::now() - start_).count()
                          : 0;
  }

 private:
  // Short against the scheduler's slice (a few ms), long against a poll.
  static constexpr int kIdleSleepUs = 200;

  void start_sleeping_when_due() {
    const Clock::time_point now = Clock::now();
    if (!idle_timed_) {
      idle_since_ = now;
      idle_timed_ = true;
    }
    sleeping_ = std::chrono::duration<double, std::micro>(now - idle_since_).count() >
                comm_.config_.sleep_after_us;
  }
  void start_clock() {
    start_ = Clock::now();
    clock_started_ = true;
  }
  bool timed_out() {
    if (!clock_started_) {
      start_clock();
      return false;
    }
    return std::chrono::duration<double>(Clock::now() - start_).count() > timeout_s_;
  }
  Comm& comm_;
  double timeout_s_;
  Clock::time_point start_{};
  bool clock_started_ = false;
  bool may_sleep_ = true;  // not where the polls are the MPI library's (see above)
  bool yields_ = true;     // sched_yield between idle polls (else the MPI library does)
  int idle_ = 0;
  uint64_t polls_ = 0;
  uint64_t last_mark_ = 0;
  // Since when the wait has made no progress (read every 64 idle polls).
  Clock::time_point idle_since_{};
  bool idle_timed_ = false;
  bool sleeping_ = false;
};

std::string Comm::timeout_message(const std::string& what, std::vector<int> waiting,
                                  double timeout_s) const {
  std::sort(waiting.begin(), waiting.end());  // one entry per message
  waiting.erase(std::unique(waiting.begin(), waiting.end()), waiting.end());
  std::string peers;
  std::string unmatched;  // what came from them that nothing here expects
  for (int p : waiting) {
    peers += str(peers.empty() ? "" : ", ", p);
    const std::string early = transport_->unmatched_from(p);
    if (!early.empty()) unmatched += str("; unmatched here from rank ", p, ": ", early);
  }
  return str(what, " timed out after ", timeout_s, " s on rank ", rank_,
             peers.empty() ? std::string() : str("; still waiting for rank(s) ", peers), unmatched);
}

Status Comm::run_blocking(const CollArgs& args, const void* in, void* out, MemoryType in_mem,
                          MemoryType out_mem) {
  // alltoallv across nodes: its rules see the size the ranks agree on
  // (base/agreed_size.hpp), in the same calls on every rank; not where an
  // algorithm is forced (on every rank alike: no rule is asked).
  if (args.coll == Collective::Alltoallv && args.memory == MemoryType::Host &&
      dispatcher_.topology().nnodes > 1 && forced_[static_cast<int>(Collective::Alltoallv)].empty()) {
    CollArgs a = args;
    Status status = TUTTI_SUCCESS;
    if (!alltoallv_size_.agree(message_bytes(args, size_), [&](AgreedSize::Packed& both) {
          status = agree_on_alltoallv_size(both);
          return status == TUTTI_SUCCESS;
        }))
      return set_last_error(status, str("alltoallv: the ranks' agreement on its size (",
                                        last_error(), ")"));
    a.agreed_bytes = alltoallv_size_.bytes();
    return run_plan(a, 0, in, out, in_mem, out_mem);
  }
  if (follow_state_ == Config::FollowState::off || args.memory != MemoryType::Host ||
      args.coll == Collective::Alltoallv || failed_)
    return run_plan(args, 0, in, out, in_mem, out_mem);
  if (const Plan& plan = plan_for(args, /*blocking=*/true); !plan.has_alternative)
    return run_plan(args, 0, in, out, in_mem, out_mem, &plan);
  // TUTTI_FOLLOW_STATE (api/state_choice.hpp). The signature: what every
  // rank's call has alike (the plans' key less the variant).
  const uint64_t key = CallKeyHash{}(CallKey{args.coll, args.count, args.dtype, args.op,
                                             args.root, args.in_place, args.memory});
  const StateChoice::Step step = state_choice_.begin(key);
  int variant = step.variant;
  if (step.agree) {
    int agreed = 0;
    if (const Status status = agree_on_variant(key, agreed); status != TUTTI_SUCCESS)
      return status;
    state_choice_.adopt(key, agreed);
    if (!step.timed) variant = agreed;
  }
  if (!step.timed) return run_plan(args, variant, in, out, in_mem, out_mem);
  CollArgs barrier;
  barrier.coll = Collective::Barrier;
  if (const Status status = run_internal(barrier, nullptr); status != TUTTI_SUCCESS)
    return status;
  const auto start = std::chrono::steady_clock::now();
  const Status status = run_plan(args, variant, in, out, in_mem, out_mem);
  const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
  if (status == TUTTI_SUCCESS) state_choice_.note_time(key, variant, took.count());
  return status;
}

Status Comm::agree_on_variant(uint64_t key, int& agreed) {
  const int proposal = follow_state_ == Config::FollowState::alternate
                           ? 1 - state_choice_.verdict(key)
                           : state_choice_.proposal(key);
  uint8_t variant = rank_ == 0 ? static_cast<uint8_t>(proposal) : 0;
  CollArgs bcast;
  bcast.coll = Collective::Bcast;
  bcast.count = 1;
  bcast.dtype = Datatype::Uint8;
  bcast.root = 0;
  const Status status = run_internal(bcast, &variant);
  agreed = variant & 1;
  return status;
}

Status Comm::agree_on_alltoallv_size(AgreedSize::Packed& both) {
  CollArgs range;
  range.coll = Collective::Allreduce;
  range.count = 2;
  range.dtype = Datatype::Uint64;
  range.op = Op::Min;
  range.in_place = true;
  return run_internal(range, both.data());
}

Status Comm::run_internal(const CollArgs& args, void* data) {
  // The user's last algorithm and counts stay theirs.
  const std::string_view user_algorithm = last_algorithm_;
  const CommStats user_stats = stats_;
  const Status status = run_plan(args, 0, data, data, MemoryType::Host, MemoryType::Host);
  last_algorithm_ = user_algorithm;
  stats_ = user_stats;
  return status;
}

Status Comm::run_plan(const CollArgs& args, int variant, const void* in, void* out,
                      MemoryType in_mem, MemoryType out_mem, const Plan* found) {
  OpLabel label;
  const Plan& plan = begin_call(args, label, /*blocking=*/true, variant, found);
  // The direct path: a host schedule with nothing else in flight runs as an
  // operation on this stack frame. Nothing else can need the shared segment
  // or be ordered before it, and it costs no allocation, no shared_ptr and
  // no queue; small calls are dominated by such costs.
  const bool idle = active_.empty() && shm_waiting_.empty() &&
                    (!shm_holder_ || shm_holder_->finished());
  if (!plan.schedule || args.memory != MemoryType::Host || ordered_by_cuda() || !idle) {
    const std::shared_ptr<Operation> op = launch(args, plan, label, in, out, in_mem, out_mem);
    return wait(*op, config_.timeout_s);
  }
  if (plan.direct && !config_.debug.calls) return run_direct(args, plan, label, in, out);
  if (!plan.schedule->uses_transport && !config_.debug.calls)
    return run_in_node(plan, label, in, out, message_bytes(args, size_));
  ScheduleOp op(label, *transport_, plan.schedule, host_buffers(in, out), label.seq,
                scratch_.acquire(plan.schedule->scratch_bytes));
  on_started(op, message_bytes(args, size_));
  if (op.poll()) on_finished(op);  // posts the first round now
  direct_ = &op;  // progress() polls it from here on
  struct Release {
    Operation*& direct;
    ~Release() { direct = nullptr; }
  } release{direct_};
  return wait(op, config_.timeout_s);
}

void Comm::record_end(uint64_t trace, Status status, const std::string& error) {
  if (!recorder_) return;
  recorder_->finished(trace, status);
  if (status == TUTTI_ERR_TIMEOUT) recorder_->write(error);
}

Status Comm::run_in_node(const Plan& plan, const OpLabel& label, const void* in, void* out,
                         size_t bytes) {
  Buffers bufs = host_buffers(in, out);
  const ScratchLease scratch = scratch_.acquire(plan.schedule->scratch_bytes);
  bufs.scratch = scratch.data();
  ScheduleRun run(*transport_, plan.schedule, bufs, label.seq);
  const uint64_t trace = recorder_ ? recorder_->started(label, bytes) : 0;
  Patience patience(*this, config_.timeout_s);
  for (uint64_t polls = 1; !run.advance(); ++polls) {
    // Nothing here needs the transport; it still takes in, now and then,
    // messages that arrive early for later calls.
    if ((polls & 63) == 0) transport_->progress();
    if (!patience.after_poll_at(run.round())) {
      const std::string message = timeout_message(label.to_string(), run.waiting_for(),
                                                  config_.timeout_s);
      run.cancel(TUTTI_ERR_TIMEOUT, message);
      mark_failed(message);
    } else if (aborted_) {  // another rank's notice, taken in while waiting
      run.cancel(TUTTI_ERR_TRANSPORT, failure_);
    }
  }
  record_end(trace, run.status(), run.error());
  if (run.status() == TUTTI_SUCCESS) return TUTTI_SUCCESS;
  if (run.status() == TUTTI_ERR_TIMEOUT) return set_last_error(TUTTI_ERR_TIMEOUT, run.error());
  return set_last_error(run.status(), str(label.to_string(), ": ", run.error()));
}

// The flag waits of a direct run. A flag check costs a few instructions,
// a poll of wait() far more: Patience ticks once per 16 checks, so that
// TUTTI_SPIN means about as long a spin here as there.
class Comm::DirectWait final : public FlagWait {
 public:
  DirectWait(Comm& comm, const OpLabel& label)
      : comm_(comm), label_(label), patience_(comm, comm.config_.timeout_s) {}
  bool idle(int peer) override {
    if ((++checks_ & 15) != 0) return true;
    // As in run_in_node: take in early messages now and then.
    if ((checks_ & 1023) == 0) comm_.transport_->progress();
    if (!patience_.after_poll_at(waits_ended)) {
      status = TUTTI_ERR_TIMEOUT;
      message = comm_.timeout_message(label_.to_string(), {peer}, comm_.config_.timeout_s);
      comm_.mark_failed(message);
      return false;
    }
    if (comm_.aborted_) {  // another rank's notice, taken in while waiting
      status = TUTTI_ERR_TRANSPORT;
      message = str(label_.to_string(), ": ", comm_.failure_);
      return false;
    }
    return true;
  }
  Status status = TUTTI_SUCCESS;
  std::string message;

 private:
  Comm& comm_;
  const OpLabel& label_;
  Patience patience_;
  uint64_t checks_ = 0;
};

Status Comm::run_direct(const CollArgs& args, const Plan& plan, const OpLabel& label,
                        const void* in, void* out) {
  const uint64_t trace = recorder_ ? recorder_->started(label, message_bytes(args, size_)) : 0;
  DirectWait wait(*this, label);
  const DirectCall call{args, plan.params, *plan.schedule, in, out, rank_, size_, node_memory_->port(),
                        direct_scratch_.data(), wait};
  const bool ok = plan.algorithm->run_direct(call);
  record_end(trace, ok ? TUTTI_SUCCESS : wait.status, wait.message);
  if (ok) return TUTTI_SUCCESS;
  return set_last_error(wait.status, wait.message);
}

std::shared_ptr<Operation> Comm::start_point_to_point(bool is_send, void* buf, size_t bytes,
                                                      int peer, int tag, MemoryType mem,
                                                      int* source) {
  if (failed_) fail(TUTTI_ERR_TRANSPORT, "communicator failed earlier: ", failure_);
  const OpLabel label{is_send ? "send" : "receive", {}, 0, peer, tag};
  auto start = [this, is_send, bytes, peer, tag, label, mem,
                source](const void*, void* b) -> std::shared_ptr<Operation> {
    auto p2p = std::make_shared<PointToPointOp>(label, *transport_, peer);
    const Status st = is_send ? p2p->post_send(user_tag(tag), b, bytes, mem)
                              : p2p->post_recv(user_tag(tag), b, bytes, mem, source);
    if (st != TUTTI_SUCCESS) fail(st, last_error());
    return p2p;
  };
  std::shared_ptr<Operation> op;
#if TUTTI_HAVE_CUDA
  if (ordered_by_cuda()) {
    cuda::CallSpec spec;  // the transport moves device memory itself: nothing to stage
    spec.in = spec.out = buf;
    spec.in_mem = spec.out_mem = spec.run_mem = mem;
    spec.user_stream = stream_;
    op = std::make_shared<cuda::CallOp>(label, spec, std::move(start), scratch_, device_scratch_,
                                        start_order_);
  }
#endif
  if (!op) op = start(buf, buf);
  on_started(*op, bytes);
  if (op->poll()) on_finished(*op);
  else active_.push_back(op);
  return op;
}

void Comm::set_stream(CUstream_st* stream) {
#if TUTTI_HAVE_CUDA
  if (stream) {
    if (!cuda::available())
      fail(TUTTI_ERR_UNSUPPORTED, "tutti_comm_set_stream: no CUDA device is available");
    const cudaError_t e = cudaStreamQuery(stream);
    if (e != cudaSuccess && e != cudaErrorNotReady) {
      cudaGetLastError();
      fail(TUTTI_ERR_INVALID_ARGUMENT, "tutti_comm_set_stream: not a usable CUDA stream: ",
           cudaGetErrorString(e));
    }
  }
  stream_ = stream;
#else
  if (stream)
    fail(TUTTI_ERR_UNSUPPORTED, "tutti_comm_set_stream: tutti was built without CUDA support");
#endif
}

int Comm::progress() {
  if (!checked_waiting_.empty()) start_checked_calls();
  // Shared-memory schedules only poll flags: while nothing in flight needs
  // the transport, poll it only now and then (it still gets to take in
  // messages that arrive early), which keeps the flag polling tight.
  bool transport_needed = (++progress_calls_ & 63) == 0;
  if (direct_ && !direct_->finished()) transport_needed |= direct_->uses_transport();
  for (size_t i = 0; i < active_.size() && !transport_needed; ++i)
    transport_needed = active_[i]->uses_transport();
  const int events = transport_needed ? transport_->progress() : 0;
  if (direct_ && !direct_->finished() && direct_->poll()) on_finished(*direct_);
  // Operations may complete in any order; keep the others.
  for (size_t i = 0; i < active_.size();) {
    if (active_[i]->poll()) {
      on_finished(*active_[i]);
      active_[i] = std::move(active_.back());
      active_.pop_back();
    } else {
      ++i;
    }
  }
  // The next shared-memory operation in line starts once the segment is free.
  while (!shm_waiting_.empty() && (!shm_holder_ || shm_holder_->finished())) {
    shm_holder_ = std::move(shm_waiting_.front());
    shm_waiting_.pop_front();
    if (shm_holder_->poll()) on_finished(*shm_holder_);
    else active_.push_back(shm_holder_);
  }
  return events;
}

bool Comm::progress_polls_mpi() const {
  if (transport_->polls_mpi() || !checked_waiting_.empty()) return true;
  if (direct_ && !direct_->finished() && direct_->polls_mpi()) return true;
  return std::any_of(active_.begin(), active_.end(),
                     [](const std::shared_ptr<Operation>& op) { return op->polls_mpi(); });
}

namespace {

// A wait whose every turn polls the transport (Comm::progress does so while
// an operation in flight uses it), said so to the transport.
class TransportPolled {
 public:
  TransportPolled(Transport& transport, bool polled)
      : transport_(polled ? &transport : nullptr) {
    if (transport_) transport_->user_polls(true);
  }
  ~TransportPolled() {
    if (transport_) transport_->user_polls(false);
  }
  TransportPolled(const TransportPolled&) = delete;
  TransportPolled& operator=(const TransportPolled&) = delete;

 private:
  Transport* transport_;
};

}  // namespace

Status Comm::wait(Operation& op, double timeout_s) {
  Patience patience(*this, timeout_s, op);
  const TransportPolled polled(*transport_, op.uses_transport());
  while (!op.finished()) {
    const int events = progress();
    if (op.finished()) break;
    if (!patience.after_poll_at(op.rounds_done(), events > 0)) {
      const std::string message = timeout_message(op.description(), op.waiting_for(), timeout_s);
      op.cancel(TUTTI_ERR_TIMEOUT, message);
      // Let the transport release the buffers before returning them.
      for (int spins = 0; !op.finished() && spins < 1000000; ++spins) progress();
      // A receive taken back leaves no peer behind (its sender, if any, is
      // still free to be matched by a later receive); anything else does.
      if (!(op.withdrawable() && op.finished())) mark_failed(message);
      if (recorder_) {
        // A send that cannot be taken back (one waiting for a connection
        // to the missing rank) keeps the operation in flight: it failed all
        // the same, and the trace says so.
        if (!op.finished()) recorder_->finished(op.trace_id, TUTTI_ERR_TIMEOUT);
        recorder_->write(message);
      }
      return set_last_error(TUTTI_ERR_TIMEOUT, message);
    }
  }
  if (config_.debug.calls && rank_ == 0)
    log_line(rank_, str(op.description(), ": ", patience.waited_us(), " us waited",
                        op.status() == TUTTI_SUCCESS ? "" : ", failed"));
  if (op.status() != TUTTI_SUCCESS) {
    if (op.status() == TUTTI_ERR_TRANSPORT) mark_failed(op.error());
    return set_last_error(op.status(), str(op.description(), ": ", op.error()));
  }
  return TUTTI_SUCCESS;
}

std::span<const size_t> Comm::exchange_node_counts(const CollArgs& args) {
  const algos::NodeGroups g = algos::node_groups_of(dispatcher_.topology(), rank_);
  const std::vector<int>& mine = g.my_node_ranks();
  const size_t p = static_cast<size_t>(size_), row = p * sizeof(size_t);
  node_counts_.resize(mine.size() * p);
  std::copy(args.send_counts.begin(), args.send_counts.end(),
            node_counts_.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(g.my_local) * p));
  if (mine.size() == 1) return node_counts_;
  // The coming call's sequence number (begin_call takes it after the plan).
  const Tag tag = collective_tag(next_seq_, kOutOfScheduleIndex);
  std::vector<Completion> done(2 * (mine.size() - 1));
  std::vector<int> peer_of(done.size());
  size_t posted = 0;
  for (size_t j = 0; j < mine.size(); ++j) {
    if (static_cast<int>(j) == g.my_local) continue;
    for (const bool is_send : {true, false}) {
      Completion& c = done[posted];
      peer_of[posted++] = mine[j];
      const Status st =
          is_send ? transport_->send(mine[j], tag, args.send_counts.data(), row, MemoryType::Host, &c)
                  : transport_->recv(mine[j], tag, node_counts_.data() + j * p, row,
                                     MemoryType::Host, &c);
      if (st != TUTTI_SUCCESS) {
        c.done = true;
        c.status = st;
        c.error = str(is_send ? "posting a send to rank " : "posting a receive from rank ",
                      mine[j], " failed: ", last_error());
      }
    }
  }
  auto finished = [&] {
    size_t n = 0;
    for (const Completion& c : done) n += c.done ? 1 : 0;
    return n;
  };
  Patience patience(*this, config_.timeout_s);
  for (size_t n = finished(); n < done.size(); n = finished()) {
    // The transport itself (Comm::progress polls it only now and then
    // while no operation in flight needs it), and the operations in flight:
    // a node peer may need this rank's part of one before it gets here.
    const int events = transport_->progress() + progress();
    const bool in_time = patience.after_poll_at(n, events > 0);
    if (!in_time || aborted_) {  // aborted: another rank's notice or a thread's ask
      std::vector<int> waiting;
      for (size_t i = 0; i < done.size(); ++i)
        if (!done[i].done) waiting.push_back(peer_of[i]);
      const char* what = "alltoallv: the exchange of counts inside the node";
      const std::string message = in_time ? str(what, ": ", failure_)
                                          : timeout_message(what, waiting, config_.timeout_s);
      for (Completion& c : done)
        if (!c.done) transport_->cancel(&c);
      for (int spins = 0; finished() < done.size() && spins < 1000000; ++spins) transport_->progress();
      // The peers may still wait for what this rank never sent.
      mark_failed(message);
      fail(in_time ? TUTTI_ERR_TRANSPORT : TUTTI_ERR_TIMEOUT, message);
    }
  }
  for (size_t i = 0; i < done.size(); ++i) {
    const Completion& c = done[i];
    if (c.status != TUTTI_SUCCESS)
      fail(c.status, "alltoallv: the exchange of counts inside the node with rank ", peer_of[i],
           ": ", c.error.empty() ? std::string("failed") : c.error);
    if (i % 2 == 1 && c.bytes != row)
      fail(TUTTI_ERR_MISMATCH, "alltoallv: rank ", peer_of[i], " sent ", c.bytes,
           " bytes of counts, expected ", row, " (ranks called with different communicators?)");
  }
  return node_counts_;
}

void Comm::on_started(Operation& op, size_t bytes) {
  if (recorder_) op.trace_id = recorder_->started(op.label(), bytes);
}

void Comm::on_finished(Operation& op) {
  if (recorder_) recorder_->finished(op.trace_id, op.status());
}

void Comm::fail_everything(Status why, const std::string& message) {
  mark_failed(message);
  // Queued shared-memory operations never started: they finish at once.
  for (auto& op : shm_waiting_) {
    op->cancel(why, message);
    active_.push_back(op);
  }
  shm_waiting_.clear();
  for (auto& op : active_) op->cancel(why, message);
  if (direct_) direct_->cancel(why, message);
}

void Comm::abort() {
  if (!aborted_) {
    aborted_ = true;
    fail_everything(TUTTI_ERR_TRANSPORT, str("aborted by tutti_comm_abort on rank ", rank_));
  }
  abort_channel_->notify_all();
  if (recorder_) recorder_->write(failure_);
}

bool Comm::poll_aborts() {
  // Once per ask (a relaxed read first: this runs on every idle poll).
  if (abort_asked_.load(std::memory_order_relaxed) && abort_asked_.exchange(false)) [[unlikely]] {
    abort();
    return true;
  }
  const std::optional<int> from = abort_channel_->poll();
  if (!from) return false;
  if (!aborted_) {
    aborted_ = true;
    fail_everything(TUTTI_ERR_TRANSPORT,
                    str("aborted: rank ", *from, " called tutti_comm_abort"));
    if (recorder_) recorder_->write(failure_);
  }
  return true;
}

void Comm::agree_with_peers(const CollArgs& args) {
  if (failed_) fail(TUTTI_ERR_TRANSPORT, "communicator failed earlier: ", failure_);
  // Earlier non-blocking calls agree (and start) first: every rank posts the
  // agreements in call order.
  if (!checked_waiting_.empty()) {
    Patience patience(*this, config_.timeout_s, Patience::Polls::Mpi);
    while (!checked_waiting_.empty()) {
      const int events = progress();
      if (!patience.after_poll(events > 0)) {
        const std::string message =
            str("TUTTI_CHECK: ", describe(args), " waited ", config_.timeout_s,
                " s for the agreement on an earlier non-blocking call on this communicator");
        fail_everything(TUTTI_ERR_TIMEOUT, message);
        fail(TUTTI_ERR_TIMEOUT, message);
      }
      if (aborted_) fail(TUTTI_ERR_TRANSPORT, describe(args), ": ", failure_);
    }
  }
  // Then this call's, progressing the operations in flight meanwhile: a
  // peer may need this rank's part of an earlier non-blocking call before it
  // gets to this call at all (an agreement that only polled itself left a
  // leader's non-blocking reduce unfinished, whose node segment the next
  // bcast waited for: a deadlock, tutti-bench --soak-window on 2+1+2 nodes).
  const std::unique_ptr<Agreement> agreement = signature_check_->start(args);
  Patience patience(*this, config_.timeout_s, Patience::Polls::Mpi);
  while (!agreement->poll()) {
    const int events = progress();
    if (!patience.after_poll(events > 0)) {
      // The check's communicator keeps a collective that never ends (the
      // agreement abandons it): this communicator has failed.
      const std::string message = agreement->stuck_message(config_.timeout_s);
      mark_failed(message);
      fail(TUTTI_ERR_TIMEOUT, message);
    }
    if (aborted_) fail(TUTTI_ERR_TRANSPORT, describe(args), ": ", failure_);
  }
  if (agreement->status() != TUTTI_SUCCESS) fail(agreement->status(), agreement->error());
}

void Comm::force_algorithm(Collective coll, std::string name) {
  const int c = static_cast<int>(coll);
  if (!name.empty() && !algos::find_algorithm(coll, name))
    fail(TUTTI_ERR_INVALID_ARGUMENT, "'", name, "' is not a ", collective_name(coll),
         " algorithm; valid: ", algos::algorithm_names(coll));
  forced_by_api_[c] = !name.empty();
  forced_[c] = name.empty() ? config_.forced[c] : std::move(name);
  plans_.clear();  // cached decisions may name another algorithm now
  last_plan_ = nullptr;
  last_alltoallv_ = {};
}

}  // namespace tutti
