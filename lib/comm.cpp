#include "comm.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "log.hpp"
#include "mpi_collective.hpp"
#include "mpi_types.hpp"
#include "transport_mpi.hpp"
#include "tutti_config.h"
#if TUTTI_HAVE_UCX
#include "transport_ucx.hpp"
#endif

namespace tutti {
namespace {

MPI_Comm duplicate(MPI_Comm comm) {
  MPI_Comm dup = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  return dup;
}

int comm_rank(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}
int comm_size(MPI_Comm c) {
  int n = 1;
  MPI_Comm_size(c, &n);
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
  const int rc = MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, local);
  MPI_Comm_free(&local);
  check_mpi(rc, "MPI_Allreduce (node leader)");
  std::vector<int> leaders(static_cast<size_t>(t.nranks));
  check_mpi(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm),
            "MPI_Allgather (node leaders)");
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
  return t;
}

Comm::Comm(MPI_Comm mpi_comm)
    : mpi_comm_(duplicate(mpi_comm)),
      rank_(comm_rank(mpi_comm_)),
      size_(comm_size(mpi_comm_)),
      config_(Config::from_environment(TUTTI_HAVE_UCX)),
      dispatcher_(TuningTable{}, discover_topology(mpi_comm_)) {
  forced_ = config_.forced;
#if TUTTI_HAVE_UCX
  if (config_.transport == TransportKind::Ucx) {
    auto ucx = std::make_unique<UcxTransport>(mpi_comm_, config_.ucx_peer_errors);
    if (config_.debug.transport && rank_ == 0) log_line(rank_, ucx->describe());
    transport_ = std::move(ucx);
  }
#endif
  if (!transport_) transport_ = std::make_unique<MpiTransport>(mpi_comm_);
  if (config_.debug.any() && rank_ == 0)
    log_line(rank_, str("communicator of ", size_, " ranks on ", topology().nnodes,
                        " node(s), transport ", transport_->name()));
}

Comm::~Comm() {
  // Operations still in flight are the caller's error; let them go first.
  for (auto& op : active_) op->cancel(TUTTI_ERR_INVALID_ARGUMENT, "communicator destroyed");
  for (int spins = 0; !active_.empty() && spins < 100000; ++spins) progress();
  active_.clear();
  transport_.reset();
  if (mpi_comm_ != MPI_COMM_NULL) MPI_Comm_free(&mpi_comm_);
}

size_t Comm::CallKeyHash::operator()(const CallKey& k) const {
  size_t h = std::hash<size_t>{}(k.count);
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(static_cast<size_t>(k.coll) << 24 | static_cast<size_t>(k.dtype) << 16 |
      static_cast<size_t>(k.op) << 8 | static_cast<size_t>(k.in_place) << 1 |
      static_cast<size_t>(k.memory));
  mix(static_cast<size_t>(k.root));
  return h;
}

const Comm::Plan& Comm::plan_for(const CollArgs& args, Plan& uncached) {
  auto make = [&](Plan& plan) {
    const Decision d = explain(args);
    if (config_.debug.decisions && rank_ == 0) log_decision(args, d);
    plan.algorithm = d.algorithm;
    plan.params = d.params;
    plan.fell_back = d.fell_back();
    plan.schedule = nullptr;
    if (!d.algorithm->is_mpi()) {
      CollArgs with_params = args;
      with_params.params = d.params;
      ScheduleBuilder b(with_params, rank_, size_);
      d.algorithm->build(b);
      ++stats_.schedule_builds;
      plan.schedule = std::make_shared<const Schedule>(b.finish());
    }
  };
  // alltoallv plans depend on the counts: not worth caching.
  if (args.coll == Collective::Alltoallv) {
    make(uncached);
    return uncached;
  }
  const CallKey key{args.coll, args.count, args.dtype, args.op, args.root, args.in_place, args.memory};
  auto it = plans_.find(key);
  if (it != plans_.end()) {
    if (it->second.schedule) ++stats_.schedule_cache_hits;
    return it->second;
  }
  constexpr size_t kMaxCachedPlans = 1024;
  if (plans_.size() >= kMaxCachedPlans) plans_.clear();
  Plan& plan = plans_[key];
  make(plan);
  return plan;
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
  if (!logged_decisions_.emplace(static_cast<int>(args.coll), size_bucket(bytes)).second) return;
  std::string line = str(collective_name(args.coll), " ", bytes, " B: ", d.algorithm->name, " (",
                         d.reason, ")");
  for (const auto& r : d.refused) line += str("; refused ", r.algorithm, " [", r.origin, "]: ", r.why);
  log_line(rank_, line);
}

std::shared_ptr<Operation> Comm::start_collective(const CollArgs& in_args, const void* in,
                                                  void* out) {
  if (failed_) fail(TUTTI_ERR_TRANSPORT, "communicator failed earlier: ", failure_);
  Plan uncached;
  const Plan& plan = plan_for(in_args, uncached);
  ++stats_.collectives;
  if (plan.fell_back) ++stats_.refused_fallbacks;
  last_algorithm_ = plan.algorithm->name;
  const OpLabel label{collective_name(in_args.coll), plan.algorithm->name, next_seq_++};

  std::shared_ptr<Operation> op;
  if (plan.algorithm->is_mpi()) {
    ++stats_.mpi_fallbacks;
    CollArgs args = in_args;
    args.params = plan.params;
    op = start_mpi_collective(args, in, out, mpi_comm_, rank_, size_, label);
  } else {
    Buffers bufs;
    bufs.input = in;
    bufs.output = out;
    bufs.input_mem = bufs.output_mem = in_args.memory;
    op = std::make_shared<ScheduleOp>(label, *transport_, plan.schedule, bufs, label.seq,
                                      scratch_.acquire(plan.schedule->scratch_bytes));
  }
  if (!op->poll()) active_.push_back(op);  // posts the first round now
  return op;
}

std::shared_ptr<Operation> Comm::start_point_to_point(bool is_send, void* buf, size_t bytes,
                                                      int peer, int tag) {
  if (failed_) fail(TUTTI_ERR_TRANSPORT, "communicator failed earlier: ", failure_);
  const OpLabel label{is_send ? "send" : "receive", {}, 0, peer, tag};
  auto op = std::make_shared<PointToPointOp>(label, *transport_, peer);
  const MemoryType mem = MemoryType::Host;
  const Status st = is_send ? op->post_send(user_tag(tag), buf, bytes, mem)
                            : op->post_recv(user_tag(tag), buf, bytes, mem);
  if (st != TUTTI_SUCCESS) fail(st, last_error());
  if (!op->poll()) active_.push_back(op);
  return op;
}

int Comm::progress() {
  const int events = transport_->progress();
  // Operations may complete in any order; keep the others.
  for (size_t i = 0; i < active_.size();) {
    if (active_[i]->poll()) {
      active_[i] = std::move(active_.back());
      active_.pop_back();
    } else {
      ++i;
    }
  }
  return events;
}

Status Comm::wait(Operation& op, double timeout_s) {
  const auto start = Clock::now();
  int idle = 0;
  uint64_t iterations = 0;
  while (!op.finished()) {
    const int events = progress();
    if (op.finished()) break;
    if (events > 0) {
      idle = 0;
    } else if (++idle > config_.spin_before_yield) {
      // Do not burn a core another rank may need (oversubscribed jobs).
      sched_yield();
    }
    if (timeout_s > 0 && (++iterations & 63) == 0 &&
        std::chrono::duration<double>(Clock::now() - start).count() > timeout_s) {
      std::string peers;
      for (int p : op.waiting_for()) peers += str(peers.empty() ? "" : ", ", p);
      const std::string message =
          str(op.description(), " timed out after ", timeout_s, " s on rank ", rank_,
              peers.empty() ? std::string() : str("; still waiting for rank(s) ", peers));
      op.cancel(TUTTI_ERR_TIMEOUT, message);
      failed_ = true;
      failure_ = message;
      // Let the transport release the buffers before returning them.
      for (int spins = 0; !op.finished() && spins < 1000000; ++spins) progress();
      return set_last_error(TUTTI_ERR_TIMEOUT, message);
    }
  }
  if (config_.debug.calls && rank_ == 0)
    log_line(rank_, str(op.description(), ": ",
                        std::chrono::duration<double, std::micro>(Clock::now() - start).count(),
                        " us waited", op.status() == TUTTI_SUCCESS ? "" : ", failed"));
  if (op.status() != TUTTI_SUCCESS) {
    if (op.status() == TUTTI_ERR_TRANSPORT) {
      failed_ = true;
      failure_ = op.error();
    }
    return set_last_error(op.status(), str(op.description(), ": ", op.error()));
  }
  return TUTTI_SUCCESS;
}

void Comm::force_algorithm(Collective coll, std::string name) {
  const int c = static_cast<int>(coll);
  if (!name.empty() && !algos::find_algorithm(coll, name))
    fail(TUTTI_ERR_INVALID_ARGUMENT, "'", name, "' is not a ", collective_name(coll),
         " algorithm; valid: ", algos::algorithm_names(coll));
  forced_by_api_[c] = !name.empty();
  forced_[c] = name.empty() ? config_.forced[c] : std::move(name);
  plans_.clear();  // cached decisions may name another algorithm now
}

}  // namespace tutti
