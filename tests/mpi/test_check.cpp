// TUTTI_CHECK=1 in real jobs: mismatched counts, collectives, roots and
// alltoallv counts give TUTTI_ERR_MISMATCH on every rank, naming the ranks
// and values; a rank that skips a collective makes the others time out
// (TUTTI_TIMEOUT) instead of hanging; matching calls run normally.
#include <catch2/catch.hpp>
#include <stdlib.h>

#include <string>
#include <vector>

#include "mpi_harness.hpp"
#include "status.hpp"

namespace tutti::testing {
namespace {

// A communicator made with TUTTI_CHECK=1 and a short timeout.
struct CheckedComm {
  tutti_comm_t comm = nullptr;
  CheckedComm() {
    const char* old = getenv("TUTTI_TIMEOUT");
    const std::string old_timeout = old ? old : "";
    setenv("TUTTI_CHECK", "1", 1);
    setenv("TUTTI_TIMEOUT", "3", 1);
    const int st = tutti_comm_create(MPI_COMM_WORLD, &comm);
    unsetenv("TUTTI_CHECK");
    if (old) setenv("TUTTI_TIMEOUT", old_timeout.c_str(), 1);
    else unsetenv("TUTTI_TIMEOUT");
    REQUIRE(all_ranks(st == TUTTI_SUCCESS));
  }
  ~CheckedComm() { tutti_comm_destroy(comm); }
};

bool has(const std::string& text, const std::string& piece) {
  return text.find(piece) != std::string::npos;
}

}  // namespace

TEST_CASE("TUTTI_CHECK turns mismatched calls into TUTTI_ERR_MISMATCH on every rank", "[check]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  CheckedComm c;
  std::vector<float> in(1000, 1.0f), out(1000 * static_cast<size_t>(p));

  // Matching calls run (and zero-count calls are checked too).
  CHECK(all_ranks(tutti_allreduce(in.data(), out.data(), 100, TUTTI_FLOAT32, TUTTI_SUM, c.comm) ==
                  TUTTI_SUCCESS && out[99] == static_cast<float>(p)));
  CHECK(all_ranks(tutti_allreduce(in.data(), out.data(), 0, TUTTI_FLOAT32, TUTTI_SUM, c.comm) ==
                  TUTTI_SUCCESS));

  // Counts: the last rank passes one element fewer (a zero count on rank 0).
  int st = tutti_allreduce(in.data(), out.data(), me == p - 1 ? 99 : (me == 0 ? 0 : 100),
                           TUTTI_FLOAT32, TUTTI_SUM, c.comm);
  std::string e = tutti_last_error();
  INFO(e);
  CHECK(all_ranks(st == TUTTI_ERR_MISMATCH));
  CHECK(all_ranks(has(e, "count:") && has(e, str("99 on rank ", p - 1)) && has(e, "0 on rank 0")));

  // Collectives: rank 0 broadcasts while the others allreduce.
  st = me == 0 ? tutti_bcast(in.data(), 10, TUTTI_FLOAT32, 0, c.comm)
               : tutti_allreduce(in.data(), out.data(), 10, TUTTI_FLOAT32, TUTTI_SUM, c.comm);
  e = tutti_last_error();
  CHECK(all_ranks(st == TUTTI_ERR_MISMATCH));
  CHECK(all_ranks(has(e, "collective:") && has(e, "bcast on rank 0")));

  // Roots.
  st = tutti_reduce(in.data(), out.data(), 10, TUTTI_FLOAT32, TUTTI_SUM, me == 1 ? 0 : 1, c.comm);
  e = tutti_last_error();
  CHECK(all_ranks(st == TUTTI_ERR_MISMATCH));
  CHECK(all_ranks(has(e, "root:") && has(e, "0 on rank 1")));

  // Datatypes and ops.
  st = tutti_allreduce(in.data(), out.data(), 10, me == 0 ? TUTTI_INT32 : TUTTI_FLOAT32,
                       me == 1 ? TUTTI_MAX : TUTTI_SUM, c.comm);
  e = tutti_last_error();
  CHECK(all_ranks(st == TUTTI_ERR_MISMATCH));
  CHECK(all_ranks(has(e, "datatype: int32 on rank 0") && has(e, "op:") && has(e, "max on rank 1")));

  // alltoallv: rank 0 expects one element more from rank 1 than it sends.
  std::vector<size_t> counts(static_cast<size_t>(p), 2), recv_counts = counts, displs(counts.size());
  for (size_t i = 0; i < displs.size(); ++i) displs[i] = 2 * i;
  if (me == 0) recv_counts[1] = 3;
  std::vector<size_t> rdispls(counts.size());
  for (size_t i = 1; i < rdispls.size(); ++i) rdispls[i] = rdispls[i - 1] + recv_counts[i - 1];
  st = tutti_alltoallv(in.data(), counts.data(), displs.data(), out.data(), recv_counts.data(),
                       rdispls.data(), TUTTI_FLOAT32, c.comm);
  e = tutti_last_error();
  CHECK(all_ranks(st == TUTTI_ERR_MISMATCH));
  CHECK(all_ranks(has(e, "rank 0 expects 3 elements from rank 1, which sends it 2")));

  // After all that, the communicator still works.
  CHECK(all_ranks(tutti_allreduce(in.data(), out.data(), 100, TUTTI_FLOAT32, TUTTI_SUM, c.comm) ==
                  TUTTI_SUCCESS && out[0] == static_cast<float>(p)));
}

TEST_CASE("TUTTI_CHECK: a rank that skips a collective makes the others time out", "[check]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  CheckedComm c;
  const int skipper = p - 1;
  const double t0 = MPI_Wtime();
  int st = TUTTI_SUCCESS;
  if (me != skipper) st = tutti_barrier(c.comm);
  const std::string e = tutti_last_error();
  const double waited = MPI_Wtime() - t0;
  INFO(e);
  CHECK(all_ranks(me == skipper || (st == TUTTI_ERR_TIMEOUT && has(e, "never made") &&
                                     waited >= 2.5 && waited < 30)));
  // The skipper arrives late: its check completes the others' (abandoned)
  // agreement, and its barrier times out alone. The others' communicator is
  // marked failed: later calls fail at once.
  if (me == skipper) CHECK(tutti_barrier(c.comm) == TUTTI_ERR_TIMEOUT);
  else CHECK(tutti_barrier(c.comm) == TUTTI_ERR_TRANSPORT);
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace tutti::testing
