// The GPU tests under mpirun. Without a usable CUDA device every rank exits
// 77, which Meson reports as SKIPPED (never as passed); likewise where
// TUTTI_CUDA_STAGING=0 asks for a transport that moves CUDA memory itself
// and this one cannot. Otherwise like tests/mpi: every rank runs the same
// cases in the same order, and the exit code fails if any rank failed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>

#include "cuda_harness.hpp"
#include "tutti/tutti.h"

namespace {

constexpr int kSkipped = 77;

int skip(int rank, const char* why) {
  if (rank == 0) std::printf("tutti-cuda-tests: SKIPPED: %s\n", why);
  MPI_Finalize();
  return kSkipped;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  int have = e == cudaSuccess && devices > 0, everywhere = 0;
  MPI_Allreduce(&have, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!everywhere)
    return skip(rank, e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device on some rank");
  // Ranks of one node share its GPUs round-robin (several ranks per GPU is fine).
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  cudaSetDevice(local % devices);

  tutti_comm_t comm = nullptr;
  int created = tutti_comm_create(MPI_COMM_WORLD, &comm) == TUTTI_SUCCESS, all_created = 0;
  MPI_Allreduce(&created, &all_created, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_created) {
    std::fprintf(stderr, "rank %d: tutti_comm_create: %s\n", rank, tutti_last_error());
    if (comm) tutti_comm_destroy(comm);
    return skip(rank, "tutti_comm_create failed (TUTTI_CUDA_STAGING=0 without a CUDA-capable transport?)");
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
