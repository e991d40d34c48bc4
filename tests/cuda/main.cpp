// The GPU tests under mpirun. Only "this machine has no GPU" skips (every
// rank exits 77, which Meson reports as SKIPPED, never as passed), as does
// TUTTI_CUDA_STAGING=0 where the transport cannot move CUDA memory itself and
// tutti says so (TUTTI_ERR_UNSUPPORTED). A GPU the tests cannot use fails:
// a driver that refuses the runtime (older than the toolkit), GPUs that
// nvidia-smi lists while the runtime sees none, any other tutti_comm_create
// error. Otherwise like tests/mpi: every rank runs the same cases in the same
// order, and the exit code is 1 if any rank failed (never Catch2's count of
// failed assertions, which could read as 77).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda_harness.hpp"
#include "tutti/tutti.h"

namespace {

constexpr int kSkipped = 77;

int skip(int rank, const std::string& why) {
  if (rank == 0) std::printf("tutti-cuda-tests: SKIPPED: %s\n", why.c_str());
  MPI_Finalize();
  return kSkipped;
}

int fail(int rank, const std::string& why) {
  std::fprintf(stderr, "tutti-cuda-tests: rank %d: FAILED: %s\n", rank, why.c_str());
  MPI_Finalize();
  return 1;
}

// Whether nvidia-smi lists at least one GPU ("GPU 0: NVIDIA H100 ...").
bool nvidia_smi_lists_gpu() {
  FILE* p = popen("nvidia-smi -L 2>/dev/null", "r");
  if (!p) return false;
  char line[512];
  bool listed = false;
  while (std::fgets(line, sizeof line, p))
    if (std::strncmp(line, "GPU ", 4) == 0) listed = true;
  pclose(p);
  return listed;
}

// Whether an NVIDIA driver is installed at all (its user-space library).
bool driver_library_present() {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

std::string cuda_versions() {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  auto v = [](int x) { return std::to_string(x / 1000) + "." + std::to_string(x % 1000 / 10); };
  return "driver supports CUDA " + (driver ? v(driver) : std::string("(none)")) + ", runtime " +
         v(runtime);
}

enum class Gpu { Usable, Absent, Broken };

// Usable, absent (may skip), or present but unusable (must fail), with why.
Gpu probe_gpu(int& devices, std::string& why) {
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e == cudaSuccess && devices > 0) return Gpu::Usable;
  const bool no_device = e == cudaSuccess || e == cudaErrorNoDevice ||
                         (e == cudaErrorInsufficientDriver && !driver_library_present());
  why = e == cudaSuccess ? "the CUDA runtime sees 0 devices" : cudaGetErrorString(e);
  if (no_device && !nvidia_smi_lists_gpu()) return Gpu::Absent;
  why += " (" + cuda_versions() + ")";
  if (no_device) why = "nvidia-smi lists a GPU, but " + why;
  return Gpu::Broken;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  int devices = 0;
  std::string why;
  const Gpu gpu = probe_gpu(devices, why);
  int state = static_cast<int>(gpu), worst_state = 0;
  MPI_Allreduce(&state, &worst_state, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (gpu == Gpu::Broken) return fail(rank, why);
  if (worst_state == static_cast<int>(Gpu::Broken))
    return fail(rank, "another rank's GPU is unusable");
  if (gpu == Gpu::Absent) return skip(rank, "no CUDA device: " + why);
  if (worst_state == static_cast<int>(Gpu::Absent))
    return fail(rank, "some ranks have a GPU, others none");
  // Ranks of one node share its GPUs round-robin (several ranks per GPU is fine).
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  cudaSetDevice(local % devices);

  tutti_comm_t comm = nullptr;
  const int status = tutti_comm_create(MPI_COMM_WORLD, &comm);
  const std::string error = status == TUTTI_SUCCESS ? "" : tutti_last_error();
  // 0: created; 1: refused as unsupported under TUTTI_CUDA_STAGING=0; 2: failed.
  const char* staging = std::getenv("TUTTI_CUDA_STAGING");
  int outcome = status == TUTTI_SUCCESS ? 0
                : status == TUTTI_ERR_UNSUPPORTED && staging && std::string(staging) == "0" ? 1
                                                                                            : 2;
  int worst_outcome = 0;
  MPI_Allreduce(&outcome, &worst_outcome, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (worst_outcome != 0) {
    if (comm) tutti_comm_destroy(comm);
    if (outcome == 2) return fail(rank, "tutti_comm_create: " + error);
    if (worst_outcome == 2) return fail(rank, "tutti_comm_create failed on another rank");
    return skip(rank, "TUTTI_CUDA_STAGING=0 and this transport cannot move CUDA memory: " + error);
  }
  tutti::testing::set_world(comm);

  Catch::Session session;
  int rc = session.applyCommandLine(argc, argv);
  if (rc == 0) rc = session.run();

  int failed = rc != 0, any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (tutti_comm_destroy(comm) != TUTTI_SUCCESS) any_failed = 1;
  MPI_Finalize();
  return any_failed ? 1 : 0;
}
