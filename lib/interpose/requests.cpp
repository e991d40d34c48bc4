#include "interpose/requests.hpp"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "interpose/errors.hpp"
#include "interpose/guard.hpp"

namespace tutti::interpose {
namespace {

// One non-blocking collective that tutti runs, behind an MPI generalized
// request. Freed by MPI (free_pending) when the program frees the request.
struct Pending {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
  tutti_request_t tutti = nullptr;  // null once tutti is done with it
  int status = TUTTI_SUCCESS;       // tutti's result
  bool completed = false;           // MPI_Grequest_complete called
  std::shared_ptr<void> keep;
  // What MPI_Grequest_complete returned: where it failed, MPI never
  // completes the request, so a wait must not ask MPI for it.
  int complete_rc = MPI_SUCCESS;
};

std::mutex table_mutex;
std::unordered_map<MPI_Request, Pending*> table;
std::atomic<int> outstanding{0};  // lets calls with none of ours go straight to MPI

int query_pending(void*, MPI_Status* status) {
  status->MPI_SOURCE = MPI_ANY_SOURCE;
  status->MPI_TAG = MPI_ANY_TAG;
  if (const int rc = PMPI_Status_set_elements(status, MPI_BYTE, 0); rc != MPI_SUCCESS) return rc;
  return PMPI_Status_set_cancelled(status, 0);
}

int free_pending(void* state) {
  auto* p = static_cast<Pending*>(state);
  {
    std::lock_guard lock(table_mutex);
    table.erase(p->request);
  }
  outstanding.fetch_sub(1);
  delete p;
  return MPI_SUCCESS;
}

// A collective cannot be cancelled (MPI says so too): the request completes.
int cancel_pending(void*, int) { return MPI_SUCCESS; }

Pending* find(MPI_Request r) {
  if (outstanding.load(std::memory_order_relaxed) == 0 || r == MPI_REQUEST_NULL) return nullptr;
  std::lock_guard lock(table_mutex);
  auto it = table.find(r);
  return it == table.end() ? nullptr : it->second;
}

void mark_complete(Pending* p, int status) {
  p->status = status;
  p->tutti = nullptr;
  p->completed = true;
  p->complete_rc = PMPI_Grequest_complete(p->request);
}

// MPI_Grequest_complete failed on `p`: the MPI request will never complete.
// Raised on the communicator (as MPI raises its own errors).
int raise_unfinished(Pending* p) {
  PMPI_Comm_call_errhandler(p->comm, p->complete_rc);
  return p->complete_rc;
}

// One poll of tutti's request; true once the MPI request is complete.
bool advance(Pending* p) {
  if (p->completed) return true;
  int done = 0;
  int status;
  {
    InsideTutti inside;
    status = tutti_test(&p->tutti, &done);
  }
  if (done || status != TUTTI_SUCCESS) mark_complete(p, status);
  return p->completed;
}

// Waits for tutti's request (its own deadline, TUTTI_TIMEOUT).
void finish(Pending* p) {
  if (p->completed) return;
  int status;
  {
    InsideTutti inside;
    status = tutti_wait(&p->tutti);
  }
  mark_complete(p, status);
}

// Ends tutti's request now with a timeout (tutti_wait_timeout cancels it).
void give_up(Pending* p) {
  if (p->completed) return;
  int status;
  {
    InsideTutti inside;
    status = tutti_wait_timeout(&p->tutti, 1e-9);
  }
  mark_complete(p, status);
}

double timeout_seconds() {
  static const double seconds = [] {
    const char* v = std::getenv("TUTTI_TIMEOUT");
    return v && *v ? std::atof(v) : 300.0;
  }();
  return seconds;
}

// What a request array held of ours, captured before MPI frees the entries.
struct Ours {
  int index;
  Pending* pending;
  MPI_Comm comm;
  int status;
};

std::vector<Ours>& ours_in(int count, const MPI_Request* requests) {
  thread_local std::vector<Ours> ours;
  ours.clear();
  if (outstanding.load(std::memory_order_relaxed) == 0 || !requests) return ours;
  for (int i = 0; i < count; ++i)
    if (Pending* p = find(requests[i])) ours.push_back({i, p, p->comm, 0});
  return ours;
}

// One poll of each of ours, their results captured; true when all are done.
bool advance_all(std::vector<Ours>& ours) {
  bool all_done = true;
  for (Ours& o : ours) {
    all_done = advance(o.pending) && all_done;
    o.status = o.pending->status;
  }
  return all_done;
}

// Polls ours (and lets MPI progress its own) until `mpi_poll` says the call
// is satisfied; ours that outlive TUTTI_TIMEOUT end with a timeout.
template <typename MpiPoll>
int poll_until(std::vector<Ours>& ours, MpiPoll&& mpi_poll) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const bool all_ours_done = advance_all(ours);
    for (const Ours& o : ours)
      if (o.pending->complete_rc != MPI_SUCCESS) return raise_unfinished(o.pending);
    bool satisfied = false;
    const int rc = mpi_poll(satisfied);
    if (rc != MPI_SUCCESS || satisfied) return rc;
    if (!all_ours_done && timeout_seconds() > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
            timeout_seconds())
      for (Ours& o : ours) give_up(o.pending);
    sched_yield();
  }
}

// Raises the first failure of ours that MPI reported complete (where
// `finished(index)` says so) and marks it in its status.
template <typename Finished>
int report(const std::vector<Ours>& ours, int rc, MPI_Status* statuses, Finished&& finished) {
  for (const Ours& o : ours) {
    if (o.status == TUTTI_SUCCESS || !finished(o.index)) continue;
    const int code = raise_tutti_error(o.comm, o.status);
    if (statuses != MPI_STATUSES_IGNORE) statuses[o.index].MPI_ERROR = code;
    return statuses != MPI_STATUSES_IGNORE ? MPI_ERR_IN_STATUS : code;
  }
  return rc;
}

// -any: raises the failure of ours if it is the one MPI completed.
int report_one(const std::vector<Ours>& ours, int index, int rc) {
  for (const Ours& o : ours)
    if (o.index == index && o.status != TUTTI_SUCCESS) return raise_tutti_error(o.comm, o.status);
  return rc;
}

// -some: raises the first failure of ours among the `outcount` MPI completed
// and marks it in its status.
int report_some(const std::vector<Ours>& ours, int outcount, const int indices[],
                MPI_Status statuses[], int rc) {
  if (outcount == MPI_UNDEFINED) return rc;
  for (const Ours& o : ours) {
    if (o.status == TUTTI_SUCCESS) continue;
    for (int k = 0; k < outcount; ++k) {
      if (indices[k] != o.index) continue;
      const int code = raise_tutti_error(o.comm, o.status);
      if (statuses != MPI_STATUSES_IGNORE) statuses[k].MPI_ERROR = code;
      return statuses != MPI_STATUSES_IGNORE ? MPI_ERR_IN_STATUS : code;
    }
  }
  return rc;
}

}  // namespace

bool tutti_requests_outstanding() { return outstanding.load(std::memory_order_relaxed) > 0; }

int wrap_tutti_request(MPI_Comm comm, tutti_request_t started, std::shared_ptr<void> keep,
                       MPI_Request* request) {
  auto* p = new Pending{MPI_REQUEST_NULL, comm, started, TUTTI_SUCCESS, false, std::move(keep)};
  const int rc = PMPI_Grequest_start(query_pending, free_pending, cancel_pending, p, &p->request);
  if (rc != MPI_SUCCESS) {
    InsideTutti inside;
    tutti_wait(&p->tutti);  // cannot hand it out: finish it here rather than leak it
    delete p;
    return rc;
  }
  {
    std::lock_guard lock(table_mutex);
    table[p->request] = p;
  }
  outstanding.fetch_add(1);
  *request = p->request;
  return MPI_SUCCESS;
}

}  // namespace tutti::interpose

using namespace tutti::interpose;

extern "C" {

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  Pending* p = inside_tutti() || !request ? nullptr : find(*request);
  if (!p) return PMPI_Wait(request, status);
  finish(p);
  if (p->complete_rc != MPI_SUCCESS) return raise_unfinished(p);
  const MPI_Comm comm = p->comm;
  const int result = p->status;
  const int rc = PMPI_Wait(request, status);  // frees p
  return result == TUTTI_SUCCESS ? rc : raise_tutti_error(comm, result);
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  Pending* p = inside_tutti() || !request || !flag ? nullptr : find(*request);
  if (!p) return PMPI_Test(request, flag, status);
  if (!advance(p)) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  if (p->complete_rc != MPI_SUCCESS) return raise_unfinished(p);
  const MPI_Comm comm = p->comm;
  const int result = p->status;
  const int rc = PMPI_Test(request, flag, status);
  return result == TUTTI_SUCCESS ? rc : raise_tutti_error(comm, result);
}

int MPI_Request_free(MPI_Request* request) {
  Pending* p = inside_tutti() || !request ? nullptr : find(*request);
  if (p) finish(p);  // tutti needs the caller to progress it: finish it now
  return PMPI_Request_free(request);
}

int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  if (Pending* p = inside_tutti() ? nullptr : find(request)) advance(p);
  return PMPI_Request_get_status(request, flag, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (inside_tutti()) return PMPI_Waitall(count, requests, statuses);
  std::vector<Ours>& ours = ours_in(count, requests);
  if (ours.empty()) return PMPI_Waitall(count, requests, statuses);
  int rc = poll_until(ours, [&](bool& satisfied) {
    int flag = 0;
    const int r = PMPI_Testall(count, requests, &flag, statuses);
    satisfied = flag != 0;
    return r;
  });
  return report(ours, rc, statuses, [](int) { return true; });
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  if (inside_tutti()) return PMPI_Testall(count, requests, flag, statuses);
  std::vector<Ours>& ours = ours_in(count, requests);
  if (ours.empty()) return PMPI_Testall(count, requests, flag, statuses);
  advance_all(ours);
  const int rc = PMPI_Testall(count, requests, flag, statuses);
  return *flag ? report(ours, rc, statuses, [](int) { return true; }) : rc;
}

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (inside_tutti()) return PMPI_Waitany(count, requests, index, status);
  std::vector<Ours>& ours = ours_in(count, requests);
  if (ours.empty()) return PMPI_Waitany(count, requests, index, status);
  int rc = poll_until(ours, [&](bool& satisfied) {
    int flag = 0;
    const int r = PMPI_Testany(count, requests, index, &flag, status);
    satisfied = flag != 0;
    return r;
  });
  return report_one(ours, *index, rc);
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  if (inside_tutti()) return PMPI_Testany(count, requests, index, flag, status);
  std::vector<Ours>& ours = ours_in(count, requests);
  advance_all(ours);
  const int rc = PMPI_Testany(count, requests, index, flag, status);
  return *flag ? report_one(ours, *index, rc) : rc;
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  if (inside_tutti()) return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  std::vector<Ours>& ours = ours_in(incount, requests);
  if (ours.empty()) return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  int rc = poll_until(ours, [&](bool& satisfied) {
    const int r = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    satisfied = *outcount != 0;  // some completed, or MPI_UNDEFINED: none active
    return r;
  });
  return report_some(ours, *outcount, indices, statuses, rc);
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  if (inside_tutti()) return PMPI_Testsome(incount, requests, outcount, indices, statuses);
  std::vector<Ours>& ours = ours_in(incount, requests);
  advance_all(ours);
  const int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
  return report_some(ours, *outcount, indices, statuses, rc);
}

}  // extern "C"
