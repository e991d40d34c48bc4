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

UserTuning load_job_tuning(MPI_Comm comm, const Config& cfg, const Topology& topo) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  UserTuning tuning;
  std::string error;
  Status status = TUTTI_SUCCESS;
  try {
    tuning = load_user_tuning(cfg.tune, cfg.tuning_file, cfg.tuning_strict, JobShape::of(topo));
  } catch (const Error& e) {
    error = e.what();
    status = e.status();
  }
  // (failed, hash) of every rank: one O(P) exchange.
  const uint64_t mine[2] = {error.empty() ? 0u : 1u, tuning.hash};
  std::vector<uint64_t> all(2 * static_cast<size_t>(size));
  check_mpi(MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, comm),
            "MPI_Allgather (tuning table hashes)");
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
    uint64_t length = error.size();
    check_mpi(MPI_Bcast(&code, 1, MPI_INT, root, comm), "MPI_Bcast (tuning error)");
    check_mpi(MPI_Bcast(&length, 1, MPI_UINT64_T, root, comm), "MPI_Bcast (tuning error)");
    error.resize(length);
    check_mpi(MPI_Bcast(error.data(), static_cast<int>(length), MPI_CHAR, root, comm),
              "MPI_Bcast (tuning error)");
    const std::string who =
        failed.size() == 1 ? str("rank ", root)
                           : str("ranks ", format_rank_list(failed), "; rank ", root, " says");
    fail(static_cast<Status>(code), "cannot load the tuning table (", who, "): ", error);
  }
  if (by_hash.size() > 1) {
    std::string groups;
    for (const auto& [hash, ranks] : by_hash)
      groups += str(groups.empty() ? "" : "; ", format_hash(hash), " on rank",
                    ranks.size() > 1 ? "s " : " ", format_rank_list(ranks));
    fail(TUTTI_ERR_MISMATCH, "ranks loaded different tuning tables (", groups,
         "); every rank must see the same TUTTI_TUNE and tuning file. Rank ", rank, " loaded ",
         tuning.describe());
  }
  if (rank == 0) {
    warn_once(rank, tuning.warnings);
    if (cfg.debug.any()) log_line(rank, "tuning: " + tuning.describe());
  }
  return tuning;
}

Dispatcher make_dispatcher(MPI_Comm comm, const Config& cfg, Topology topo) {
  UserTuning tuning = load_job_tuning(comm, cfg, topo);
  return Dispatcher(std::move(tuning.table), std::move(topo));
}

}  // namespace tutti
