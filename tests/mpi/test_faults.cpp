// Faults in real jobs, each bounded in time: with TUTTI_CHECK=1 mismatched
// counts, collectives, roots, datatypes, ops and alltoallv counts give
// TUTTI_ERR_MISMATCH on every rank, naming the ranks and values; a rank that
// skips a collective makes the others time out (TUTTI_TIMEOUT), with or
// without the check, naming it where they can; tutti_comm_abort fails the
// operations of every rank; TUTTI_TRACE leaves each rank's last operations
// in a file; a rank that waits long for a late one sleeps rather than keep
// taking CPU (TUTTI_SLEEP_AFTER). (A rank killed mid-collective:
// tests/faults/dead_peer.sh.)
#include <catch2/catch.hpp>
#include <stdlib.h>

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/status.hpp"
#include "mpi_harness.hpp"

namespace tutti::testing {
namespace {

// A communicator made with extra environment variables (TUTTI_TIMEOUT 3 s
// unless given), which are restored after.
using EnvList = std::vector<std::pair<std::string, std::string>>;
struct FaultComm {
  tutti_comm_t comm = nullptr;
  explicit FaultComm(EnvList env = {{"TUTTI_CHECK", "1"}}) {
    env.emplace_back("TUTTI_TIMEOUT", "3");
    std::vector<std::pair<std::string, std::optional<std::string>>> saved;
    for (const auto& [name_, value] : env) {
      const std::string& name = name_;  // clang 14 lambdas cannot capture bindings
      if (std::any_of(saved.begin(), saved.end(), [&](const auto& s) { return s.first == name; }))
        continue;  // the first value given wins
      const char* old = getenv(name.c_str());
      saved.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      setenv(name.c_str(), value.c_str(), 1);
    }
    const int st = tutti_comm_create(MPI_COMM_WORLD, &comm);
    for (const auto& [name, old] : saved) {
      if (old) setenv(name.c_str(), old->c_str(), 1);
      else unsetenv(name.c_str());
    }
    REQUIRE(all_ranks(st == TUTTI_SUCCESS));
  }
  ~FaultComm() { tutti_comm_destroy(comm); }
};

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool has(const std::string& text, const std::string& piece) {
  return text.find(piece) != std::string::npos;
}

// This rank's TUTTI_TRACE file under `prefix` that mentions `marker` (the
// communicator's index in the name varies), or "" if none; with `remove`,
// deleted once read.
std::string trace_of_rank(const std::string& prefix, const std::string& marker, bool remove) {
  for (int k = 0; k < 64; ++k) {
    const std::string path = str(prefix, ".rank", world_rank(), ".comm", k);
    const std::string text = read_file(path);
    if (!has(text, marker)) continue;
    if (remove) std::remove(path.c_str());
    return text;
  }
  return "";
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The share of a core that the ranks other than 0 take while they wait
// 0.4 s in an allreduce for rank 0: the largest of their shares, on every
// rank.
double waiting_cpu_share(tutti_comm_t comm) {
  std::vector<float> buf(64, 1.0f);
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) usleep(400 * 1000);
  const double wall0 = MPI_Wtime(), cpu0 = thread_cpu_seconds();
  const int st = tutti_allreduce(TUTTI_IN_PLACE, buf.data(), 64, TUTTI_FLOAT32, TUTTI_SUM, comm);
  const double share = (thread_cpu_seconds() - cpu0) / (MPI_Wtime() - wall0);
  REQUIRE(all_ranks(st == TUTTI_SUCCESS && buf[0] == static_cast<float>(world_size())));
  double mine = world_rank() == 0 ? 0 : share, most = 0;
  MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return most;
}

}  // namespace

TEST_CASE("a wait without progress sleeps after TUTTI_SLEEP_AFTER", "[waiting]") {
  if (world_size() < 2) return;
  const char* transport = std::getenv("TUTTI_TRANSPORT");
  if (transport && std::string(transport) == "mpi") {
    // Its polls are MPI_Test: the wait yields instead (Comm::Patience), a
    // core's share among the waiters (0.67 each at 4 ranks on 2 cores).
    FaultComm c({{"TUTTI_SLEEP_AFTER", "1000"}, {"TUTTI_SPIN", "0"}});
    const double share = waiting_cpu_share(c.comm);
    INFO("a waiting rank took " << share << " of a core");
    if (world_size() <= 4) CHECK(share > 0.4);
    return;
  }
  {
    // Sleeping: 0.03-0.05 of a core here (a poll per 0.2 ms sleep), with
    // room for sanitizers. Yielding waiters share 2 cores: 0.67 of a core
    // each at 4 ranks, 0.29 at 8.
    FaultComm c({{"TUTTI_SLEEP_AFTER", "1000"}, {"TUTTI_SPIN", "0"}});
    const double share = waiting_cpu_share(c.comm);
    INFO("a waiting rank took " << share << " of a core");
    CHECK(share < 0.25);
  }
  if (world_size() == 2) {  // the control: without sleeping, a core's worth
    FaultComm c({{"TUTTI_SLEEP_AFTER", "0"}, {"TUTTI_SPIN", "0"}});
    const double share = waiting_cpu_share(c.comm);
    INFO("a waiting rank took " << share << " of a core");
    CHECK(share > 0.5);
  }
}

TEST_CASE("TUTTI_CHECK turns mismatched calls into TUTTI_ERR_MISMATCH on every rank", "[check]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  FaultComm c;
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

TEST_CASE("TUTTI_CHECK: a mismatched group is TUTTI_ERR_MISMATCH naming the call", "[check][group]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  FaultComm c;
  std::vector<float> a(64, 1.0f), b(64, 2.0f), ra(64), rb(64);
  tutti_comm_stats_t before{}, after{};
  REQUIRE(tutti_comm_stats(c.comm, &before) == TUTTI_SUCCESS);

  // A matching group runs, each call agreed on by itself (nothing fused).
  REQUIRE(tutti_group_start() == TUTTI_SUCCESS);
  REQUIRE(tutti_allreduce(a.data(), ra.data(), 64, TUTTI_FLOAT32, TUTTI_SUM, c.comm) == TUTTI_SUCCESS);
  REQUIRE(tutti_allreduce(b.data(), rb.data(), 64, TUTTI_FLOAT32, TUTTI_SUM, c.comm) == TUTTI_SUCCESS);
  int st = tutti_group_end();
  CHECK(all_ranks(st == TUTTI_SUCCESS && ra[63] == static_cast<float>(p) &&
                  rb[0] == static_cast<float>(2 * p)));
  REQUIRE(tutti_comm_stats(c.comm, &after) == TUTTI_SUCCESS);
  CHECK(after.grouped_calls - before.grouped_calls == 2);
  CHECK(after.fused_calls == before.fused_calls);

  // The second call of the group differs on the last rank.
  REQUIRE(tutti_group_start() == TUTTI_SUCCESS);
  REQUIRE(tutti_allreduce(a.data(), ra.data(), 64, TUTTI_FLOAT32, TUTTI_SUM, c.comm) == TUTTI_SUCCESS);
  REQUIRE(tutti_allreduce(b.data(), rb.data(), me == p - 1 ? 63 : 64, TUTTI_FLOAT32, TUTTI_SUM,
                          c.comm) == TUTTI_SUCCESS);
  st = tutti_group_end();
  const std::string e = tutti_last_error();
  INFO(e);
  CHECK(all_ranks(st == TUTTI_ERR_MISMATCH));
  CHECK(all_ranks(has(e, "count:") && has(e, str("63 on rank ", p - 1))));

  // The communicator still works.
  CHECK(all_ranks(tutti_allreduce(a.data(), ra.data(), 64, TUTTI_FLOAT32, TUTTI_SUM, c.comm) ==
                  TUTTI_SUCCESS && ra[0] == static_cast<float>(p)));
}

TEST_CASE("TUTTI_CHECK: a rank that skips a collective makes the others time out", "[check]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  FaultComm c;
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
  // Grouped calls on the failed communicator fail with the first cause, not
  // with one more "failed earlier: " per call (a soak's 30th read like a
  // stutter).
  if (me != skipper) {
    std::string e3;
    for (int k = 0; k < 3; ++k) {
      tutti_request_t req = nullptr;
      REQUIRE(tutti_group_start() == TUTTI_SUCCESS);
      const int started = tutti_ibarrier(c.comm, &req);
      const int ended = tutti_group_end();
      const int waited = started == TUTTI_SUCCESS && req ? tutti_wait(&req) : started;
      e3 = tutti_last_error();
      CHECK((ended == TUTTI_ERR_TRANSPORT || waited == TUTTI_ERR_TRANSPORT));
    }
    INFO(e3);
    size_t times = 0;
    for (size_t at = e3.find("failed earlier"); at != std::string::npos;
         at = e3.find("failed earlier", at + 1))
      ++times;
    CHECK(times == 1);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// The "mpi" algorithm runs the MPI library's own non-blocking collective,
// which can be neither cancelled nor freed while in flight (Open MPI aborts
// the job on MPI_Request_free, and crashes in later progress once the
// collective's communicator is freed). A timeout leaves it to MPI: the job
// goes on, later MPI calls and communicators work.
TEST_CASE("an MPI-library collective that times out is left to MPI, and the job goes on",
          "[faults]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  const int skipper = p - 1;
  // MPI may still write the receive buffer if the skipper ever came: it
  // outlives the test, as MPI requires of a collective's buffers.
  static std::vector<float> in(1000, 1.0f), out(1000);
  {
    FaultComm c(EnvList{{"TUTTI_CHECK", "0"}, {"TUTTI_TIMEOUT", "1"},
                        {"TUTTI_ALGO_ALLREDUCE", "mpi"}});
    if (me != skipper) {
      const int st = tutti_allreduce(in.data(), out.data(), in.size(), TUTTI_FLOAT32, TUTTI_SUM,
                                     c.comm);
      const std::string e = tutti_last_error();
      INFO(e);
      CHECK(st == TUTTI_ERR_TIMEOUT);
      CHECK(has(e, "(mpi)"));
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }  // destroyed with the collective still in flight on the others
  for (int k = 0; k < 3; ++k) MPI_Barrier(MPI_COMM_WORLD);
  FaultComm again(EnvList{{"TUTTI_CHECK", "0"}});
  std::vector<float> a(4096, 1.0f), b(4096);
  CHECK(all_ranks(tutti_allreduce(a.data(), b.data(), a.size(), TUTTI_FLOAT32, TUTTI_SUM,
                                  again.comm) == TUTTI_SUCCESS &&
                  b[4095] == static_cast<float>(p)));
}

TEST_CASE("TUTTI_CHECK: a non-blocking call returns at once while a rank is late", "[check]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  FaultComm c;
  const int late = p - 1;
  std::vector<float> in(64, 1.0f), out(64, 0.0f);
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == late) usleep(1500 * 1000);
  const double t0 = MPI_Wtime();
  tutti_request_t req = nullptr;
  const int started =
      tutti_iallreduce(in.data(), out.data(), 64, TUTTI_FLOAT32, TUTTI_SUM, c.comm, &req);
  const double start_s = MPI_Wtime() - t0;
  INFO(tutti_last_error() << ", the call took " << start_s << " s");
  // Before the fix, the early ranks' call itself waited for the late rank.
  CHECK(all_ranks(started == TUTTI_SUCCESS && req != nullptr && start_s < 0.5));
  const int waited = tutti_wait(&req);
  CHECK(all_ranks(waited == TUTTI_SUCCESS && out[63] == static_cast<float>(p)));
  // A wait's own limit is the one that counts: it can time out now.
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == late) usleep(1500 * 1000);
  req = nullptr;
  REQUIRE(tutti_iallreduce(in.data(), out.data(), 64, TUTTI_FLOAT32, TUTTI_SUM, c.comm, &req) ==
          TUTTI_SUCCESS);
  const double t1 = MPI_Wtime();
  const int st = me == late ? tutti_wait(&req) : tutti_wait_timeout(&req, 0.3);
  const double wait_s = MPI_Wtime() - t1;
  INFO(tutti_last_error() << ", waited " << wait_s << " s");
  CHECK(all_ranks(me == late || (st == TUTTI_ERR_TIMEOUT && wait_s < 1.2)));
  MPI_Barrier(MPI_COMM_WORLD);
}

// MPI's progress rule: a blocking call progresses the non-blocking ones in
// flight. Rank 0 starts an ibcast and makes a blocking barrier; the others
// wait for the ibcast before their barrier, and a large ibcast needs the
// root to go on writing after the first part. Under TUTTI_CHECK the
// barrier's agreement polled only itself, and the others waited for the
// rest of the bcast until they timed out.
TEST_CASE("TUTTI_CHECK: a blocking call's agreement progresses the calls in flight", "[check]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  FaultComm c;
  const size_t count = size_t{4} << 20;  // 16 MiB of int32: several rounds on every path
  std::vector<int32_t> data(count, me == 0 ? 7 : 0);
  tutti_request_t req = nullptr;
  int st = tutti_ibcast(data.data(), count, TUTTI_INT32, 0, c.comm, &req);
  if (me == 0) {
    if (st == TUTTI_SUCCESS) st = tutti_barrier(c.comm);
    if (st == TUTTI_SUCCESS) st = tutti_wait(&req);
  } else {
    if (st == TUTTI_SUCCESS) st = tutti_wait(&req);
    if (st == TUTTI_SUCCESS) st = tutti_barrier(c.comm);
  }
  INFO(tutti_last_error());
  CHECK(all_ranks(st == TUTTI_SUCCESS && data[count - 1] == 7));
}

// tutti copies a call's alltoallv arrays (as the group path always did):
// the caller may reuse them once the call has returned. Under TUTTI_CHECK a
// non-blocking call starts only after its agreement, which read the
// caller's arrays then: a mismatch naming counts nobody passed, or counts
// beyond the buffers. The last rank comes late, so that the agreement is
// still open when the others overwrite their arrays.
TEST_CASE("TUTTI_CHECK: a non-blocking alltoallv holds its counts once the call returned",
          "[check]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  FaultComm c;
  for (const char* algo : {"", "mpi"}) {
    INFO("forced: " << (*algo ? algo : "none"));
    REQUIRE(tutti_comm_force_algorithm(c.comm, "alltoallv", algo) == TUTTI_SUCCESS);
    // Rank q sends q + r + 1 elements to rank r, packed.
    std::vector<size_t> sc(p), sd(p), rc(p), rd(p);
    size_t sent = 0, received = 0;
    for (int q = 0; q < p; ++q) {
      sc[q] = static_cast<size_t>(me + q + 1), sd[q] = sent, sent += sc[q];
      rc[q] = static_cast<size_t>(q + me + 1), rd[q] = received, received += rc[q];
    }
    std::vector<int32_t> in(sent), out(received, -1);
    for (int q = 0; q < p; ++q)
      for (size_t k = 0; k < sc[q]; ++k) in[sd[q] + k] = me * 1000 + q;
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == p - 1) usleep(300 * 1000);
    tutti_request_t req = nullptr;
    const int st = tutti_ialltoallv(in.data(), sc.data(), sd.data(), out.data(), rc.data(),
                                    rd.data(), TUTTI_INT32, c.comm, &req);
    // Overwritten so that nothing agrees or fits any more.
    size_t junk = size_t{1} << 40;
    for (auto* v : {&sc, &sd, &rc, &rd}) std::fill(v->begin(), v->end(), junk++);
    const int waited = st == TUTTI_SUCCESS ? tutti_wait(&req) : st;
    INFO(tutti_last_error());
    bool right = waited == TUTTI_SUCCESS;
    for (int q = 0, at = 0; q < p && right; ++q)
      for (int k = 0; k <= q + me; ++k) right = right && out[at++] == q * 1000 + me;
    CHECK(all_ranks(right));
  }
  REQUIRE(tutti_comm_force_algorithm(c.comm, "alltoallv", nullptr) == TUTTI_SUCCESS);
}

TEST_CASE("TUTTI_CHECK: ibcast then a receive the other rank sends before its ibcast", "[check]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  FaultComm c;
  // Rank 0: ibcast, then receive from rank 1. Rank 1: send to rank 0, then
  // ibcast. Correct under MPI's rules; it deadlocked when the ibcast's
  // check blocked until every rank had called it.
  std::vector<int32_t> data(16, me == 0 ? 7 : 0);
  int32_t message = me == 1 ? 42 : 0;
  tutti_request_t req = nullptr;
  int st = TUTTI_SUCCESS;
  if (me == 0) {
    st = tutti_ibcast(data.data(), 16, TUTTI_INT32, 0, c.comm, &req);
    if (st == TUTTI_SUCCESS) st = tutti_recv(&message, 1, TUTTI_INT32, 1, 5, c.comm);
  } else if (me == 1) {
    st = tutti_send(&message, 1, TUTTI_INT32, 0, 5, c.comm);
    if (st == TUTTI_SUCCESS) st = tutti_ibcast(data.data(), 16, TUTTI_INT32, 0, c.comm, &req);
  } else {
    st = tutti_ibcast(data.data(), 16, TUTTI_INT32, 0, c.comm, &req);
  }
  if (st == TUTTI_SUCCESS) st = tutti_wait(&req);
  INFO(tutti_last_error());
  CHECK(all_ranks(st == TUTTI_SUCCESS && data[15] == 7 && (me != 0 || message == 42)));
  // A mismatch in a non-blocking call is reported by its wait.
  req = nullptr;
  st = tutti_ibcast(data.data(), me == 0 ? 8 : 16, TUTTI_INT32, 0, c.comm, &req);
  const int waited = st == TUTTI_SUCCESS ? tutti_wait(&req) : st;
  const std::string e = tutti_last_error();
  INFO(e);
  CHECK(all_ranks(st == TUTTI_SUCCESS && waited == TUTTI_ERR_MISMATCH && has(e, "count:")));
  // Non-blocking and blocking calls interleaved keep their order.
  std::vector<float> in(32, 1.0f), out_a(32), out_b(32);
  tutti_request_t a = nullptr, b = nullptr;
  REQUIRE(tutti_iallreduce(in.data(), out_a.data(), 32, TUTTI_FLOAT32, TUTTI_SUM, c.comm, &a) ==
          TUTTI_SUCCESS);
  REQUIRE(tutti_iallreduce(in.data(), out_b.data(), 0, TUTTI_FLOAT32, TUTTI_SUM, c.comm, &b) ==
          TUTTI_SUCCESS);
  CHECK(all_ranks(tutti_barrier(c.comm) == TUTTI_SUCCESS));
  CHECK(all_ranks(tutti_wait(&b) == TUTTI_SUCCESS && tutti_wait(&a) == TUTTI_SUCCESS &&
                  out_a[31] == static_cast<float>(p)));
}

}  // namespace tutti::testing

namespace tutti::testing {

TEST_CASE("without TUTTI_CHECK a skipped collective times out, naming the missing rank", "[faults]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  const std::string prefix = str("/tmp/tutti-trace-", getppid());
  std::string trace_path;
  {
    FaultComm c(EnvList{{"TUTTI_TRACE", prefix}});
    const int skipper = p - 1;
    std::vector<float> in(16, 1.0f), out(16);
    REQUIRE(all_ranks(tutti_allreduce(in.data(), out.data(), 16, TUTTI_FLOAT32, TUTTI_SUM,
                                      c.comm) == TUTTI_SUCCESS));
    int st = TUTTI_SUCCESS;
    std::string e;
    const double t0 = MPI_Wtime();
    if (me != skipper) {
      st = tutti_barrier(c.comm);
      e = tutti_last_error();
    }
    const double waited = MPI_Wtime() - t0;
    INFO(e);
    CHECK(all_ranks(me == skipper || (st == TUTTI_ERR_TIMEOUT && has(e, "barrier #1") &&
                                       has(e, "timed out after 3 s") && waited < 30)));
    // Each rank names whom it waits for; the skipper's neighbours name it.
    int named = has(e, str("still waiting for rank(s) ")) && has(e, std::to_string(skipper));
    MPI_Allreduce(MPI_IN_PLACE, &named, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    CHECK(named);
    // Written at the timeout, before any destroy: the file a user reads
    // while the job still hangs elsewhere.
    if (me != skipper) {
      const std::string text = trace_of_rank(prefix, "allreduce #0", false);
      INFO(text);
      CHECK(has(text, "rank " + std::to_string(me) + " of " + std::to_string(p)));
      CHECK(has(text, "done"));
      CHECK(has(text, "barrier #1"));
      CHECK(has(text, "failed: "));
    }
  }
  // Written again at destroy.
  const std::string text = trace_of_rank(prefix, "allreduce #0", true);
  INFO(text);
  CHECK(all_ranks(has(text, "rank " + std::to_string(me) + " of " + std::to_string(p)) &&
                  has(text, "done") && (me == p - 1 || has(text, "barrier #1"))));
}

// A rendezvous send that its peer never takes cannot be cancelled (UCX), so
// a timed-out call leaves one behind; destroying the communicator must still
// end (ScheduleRun::kCancelGraceSeconds), not wait for the send forever.
TEST_CASE("a large message its peer never takes cannot hang the destroy", "[faults]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  FaultComm c(EnvList{{"TUTTI_CHECK", "0"}, {"TUTTI_TIMEOUT", "2"}, {"TUTTI_ALGO_BCAST", "tree"}});
  const int skipper = p - 1;
  std::vector<char> data(4 << 20, 1);
  int st = TUTTI_SUCCESS;
  if (me != skipper) st = tutti_bcast(data.data(), data.size(), TUTTI_UINT8, 0, c.comm);
  INFO(tutti_last_error());
  // The skipper's parent times out. Across machines a rank whose sends all
  // left eagerly (below UCX's rendezvous threshold there) finishes its part:
  // the skipper's UCX progress thread takes them in.
  CHECK(all_ranks(me == skipper || st == TUTTI_ERR_TIMEOUT || st == TUTTI_SUCCESS));
  int timed_out = st == TUTTI_ERR_TIMEOUT;
  MPI_Allreduce(MPI_IN_PLACE, &timed_out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  CHECK((timed_out || ranks_on_this_node() < p));
  const double t0 = MPI_Wtime();
  CHECK(tutti_comm_destroy(c.comm) == TUTTI_SUCCESS);
  c.comm = nullptr;
  const double destroy_s = MPI_Wtime() - t0;
  INFO("destroy took " << destroy_s << " s");
  CHECK(all_ranks(destroy_s < 15));
}

// A blocking allreduce this small runs directly on the flags
// (engine/direct_call.hpp), with its own waiting loop: it must time out the same.
TEST_CASE("a small allreduce a rank skips times out on the others, naming it", "[faults]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  FaultComm c(EnvList{{"TUTTI_CHECK", "0"}});
  const int skipper = p - 1;
  std::vector<float> in(2, 1.0f), out(2);
  int st = TUTTI_SUCCESS;
  std::string e;
  const double t0 = MPI_Wtime();
  if (me != skipper) {
    st = tutti_allreduce(in.data(), out.data(), 2, TUTTI_FLOAT32, TUTTI_SUM, c.comm);
    e = tutti_last_error();
  }
  const double waited = MPI_Wtime() - t0;
  INFO(e);
  CHECK(all_ranks(me == skipper ||
                  (st == TUTTI_ERR_TIMEOUT && has(e, "allreduce #0 (shm) timed out after 3 s") &&
                   has(e, str("still waiting for rank(s) ", skipper)) && waited < 30)));
  // The communicator is failed from then on, at once.
  if (me != skipper)
    CHECK(tutti_allreduce(in.data(), out.data(), 2, TUTTI_FLOAT32, TUTTI_SUM, c.comm) ==
          TUTTI_ERR_TRANSPORT);
  MPI_Barrier(MPI_COMM_WORLD);
}

// An alltoallv of 3 int32s per pair on `comm` where `call` (else nothing):
// its status, the last error, and how long it took.
struct SmallAlltoallv {
  int status = TUTTI_SUCCESS;
  std::string error;
  double waited_s = 0;
};
SmallAlltoallv small_alltoallv(tutti_comm_t comm, bool call) {
  const int p = world_size(), me = world_rank();
  const std::vector<size_t> counts(static_cast<size_t>(p), 3);
  std::vector<size_t> displs(static_cast<size_t>(p));
  for (int q = 0; q < p; ++q) displs[static_cast<size_t>(q)] = 3 * static_cast<size_t>(q);
  std::vector<int32_t> in(3 * static_cast<size_t>(p), me), out(in.size());
  SmallAlltoallv r;
  const double t0 = MPI_Wtime();
  if (call) {
    r.status = tutti_alltoallv(in.data(), counts.data(), displs.data(), out.data(), counts.data(),
                               displs.data(), TUTTI_INT32, comm);
    r.error = tutti_last_error();
  }
  r.waited_s = MPI_Wtime() - t0;
  return r;
}

// alltoallv "hierarchical" exchanges its node's counts before its schedule
// (Comm::exchange_node_counts), with a waiting loop of its own: a rank that
// skips the call makes its node's other ranks time out there, naming it;
// the others time out in the schedule. On one node there is no exchange.
// The skipped call is the second, after one every rank made. (Forced, the
// algorithm needs no agreement on the size: base/agreed_size.hpp, next test.)
TEST_CASE("an alltoallv a neighbour skips times out in the exchange of counts, naming it",
          "[faults]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  FaultComm c(EnvList{{"TUTTI_CHECK", "0"}, {"TUTTI_ALGO_ALLTOALLV", "hierarchical"}});
  const int skipper = 1;
  MPI_Comm node;
  REQUIRE(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
          MPI_SUCCESS);
  int node_size = 0, skipper_here = me == skipper;
  MPI_Comm_size(node, &node_size);
  MPI_Allreduce(MPI_IN_PLACE, &skipper_here, 1, MPI_INT, MPI_LOR, node);
  MPI_Comm_free(&node);
  const bool spans = !all_ranks(node_size == p);
  REQUIRE(all_ranks(small_alltoallv(c.comm, true).status == TUTTI_SUCCESS));
  const SmallAlltoallv call = small_alltoallv(c.comm, me != skipper);
  const std::string& e = call.error;
  INFO(e);
  const bool in_exchange = spans && skipper_here;
  CHECK(all_ranks(
      me == skipper ||
      (call.status == TUTTI_ERR_TIMEOUT && has(e, "timed out after 3 s") && call.waited_s < 30 &&
       (in_exchange ? has(e, "alltoallv: the exchange of counts inside the node") &&
                          has(e, str("still waiting for rank(s) ", skipper))
                    : has(e, "alltoallv #") && has(e, " (hierarchical) timed out")))));
  MPI_Barrier(MPI_COMM_WORLD);
}

// Across nodes the first blocking alltoallv on host buffers (and some later
// ones) first agrees on its size with every rank (base/agreed_size.hpp): a
// rank that skips it makes the others time out there, naming alltoallv.
TEST_CASE("an alltoallv across nodes a rank skips times out in the agreement on its size",
          "[faults]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  FaultComm c(EnvList{{"TUTTI_CHECK", "0"}});
  if (all_ranks(ranks_on_this_node() == p)) return;  // one node: no agreement
  const int skipper = p - 1;
  const SmallAlltoallv call = small_alltoallv(c.comm, me != skipper);
  INFO(call.error);
  CHECK(all_ranks(me == skipper ||
                  (call.status == TUTTI_ERR_TIMEOUT && call.waited_s < 30 &&
                   has(call.error, "alltoallv: the ranks' agreement on its size") &&
                   has(call.error, "timed out after 3 s"))));
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("tutti_comm_abort fails the operations of every rank", "[faults]") {
  const int me = world_rank(), p = world_size();
  const std::string prefix = str("/tmp/tutti-abort-trace-", getppid());
  FaultComm c(EnvList{{"TUTTI_TIMEOUT", "60"}, {"TUTTI_TRACE", prefix}});
  std::vector<float> in(1000, 1.0f), out(1000);
  if (me == 0) {
    // The others are (or will be) waiting in their allreduce.
    usleep(200000);
    CHECK(tutti_comm_abort(c.comm) == TUTTI_SUCCESS);
    CHECK(tutti_comm_abort(c.comm) == TUTTI_SUCCESS);  // again: harmless
    const int st = tutti_allreduce(in.data(), out.data(), 1000, TUTTI_FLOAT32, TUTTI_SUM, c.comm);
    CHECK(st == TUTTI_ERR_TRANSPORT);
    CHECK(has(tutti_last_error(), "aborted by tutti_comm_abort on rank 0"));
  } else {
    const double t0 = MPI_Wtime();
    int st = tutti_allreduce(in.data(), out.data(), 1000, TUTTI_FLOAT32, TUTTI_SUM, c.comm);
    const std::string e = tutti_last_error();
    INFO(e);
    CHECK(st == TUTTI_ERR_TRANSPORT);
    CHECK(has(e, "rank 0 called tutti_comm_abort"));
    CHECK(MPI_Wtime() - t0 < 30);
    // Later operations fail at once, non-blocking ones included.
    tutti_request_t req = nullptr;
    st = tutti_ibarrier(c.comm, &req);
    CHECK(st == TUTTI_ERR_TRANSPORT);
  }
  // Every rank wrote its trace when the abort reached it, before destroy.
  const std::string text = trace_of_rank(prefix, "aborted", true);
  INFO(text);
  CHECK(all_ranks(has(text, "rank " + std::to_string(me) + " of " + std::to_string(p)) &&
                  (me != 0 || has(text, "aborted by tutti_comm_abort on rank 0")) &&
                  (me == 0 || has(text, "rank 0 called tutti_comm_abort"))));
  MPI_Barrier(MPI_COMM_WORLD);
}

// A watchdog thread aborts the call another thread is blocked in (as
// PyTorch's watchdog aborts a hung NCCL communicator): that call returns
// long before its timeout, here and, through the notice, on every rank.
// Before, tutti_comm_abort waited for the call to return: until it timed out.
TEST_CASE("tutti_comm_abort from another thread ends the call a thread is blocked in",
          "[faults][threads]") {
  const int me = world_rank();
  FaultComm c(EnvList{{"TUTTI_TIMEOUT", "60"}});
  int st = TUTTI_SUCCESS;
  double waited_s = 0;
  std::string error;
  std::thread caller([&] {  // every rank: a receive nobody answers
    const double t0 = MPI_Wtime();
    int32_t x = 0;
    st = tutti_recv(&x, 1, TUTTI_INT32, TUTTI_ANY_SOURCE, 4242, c.comm);
    waited_s = MPI_Wtime() - t0;
    if (st != TUTTI_SUCCESS) error = tutti_last_error();
  });
  int abort_st = TUTTI_SUCCESS;
  if (me == 0) {
    usleep(300000);  // the caller is (or will be) blocked in its receive
    abort_st = tutti_comm_abort(c.comm);
  }
  caller.join();
  INFO(error);
  CHECK(abort_st == TUTTI_SUCCESS);
  CHECK(all_ranks(st == TUTTI_ERR_TRANSPORT && waited_s < 30));
  CHECK(all_ranks(me == 0 ? has(error, "aborted by tutti_comm_abort on rank 0")
                          : has(error, "rank 0 called tutti_comm_abort")));
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace tutti::testing
