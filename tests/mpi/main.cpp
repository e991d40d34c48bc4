// Catch2 under mpirun: every rank runs the same test cases in the same
// order (the checks agree across ranks, so no rank leaves a collective
// sequence early); the exit code is failing if any rank failed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <mpi.h>

#include <cstdio>

#include "tutti/tutti.h"

namespace tutti::testing {
void set_world(tutti_comm_t comm);
}

int main(int argc, char** argv) {
  // Some tests run tutti on several threads (test_api.cpp [threads]).
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  tutti_comm_t comm = nullptr;
  if (tutti_comm_create(MPI_COMM_WORLD, &comm) != TUTTI_SUCCESS) {
    std::fprintf(stderr, "rank %d: tutti_comm_create failed: %s\n", rank, tutti_last_error());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  tutti::testing::set_world(comm);

  Catch::Session session;
  int rc = session.applyCommandLine(argc, argv);
  if (rc == 0) rc = session.run();

  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (tutti_comm_destroy(comm) != TUTTI_SUCCESS) worst = worst ? worst : 3;
  MPI_Finalize();
  return worst;
}
