#include "interpose/comm_table.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "interpose/guard.hpp"
#include "interpose/progress_hook.hpp"

namespace tutti::interpose {
namespace {

// What the attribute holds: the tutti communicator, or why there is none
// (then every call on that communicator goes to MPI, on every rank: the
// reasons are properties of the communicator, and creation fails or succeeds
// everywhere).
struct Entry {
  MPI_Comm mpi;
  tutti_comm_t tutti;
  Pass reason;
  Policy policy;
  int rank = -1;
};

std::mutex table_mutex;
int keyval = MPI_KEYVAL_INVALID;
std::vector<Entry*> live;  // creation order

// MPI is up: set once seen, cleared by MPI_Finalize (lifecycle.cpp).
std::atomic<bool> mpi_up{false};

int delete_entry(MPI_Comm, int, void* attribute, void*) {
  auto* entry = static_cast<Entry*>(attribute);
  detail::deletions.fetch_add(1);
  {
    std::lock_guard lock(table_mutex);
    live.erase(std::remove(live.begin(), live.end(), entry), live.end());
  }
  int rc = TUTTI_SUCCESS;
  if (entry->tutti) {
    InsideTutti inside;
    rc = tutti_comm_destroy(entry->tutti);
    if (rc != TUTTI_SUCCESS)
      std::fprintf(stderr, "tutti-mpi: destroying the communicator's tutti twin failed: %s: %s\n",
                   tutti_strerror(rc), tutti_last_error());
  }
  delete entry;
  return rc == TUTTI_SUCCESS ? MPI_SUCCESS : MPI_ERR_OTHER;
}

bool make_keyval() {
  std::lock_guard lock(table_mutex);
  if (keyval != MPI_KEYVAL_INVALID) return true;
  return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_entry, &keyval, nullptr) ==
         MPI_SUCCESS;
}

Pass why_not_tutti(MPI_Comm comm) {
  int inter = 0, size = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return Pass::not_ready;
  if (inter) return Pass::inter_communicator;
  if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS) return Pass::not_ready;
  if (size < 2) return Pass::one_rank;
  return Pass::count_;
}

Entry* create_entry(MPI_Comm comm) {
  auto* entry = new Entry{comm, nullptr, why_not_tutti(comm), {}};
  if (entry->reason == Pass::count_ && PMPI_Comm_rank(comm, &entry->rank) != MPI_SUCCESS)
    entry->reason = Pass::not_ready;
  if (entry->reason == Pass::count_) {
    InsideTutti inside;
    int rc = tutti_comm_create(comm, &entry->tutti);
    if (rc == TUTTI_SUCCESS) {
      hook_progress();
    } else {
      std::fprintf(stderr, "tutti-mpi: tutti_comm_create failed (%s: %s); this communicator's "
                   "collectives go to MPI\n", tutti_strerror(rc), tutti_last_error());
      entry->tutti = nullptr;
      entry->reason = Pass::not_ready;
    }
  }
  if (PMPI_Comm_set_attr(comm, keyval, entry) != MPI_SUCCESS) {
    InsideTutti inside;
    if (entry->tutti) tutti_comm_destroy(entry->tutti);
    delete entry;
    return nullptr;
  }
  std::lock_guard lock(table_mutex);
  live.push_back(entry);
  return entry;
}

}  // namespace

bool detail::read_interposition_enabled() {
  const char* v = std::getenv("TUTTI_MPI");
  return !(v && std::strcmp(v, "0") == 0);
}

Route detail::look_up(MPI_Comm comm) {
  if (!interposition_enabled()) return {nullptr, Pass::disabled};
  if (!mpi_up.load(std::memory_order_acquire)) {
    int initialized = 0, finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (!initialized || finalized) return {nullptr, Pass::not_ready};
    mpi_up.store(true, std::memory_order_release);
  }
  if (comm == MPI_COMM_NULL) return {nullptr, Pass::not_ready};
  if (keyval == MPI_KEYVAL_INVALID && !make_keyval()) return {nullptr, Pass::not_ready};
  const uint64_t deletions_before = detail::deletions.load(std::memory_order_acquire);

  void* found = nullptr;
  int has = 0;
  if (PMPI_Comm_get_attr(comm, keyval, &found, &has) != MPI_SUCCESS)
    return {nullptr, Pass::not_ready};  // not a valid communicator: MPI says so
  if (!has) {
    found = create_entry(comm);
    if (!found) return {nullptr, Pass::not_ready};
  }
  auto* entry = static_cast<Entry*>(found);
  const Route route{entry->tutti, entry->reason, &entry->policy, entry->rank};
  detail::last_lookup = {comm, route, deletions_before};
  return route;
}

void destroy_all_communicators() {
  mpi_up.store(false, std::memory_order_release);
  detail::last_lookup = {};
  std::vector<Entry*> newest_first;
  {
    std::lock_guard lock(table_mutex);
    newest_first.assign(live.rbegin(), live.rend());
  }
  // A failure leaves a tutti communicator alive past MPI_Finalize: said, not
  // fatal (the program is finishing).
  for (Entry* e : newest_first)
    if (PMPI_Comm_delete_attr(e->mpi, keyval) != MPI_SUCCESS)
      std::fprintf(stderr, "tutti-mpi: MPI_Comm_delete_attr failed at MPI_Finalize; a tutti "
                   "communicator was not destroyed\n");
  std::lock_guard lock(table_mutex);
  if (keyval != MPI_KEYVAL_INVALID && PMPI_Comm_free_keyval(&keyval) != MPI_SUCCESS)
    std::fprintf(stderr, "tutti-mpi: MPI_Comm_free_keyval failed at MPI_Finalize\n");
}

}  // namespace tutti::interpose
