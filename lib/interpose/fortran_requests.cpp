// The Fortran bindings of the functions that complete requests: MPI_Wait,
// MPI_Test and their -all/-any/-some forms, MPI_Request_free and
// MPI_Request_get_status. A request tutti runs completes only when this
// library's C functions drive it (requests.cpp); Open MPI's own Fortran
// bindings call PMPI_* and would never complete it. Each binding converts
// the Fortran requests, statuses, indices (1-based) and flags (LOGICAL) to
// C, calls the C function and converts back, as Open MPI's bindings do.
#include <mpi.h>

#include <vector>

#include "interpose/fortran.hpp"

using namespace tutti::interpose::fortran;

namespace {

// Fortran's .TRUE. as gfortran (which Open MPI's Fortran bindings here are
// built with) stores it in a default LOGICAL.
constexpr MPI_Fint kFortranTrue = 1;
MPI_Fint logical(int flag) { return flag ? kFortranTrue : 0; }

// Fortran's MPI_STATUS_SIZE: the MPI library sizes a Fortran status to hold
// its C one (6 integers in Open MPI, 5 in MPICH).
constexpr int kStatusSize = sizeof(MPI_Status) / sizeof(MPI_Fint);
static_assert(sizeof(MPI_Status) % sizeof(MPI_Fint) == 0);

// A C status where Fortran passed one, MPI_STATUS_IGNORE where it passed
// that; copied back to Fortran by `out`.
class OneStatus {
 public:
  explicit OneStatus(MPI_Fint* fortran) : fortran_(fortran), ignore_(is_status_ignore(fortran)) {}
  MPI_Status* c() { return ignore_ ? MPI_STATUS_IGNORE : &status_; }
  void out() {
    if (!ignore_) PMPI_Status_c2f(&status_, fortran_);
  }

 private:
  MPI_Fint* fortran_;
  bool ignore_;
  MPI_Status status_{};
};

// A Fortran request array as a C one (reused across calls), copied back by
// `out`: completed requests become MPI_REQUEST_NULL there too.
class Requests {
 public:
  Requests(int count, MPI_Fint* fortran) : fortran_(fortran), count_(count < 0 ? 0 : count) {
    thread_local std::vector<MPI_Request> scratch;
    scratch.resize(count_);
    for (int i = 0; i < count_; ++i) scratch[i] = PMPI_Request_f2c(fortran[i]);
    c_ = scratch.data();
  }
  MPI_Request* c() { return c_; }
  void out() {
    for (int i = 0; i < count_; ++i) fortran_[i] = PMPI_Request_c2f(c_[i]);
  }

 private:
  MPI_Fint* fortran_;
  int count_;
  MPI_Request* c_ = nullptr;
};

// A Fortran status array (MPI_STATUS_SIZE integers each) as a C one, or
// MPI_STATUSES_IGNORE; `out(n)` copies the first n back.
class Statuses {
 public:
  Statuses(int count, MPI_Fint* fortran) : fortran_(fortran), ignore_(is_statuses_ignore(fortran)) {
    thread_local std::vector<MPI_Status> scratch;
    if (!ignore_) scratch.assign(count < 0 ? 0 : count, MPI_Status{});
    c_ = ignore_ ? MPI_STATUSES_IGNORE : scratch.data();
  }
  MPI_Status* c() { return c_; }
  void out(int n) {
    if (ignore_) return;
    for (int i = 0; i < n; ++i) PMPI_Status_c2f(&c_[i], fortran_ + i * kStatusSize);
  }

 private:
  MPI_Fint* fortran_;
  bool ignore_;
  MPI_Status* c_ = nullptr;
};

// Where MPI reports the statuses of an -all/-some call: on success and on
// MPI_ERR_IN_STATUS (which marks the failed ones in them).
bool statuses_valid(int rc) { return rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS; }

// A C index (0-based, or MPI_UNDEFINED) as Fortran's (1-based).
MPI_Fint fortran_index(int index) { return index == MPI_UNDEFINED ? index : index + 1; }

// What an -some call hands back to Fortran: the requests, and where MPI
// reports them, how many completed, which (1-based) and their statuses.
void some_out(int rc, int completed, Requests& r, Statuses& s, MPI_Fint* outcount,
              MPI_Fint* indices) {
  r.out();
  if (!statuses_valid(rc)) return;
  *outcount = completed;
  if (completed == MPI_UNDEFINED) return;
  for (int k = 0; k < completed; ++k) indices[k] = fortran_index(indices[k]);
  s.out(completed);
}

}  // namespace

TUTTI_FORTRAN_NAMES(wait, WAIT, (MPI_Fint* request, MPI_Fint* status, MPI_Fint* ierr)) {
  MPI_Request r = PMPI_Request_f2c(*request);
  OneStatus s(status);
  const int rc = MPI_Wait(&r, s.c());
  if (rc == MPI_SUCCESS) {
    *request = PMPI_Request_c2f(r);
    s.out();
  }
  set(ierr, rc);
}

TUTTI_FORTRAN_AND_PROFILING_NAMES(test, TEST,
                                  (MPI_Fint* request, MPI_Fint* flag, MPI_Fint* status,
                                   MPI_Fint* ierr)) {
  MPI_Request r = PMPI_Request_f2c(*request);
  OneStatus s(status);
  int done = 0;
  const int rc = MPI_Test(&r, &done, s.c());
  if (rc == MPI_SUCCESS) {
    *request = PMPI_Request_c2f(r);
    *flag = logical(done);
    if (done) s.out();
  }
  set(ierr, rc);
}

TUTTI_FORTRAN_NAMES(waitall, WAITALL,
                    (MPI_Fint* count, MPI_Fint* requests, MPI_Fint* statuses, MPI_Fint* ierr)) {
  Requests r(*count, requests);
  Statuses s(*count, statuses);
  const int rc = MPI_Waitall(*count, r.c(), s.c());
  r.out();
  if (statuses_valid(rc)) s.out(*count);
  set(ierr, rc);
}

TUTTI_FORTRAN_AND_PROFILING_NAMES(testall, TESTALL,
                                  (MPI_Fint* count, MPI_Fint* requests, MPI_Fint* flag,
                                   MPI_Fint* statuses, MPI_Fint* ierr)) {
  Requests r(*count, requests);
  Statuses s(*count, statuses);
  int done = 0;
  const int rc = MPI_Testall(*count, r.c(), &done, s.c());
  r.out();
  if (statuses_valid(rc)) {
    *flag = logical(done);
    if (done) s.out(*count);
  }
  set(ierr, rc);
}

TUTTI_FORTRAN_NAMES(waitany, WAITANY,
                    (MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, MPI_Fint* status,
                     MPI_Fint* ierr)) {
  Requests r(*count, requests);
  OneStatus s(status);
  int which = MPI_UNDEFINED;
  const int rc = MPI_Waitany(*count, r.c(), &which, s.c());
  r.out();
  if (rc == MPI_SUCCESS) {
    *index = fortran_index(which);
    s.out();
  }
  set(ierr, rc);
}

TUTTI_FORTRAN_AND_PROFILING_NAMES(testany, TESTANY,
                                  (MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index,
                                   MPI_Fint* flag, MPI_Fint* status, MPI_Fint* ierr)) {
  Requests r(*count, requests);
  OneStatus s(status);
  int which = MPI_UNDEFINED;
  int done = 0;
  const int rc = MPI_Testany(*count, r.c(), &which, &done, s.c());
  r.out();
  if (rc == MPI_SUCCESS) {
    *index = fortran_index(which);
    *flag = logical(done);
    if (done) s.out();
  }
  set(ierr, rc);
}

TUTTI_FORTRAN_NAMES(waitsome, WAITSOME,
                    (MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices,
                     MPI_Fint* statuses, MPI_Fint* ierr)) {
  Requests r(*incount, requests);
  Statuses s(*incount, statuses);
  int completed = MPI_UNDEFINED;
  const int rc = MPI_Waitsome(*incount, r.c(), &completed, indices, s.c());
  some_out(rc, completed, r, s, outcount, indices);
  set(ierr, rc);
}

TUTTI_FORTRAN_AND_PROFILING_NAMES(testsome, TESTSOME,
                                  (MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount,
                                   MPI_Fint* indices, MPI_Fint* statuses, MPI_Fint* ierr)) {
  Requests r(*incount, requests);
  Statuses s(*incount, statuses);
  int completed = MPI_UNDEFINED;
  const int rc = MPI_Testsome(*incount, r.c(), &completed, indices, s.c());
  some_out(rc, completed, r, s, outcount, indices);
  set(ierr, rc);
}

TUTTI_FORTRAN_NAMES(request_free, REQUEST_FREE, (MPI_Fint* request, MPI_Fint* ierr)) {
  MPI_Request r = PMPI_Request_f2c(*request);
  const int rc = MPI_Request_free(&r);
  if (rc == MPI_SUCCESS) *request = PMPI_Request_c2f(r);
  set(ierr, rc);
}

TUTTI_FORTRAN_AND_PROFILING_NAMES(request_get_status, REQUEST_GET_STATUS,
                                  (MPI_Fint* request, MPI_Fint* flag, MPI_Fint* status,
                                   MPI_Fint* ierr)) {
  OneStatus s(status);
  int done = 0;
  const int rc = MPI_Request_get_status(PMPI_Request_f2c(*request), &done, s.c());
  if (rc == MPI_SUCCESS) {
    *flag = logical(done);
    if (done) s.out();
  }
  set(ierr, rc);
}
