// A rank killed with SIGKILL in the middle of allreduces: the survivors must
// return an error within TUTTI_TIMEOUT instead of hanging. Run by
// dead_peer.sh under `mpirun --enable-recovery` (otherwise mpirun kills the
// whole job when one rank dies). Prints one line per survivor:
//   survivor <rank>: <status name> after <seconds> s: <tutti_last_error>
// and leaves without tutti_comm_destroy or MPI_Finalize, which would wait
// for the dead rank.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "tutti/tutti.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  tutti_comm_t comm = nullptr;
  if (tutti_comm_create(MPI_COMM_WORLD, &comm) != TUTTI_SUCCESS) {
    std::printf("tutti_comm_create failed: %s\n", tutti_last_error());
    return 1;
  }
  int rank = 0, size = 1;
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &size);
  const int victim = size - 1;
  if (rank == victim) {
    // Dies while the allreduces below are in full flow.
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      raise(SIGKILL);
    }).detach();
  }
  std::vector<float> in(1 << 20, 1.0f), out(in.size());
  const auto start = std::chrono::steady_clock::now();
  int st = TUTTI_SUCCESS;
  for (long i = 0; st == TUTTI_SUCCESS; ++i) {
    st = tutti_allreduce(in.data(), out.data(), in.size(), TUTTI_FLOAT32, TUTTI_SUM, comm);
    if (st == TUTTI_SUCCESS && out[0] != static_cast<float>(size)) {
      std::printf("survivor %d: wrong result %g at iteration %ld\n", rank, out[0], i);
      std::fflush(stdout);
      _exit(1);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("survivor %d: %s after %.1f s: %s\n", rank, tutti_strerror(st), seconds,
              tutti_last_error());
  std::fflush(stdout);
  _exit(0);
}
