#include "tuning/load.hpp"

#include <map>
#include <mutex>
#include <set>

#include "base/log.hpp"
#include "base/status.hpp"
#include "transport/mpi_types.hpp"

namespace tutti {
namespace {

// Rank 0 says each warning once per process, not once per communicator.
void warn_once(int rank, const std::vector<std::string>& warnings) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mutex);
  for (const std::string& w : warnings)
    if (said.insert(w).second) log_line(rank, "warning: tuning: " + w);
}

}  // namespace

std::string format_rank_list(const std::vector<int>& r) {
  std::string out;
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    out += str(out.empty() ? "" : ", ", r[i]);
    if (j > i) out += str(j == i + 1 ? ", " : "-", r[j]);
    i = j + 1;
  }
  return out;
}

namespace {

// Collective: every rank loaded (or failed to load) one thing, `what`,
// whose content hashes to `hash`. Throws the same Error on every rank: the
// first failing rank's own error, or TUTTI_ERR_MISMATCH naming the ranks
// whose hashes differ (`mine` describes this rank's, `hint` says what every
// rank must see alike).
void agree_on(MPI_Comm comm, const std::string& what, const std::string& error, Status status,
              uint64_t hash, const std::string& mine, const std::string& hint) {
  int rank = 0, size = 1;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  // (failed, hash) of every rank: one O(P) exchange.
  const uint64_t local[2] = {error.empty() ? 0u : 1u, hash};
  std::vector<uint64_t> all(2 * static_cast<size_t>(size));
  check_mpi(MPI_Allgather(local, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, comm),
            str("MPI_Allgather (", what, " hashes)").c_str());
  std::vector<int> failed;
  std::map<uint64_t, std::vector<int>> by_hash;
  for (int r = 0; r < size; ++r) {
    if (all[2 * static_cast<size_t>(r)]) failed.push_back(r);
    else by_hash[all[2 * static_cast<size_t>(r) + 1]].push_back(r);
  }
  if (!failed.empty()) {
    // Every rank reports the first failing rank's own words.
    const int root = failed.front();
    int code = static_cast<int>(status);
    std::string text = error;
    uint64_t length = text.size();
    const std::string call = str("MPI_Bcast (", what, " error)");
    check_mpi(MPI_Bcast(&code, 1, MPI_INT, root, comm), call.c_str());
    check_mpi(MPI_Bcast(&length, 1, MPI_UINT64_T, root, comm), call.c_str());
    text.resize(length);
    check_mpi(MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, root, comm), call.c_str());
    const std::string who =
        failed.size() == 1 ? str("rank ", root)
                           : str("ranks ", format_rank_list(failed), "; rank ", root, " says");
    fail(static_cast<Status>(code), "cannot load the ", what, " (", who, "): ", text);
  }
  if (by_hash.size() > 1) {
    std::string groups;
    for (const auto& [h, ranks] : by_hash)
      groups += str(groups.empty() ? "" : "; ", format_hash(h), " on rank",
                    ranks.size() > 1 ? "s " : " ", format_rank_list(ranks));
    fail(TUTTI_ERR_MISMATCH, "ranks loaded different ", what, "s (", groups, "); ", hint,
         ". Rank ", rank, " loaded ", mine);
  }
}

uint64_t machine_hash(const model::Machine& m) {
  const double fields[] = {m.intra.alpha_us,      m.intra.bytes_per_us,
                           m.intra.rndv_alpha_us, m.intra.rndv_bytes_per_us,
                           m.inter.alpha_us,      m.inter.bytes_per_us,
                           m.inter.rndv_alpha_us, m.inter.rndv_bytes_per_us,
                           static_cast<double>(m.nics_per_node), m.reduce_bytes_per_us,
                           m.copy_bytes_per_us,   m.eager_bytes,
                           m.call_us,             m.intra.inject_us,
                           m.inter.inject_us,     static_cast<double>(m.cores_per_node),
                           m.cache_bytes,         m.reduce_cached_bytes_per_us,
                           m.copy_cached_bytes_per_us, m.flag_us,
                           m.peer_read_us,        m.direct_call_us,
                           m.intra.rndv_short_alpha_us, m.intra.rndv_short_bytes_per_us,
                           m.inter.rndv_short_alpha_us, m.inter.rndv_short_bytes_per_us,
                           m.intra.eager_bytes,   m.inter.eager_bytes,
                           m.peer_copy_bytes_per_us, m.peer_write_bytes_per_us,
                           m.peer_write_max_bytes, m.peer_read_bytes_per_us,
                           m.intra.written_factor, m.inter.written_factor,
                           m.intra.rndv_cached_alpha_us, m.intra.rndv_cached_bytes_per_us};
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const unsigned char c : std::string(reinterpret_cast<const char*>(fields), sizeof fields)) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

UserTuning load_job_tuning(MPI_Comm comm, const Config& cfg, const Topology& topo) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  UserTuning tuning;
  std::string error;
  Status status = TUTTI_SUCCESS;
  try {
    tuning = load_user_tuning(cfg.tune, cfg.tuning_file, cfg.tuning_strict, JobShape::of(topo));
  } catch (const Error& e) {
    error = e.what();
    status = e.status();
  }
  agree_on(comm, "tuning table", error, status, tuning.hash, tuning.describe(),
           "every rank must see the same TUTTI_TUNE and tuning file");
  if (rank == 0) {
    warn_once(rank, tuning.warnings);
    if (cfg.debug.any()) log_line(rank, "tuning: " + tuning.describe());
  }
  return tuning;
}

model::Machine load_job_machine(MPI_Comm comm, const Config& cfg) {
  model::Machine machine;
  std::string error;
  Status status = TUTTI_SUCCESS;
  try {
    if (!cfg.machine_file.empty()) machine = model::load_machine(cfg.machine_file);
  } catch (const Error& e) {
    error = e.what();
    status = e.status();
  }
  agree_on(comm, "machine description", error, status, machine_hash(machine),
           cfg.machine_file.empty() ? "the built-in one" : "'" + cfg.machine_file + "'",
           "every rank must see the same TUTTI_MACHINE file");
  return machine;
}

Dispatcher make_dispatcher(MPI_Comm comm, const Config& cfg, Topology topo) {
  UserTuning tuning = load_job_tuning(comm, cfg, topo);
  return Dispatcher(std::move(tuning.table), std::move(topo), load_job_machine(comm, cfg));
}

}  // namespace tutti
