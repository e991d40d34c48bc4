// An MPI-only program (no tutti): does the MPI library keep up when several
// threads per rank each run collectives on a communicator of their own?
// Each thread loops: a non-blocking collective (alltoall, allreduce or
// bcast of 256 KiB per rank) polled with MPI_Test and a short sleep between
// polls (as tutti's `mpi` algorithm and a sleeping wait do), then a
// blocking MPI_Allreduce of two longs (as tutti-bench --soak agrees on each
// call's outcome). It reports every wait over 5 s and exits 1 if there was
// one.
//
// Why it exists: tutti-bench --soak-threads 2 across emulated nodes timed
// out in tutti calls whose peers were stuck in MPI calls. This program
// shows the same stalls with no tutti in the process. They turned out to
// be the machine's, not Open MPI's: on the 2-vCPU Firecracker machines a
// timer sleep under load sometimes wakes a minute late, and a Python loop
// of 1 ms sleeps run beside this program slept 56 s exactly while its
// MPI_Allreduce stalled 56 s (docs/RELIABILITY.md,
// docs/perf/timer-stalls-2026-12-07.txt). Run it beside such a loop to
// tell the two apart on another machine:
//   tests/cluster/cluster.sh run 2x2 --timeout 120 -- build/tests/cluster/mpi-threads-probe 2 3000
//
// Usage: mpi-threads-probe [THREADS=2] [ITERATIONS=300] [SLEEP_US=200]
// SLEEP_US between polls: > 0 sleeps that long, 0 polls at once again, -1
// yields (sched_yield).
//
// Open MPI 4.1.4 (ob1, TCP between the nodes), 2 x 2 emulated nodes, 3000
// calls per thread (2026-12-07): 1 thread, sleeps of 200 us: 6.7 s, no
// stall; 2 threads, sleeps of 200 us: stalls of 12-35 s in 4 runs of 4 (also
// with btl_tcp_progress_thread=1, and after an MPI_Alltoall on the world had
// connected every pair), once with "failed to TCP connect" warnings; 2
// threads polling without a pause: 13.5 s, or yielding: 14.3 s, no stall;
// 2 threads, sleeps of 10 ms: no stall (1500 calls). One node (4 ranks,
// shared memory): no stall.
#include <mpi.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr double kStallSeconds = 5;
constexpr int kCount = 65536;  // floats per rank and call

// One thread's loop on `comm`; returns the number of stalls it saw.
int run_thread(MPI_Comm comm, int rank, int nranks, int thread, int iterations, int sleep_us) {
  std::vector<float> in(static_cast<size_t>(kCount) * nranks, 1.0f);
  std::vector<float> out(in.size());
  int stalls = 0;
  for (int i = 0; i < iterations; ++i) {
    MPI_Request request = MPI_REQUEST_NULL;
    const int kind = i % 3;
    int rc = MPI_SUCCESS;
    if (kind == 0)
      rc = MPI_Ialltoall(in.data(), kCount, MPI_FLOAT, out.data(), kCount, MPI_FLOAT, comm, &request);
    else if (kind == 1)
      rc = MPI_Iallreduce(in.data(), out.data(), kCount, MPI_FLOAT, MPI_SUM, comm, &request);
    else
      rc = MPI_Ibcast(in.data(), kCount, MPI_FLOAT, nranks - 1, comm, &request);
    if (rc != MPI_SUCCESS) {
      std::fprintf(stderr, "rank %d thread %d: call %d could not start\n", rank, thread, i);
      return stalls + 1;
    }
    const char* names[] = {"MPI_Ialltoall", "MPI_Iallreduce", "MPI_Ibcast"};
    const double started = seconds_now();
    bool reported = false;
    for (int done = 0; !done;) {
      if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return stalls + 1;
      if (!done && sleep_us < 0) sched_yield();
      if (!done && sleep_us > 0) {
        const timespec pause{0, sleep_us * 1000L};
        nanosleep(&pause, nullptr);
      }
      if (!done && !reported && seconds_now() - started > kStallSeconds) {
        std::fprintf(stderr, "rank %d thread %d: call %d (%s) still waits after %.0f s\n", rank,
                     thread, i, names[kind], kStallSeconds);
        reported = true;
        ++stalls;
      }
    }
    long outcome[2] = {1, i};
    const double agreed_from = seconds_now();
    if (MPI_Allreduce(MPI_IN_PLACE, outcome, 2, MPI_LONG, MPI_SUM, comm) != MPI_SUCCESS)
      return stalls + 1;
    const double took = seconds_now() - agreed_from;
    if (took > kStallSeconds) {
      std::fprintf(stderr, "rank %d thread %d: MPI_Allreduce after call %d took %.1f s\n", rank,
                   thread, i, took);
      ++stalls;
    }
  }
  return stalls;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 300;
  const int sleep_us = argc > 3 ? std::atoi(argv[3]) : 200;
  if (provided < MPI_THREAD_MULTIPLE || threads < 1 || iterations < 1) {
    if (rank == 0)
      std::fprintf(stderr, provided < MPI_THREAD_MULTIPLE ? "no MPI_THREAD_MULTIPLE\n"
                                                          : "usage: %s [THREADS] [ITERATIONS] [SLEEP_US]\n",
                   argv[0]);
    MPI_Finalize();
    return 2;
  }
  std::vector<MPI_Comm> comms(static_cast<size_t>(threads));
  for (MPI_Comm& comm : comms) MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const double started = seconds_now();
  std::atomic<int> stalls{0};
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t)
    running.emplace_back([&, t] {
      stalls += run_thread(comms[static_cast<size_t>(t)], rank, nranks, t, iterations, sleep_us);
    });
  for (std::thread& each : running) each.join();
  int total = stalls.load();
  MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("mpi-threads-probe: %d ranks x %d threads, %d calls each, %.1f s, %d stalls over %.0f s\n",
                nranks, threads, iterations, seconds_now() - started, total, kStallSeconds);
  for (MPI_Comm& comm : comms) MPI_Comm_free(&comm);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
