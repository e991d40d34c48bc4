// tutti_torch._C: what the Python package needs from C++: MPI start and end,
// and the process group's constructor.
#include <mpi.h>
#include <torch/python.h>

#include <string>
#include <vector>

#include "process_group.hpp"
#include <tutti/tutti.h>

namespace tutti_torch {
namespace {

bool we_initialized_mpi = false;

// Starts MPI if the program has not (threads: the process group's worker
// calls tutti, and through it MPI, beside the user's thread).
void ensure_mpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  TORCH_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS,
              "tutti: MPI_Init_thread failed");
  we_initialized_mpi = true;
}

int world_rank() {
  ensure_mpi();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  ensure_mpi();
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// Rank 0's string on every rank (the rendezvous address).
std::string bcast_string(const std::string& value) {
  ensure_mpi();
  int length = static_cast<int>(value.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string out = value;
  out.resize(static_cast<size_t>(length));
  MPI_Bcast(out.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  return out;
}

// tutti's C API called directly on a tensor, without the process group: what
// scripts/bench-torch.py compares the backend with, to measure what the
// binding adds. One communicator over MPI_COMM_WORLD, made on first use;
// call it from one thread only.
tutti_comm_t direct_comm = nullptr;

void direct_allreduce(const at::Tensor& t) {
  TORCH_CHECK(t.device().is_cpu() && t.is_contiguous() && t.scalar_type() == at::kFloat,
              "tutti: direct_allreduce takes a contiguous float32 CPU tensor");
  ensure_mpi();
  if (!direct_comm && tutti_comm_create(MPI_COMM_WORLD, &direct_comm) != TUTTI_SUCCESS)
    TORCH_CHECK(false, "tutti: tutti_comm_create failed: ", tutti_last_error());
  const int st = tutti_allreduce(TUTTI_IN_PLACE, t.data_ptr(), static_cast<size_t>(t.numel()),
                                 TUTTI_FLOAT32, TUTTI_SUM, direct_comm);
  TORCH_CHECK(st == TUTTI_SUCCESS, "tutti: allreduce failed: ", tutti_last_error());
}

// Shuts every process group down, then ends MPI if tutti_torch started it.
void finalize() {
  for (ProcessGroupTutti* group : ProcessGroupTutti::live()) group->shutdown();
  if (direct_comm) {
    tutti_comm_destroy(direct_comm);
    direct_comm = nullptr;
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (we_initialized_mpi && !finalized) MPI_Finalize();
}

c10::intrusive_ptr<c10d::ProcessGroup> create(int rank, int size, std::vector<int> global_ranks,
                                              double timeout_s) {
  ensure_mpi();
  return c10::make_intrusive<ProcessGroupTutti>(rank, size, global_ranks, timeout_s);
}

}  // namespace
}  // namespace tutti_torch

PYBIND11_MODULE(_C, m) {
  m.doc() = "tutti's torch.distributed backend (C++ part)";
  m.def("world_rank", &tutti_torch::world_rank);
  m.def("world_size", &tutti_torch::world_size);
  m.def("bcast_string", &tutti_torch::bcast_string);
  m.def("finalize", &tutti_torch::finalize);
  m.def("direct_allreduce", &tutti_torch::direct_allreduce,
        pybind11::call_guard<pybind11::gil_scoped_release>());
  m.def("create", &tutti_torch::create, pybind11::call_guard<pybind11::gil_scoped_release>());
}
